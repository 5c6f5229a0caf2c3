"""Evaluate and predict with a trained MMBERT: figures overall and per cloaking op, probabilities and
per-layer routing weights per post."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from cloak.common.progress import progress_bar

from cloak.common.io import AtomicWriter, batched, dump_record, read_records

from .metrics import classification_metrics
from .modeling import MMBertForSequenceClassification


@torch.no_grad()
def predict(model: MMBertForSequenceClassification, batches, modalities=None, expert=None,
            routing: bool = False, progress: bool | None = None) -> dict:
    """Probabilities (n, labels) over batches, and optionally each example's mean routing weight per
    layer and expert over its real tokens (n, layers, experts)."""
    model.eval()
    probs, weights = [], []
    for batch in progress_bar(batches, desc="predict", unit="batch", progress=progress):
        batch = {k: v.to(model.device) for k, v in batch.items() if k != "labels"}
        out = model(**batch, modalities=modalities, expert=expert)
        probs.append(torch.softmax(out.logits.float(), -1).cpu())
        if routing:
            keep = out.attention_mask.unsqueeze(-1)
            per_layer = [(w * keep).sum(1) / keep.sum(1) for w in out.routing]
            weights.append(torch.stack(per_layer, 1).cpu())
    result = {"probs": torch.cat(probs).numpy()}
    if routing:
        result["routing"] = torch.cat(weights).numpy()
    return result


def op_groups(record: dict) -> list[str]:
    """What a record is grouped under: each op that edited it, ``unchanged`` for a cloaked record with
    no edit, ``clean`` for a record that never went through ``cloak``."""
    if "cloak" not in record:
        return ["clean"]
    ops = sorted({e["op"] for e in record["cloak"].get("edits", [])})
    return ops or ["unchanged"]


def infer(model, featurizer, records: Sequence[dict], batch_size: int = 32, routing: bool = False,
          progress: bool | None = None) -> dict:
    """``predict`` over records: {"probs": (n, labels)[, "routing": (n, layers, experts)]}."""
    examples = featurizer.encode(records, progress=progress)
    batches = [featurizer.collate(examples[i:i + batch_size]) for i in range(0, len(examples), batch_size)]
    return predict(model, batches, routing=routing, progress=progress)


def evaluate_records(model, featurizer, records: Sequence[dict], batch_size: int = 32,
                     progress: bool | None = None) -> dict:
    """Accuracy and macro P/R/F1 overall and per op group (see :func:`op_groups`)."""
    labels = np.array([r["label"] for r in records])
    predictions = infer(model, featurizer, records, batch_size, progress=progress)["probs"].argmax(1)
    groups: dict[str, list[int]] = {}
    for i, record in enumerate(records):
        for group in op_groups(record):
            groups.setdefault(group, []).append(i)
    found, counts = np.unique(predictions, return_counts=True)
    return {"overall": classification_metrics(labels, predictions),
            "predicted": {str(k): int(c) for k, c in zip(found.tolist(), counts.tolist())},
            "by_op": {g: classification_metrics(labels[rows], predictions[rows]) for g, rows in sorted(groups.items())}}


def predict_file(model, featurizer, in_path: str, out_path: str, batch_size: int = 32, routing: bool = True,
                 progress: bool | None = None) -> int:
    """Each input record plus ``mmbert: {"probs", "label"[, "routing": [[w per expert] per layer]]}``,
    streamed in blocks and written atomically; returns the number of records."""
    experts = model.config.modalities
    count = 0
    with AtomicWriter(out_path) as out:
        for block in batched((r for _, r in read_records(in_path, unique_ids=True)), 512):
            result = infer(model, featurizer, block, batch_size, routing, progress)
            for i, record in enumerate(block):
                probs = result["probs"][i]
                entry = {"probs": [round(float(p), 6) for p in probs], "label": int(probs.argmax())}
                if routing:
                    entry["experts"] = experts
                    entry["routing"] = [[round(float(w), 4) for w in layer] for layer in result["routing"][i]]
                out.write(dump_record({**record, "mmbert": entry}))
                count += 1
    return count


