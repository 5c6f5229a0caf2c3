"""Why MMBERT does or does not beat its text-only twin: the figure behind each possible reason.

Reads a finished (or part-finished) run of ``bench.mmbert_cold`` (its ``--work`` folder) and measures:

1. ``speech_probe``: what the speech alone can tell, and whether a cloak moves it. A logistic regression on
   each post's pooled Whisper frames (mean and max over time, standardised), fitted on the run's training
   records, scored on the dev records and on the test posts clean and under each op. A homophone leaves the
   audio as it was, so its drop should be near zero.
2. ``stage2``: each stage-2 epoch's dev macro-F1 per expert, from the stage's log, for every runs folder
   given: an expert at 0.333 answers one label for every post and has learnt nothing.
3. ``models``: for each trained stage (``--stages``): the spread of its frozen glyph table (stage 2 on;
   see :func:`glyph_table_spread`), and per test set: the macro-F1 of the model's own
   speech-only and vision-only paths (its shared head on [CLS] + that modality's tokens through that
   modality's expert), and how near the aligners put a post's speech and glyph tokens to the clean text:
   the post's pooled encoding from speech alone, from glyphs alone and from its (cloaked) text, each
   against the clean text's encoding of the same post: mean cosine after centring each set on its mean
   (BERT encodings all point one way: uncentred cosines are all near 1), and retrieval@1, the share of
   posts whose nearest clean post (of the test posts) is their own.
4. ``routing``: stage 3's mean routing weight per expert by op, from ``bench.mmbert_cold``'s
   ``routing.json`` (``--routing``), and each op's shift from the clean posts; a cloak edits a few tokens
   of a post, so also the weights of the text and glyph tokens it edited against the clean posts' text and
   glyph tokens (``edited_tokens``).
5. ``knockout``: for a stage-3 model, whether the mixture uses each modality: macro-F1 on each test set
   with every modality, and with one of them left out of the input (the router free, as trained; without
   text the head still reads [CLS]), and each op's drop in each case. A mixture that leans on the speech
   under homophones loses more of its homophone robustness without it than without the glyphs.

Run from the repository root after ``bench.mmbert_cold`` (the same ``--work``)::

    .venv/bin/python -m bench.mmbert_diagnose --work runs/mmbert-e5 --runs runs_5000 \\
        --routing bench/results/mmbert_e5_routing_seed0/routing.json --out bench/results/mmbert_e5_diagnosis.json
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from bench.common import RESULTS, WORK, machine_info, parser, read_json, write_result
from bench.mmbert_data import TEST_SETS

MODALITY_TOKENS = {"speech": 1, "vision": 2}  # token type ids (mmbert.modeling)


def records(path: Path) -> list[dict]:
    from cloak.common.io import read_records

    return [r for _, r in read_records(str(path))]


def run_files(work: Path, runs: str) -> dict[str, Path]:
    """The run's training, dev and test record files (as ``bench.mmbert_cold`` wrote them)."""
    posts = runs.split("_")[1]
    dev = sorted(work.glob("dev_*.jsonl"))[-1]
    return {"train": work / f"train_{posts}.jsonl", "dev": dev,
            **{f"test_{name}": work / f"test_{name}.jsonl" for name in TEST_SETS}}


def macro_f1(labels, predicted) -> float:
    from sklearn.metrics import f1_score

    return round(float(f1_score(labels, predicted, average="macro")), 4)


def speech_probe(files: dict[str, Path], speech) -> dict:
    """Logistic regression on pooled speech frames: dev and test macro-F1, and each op's drop."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    def pooled(recs: list[dict]) -> np.ndarray:
        frames = speech.features([r["text"] for r in recs], progress=False)
        return np.stack([np.concatenate([f.astype(np.float32).mean(0), f.astype(np.float32).max(0)]) for f in frames])

    train = records(files["train"])
    features = pooled(train)
    scaler = StandardScaler().fit(features)
    probe = LogisticRegression(C=0.1, max_iter=2000).fit(scaler.transform(features), [r["label"] for r in train])
    out = {"train_records": len(train), "features": "Whisper frames' mean and max over time, standardised"}
    for name in ("dev", *(f"test_{s}" for s in TEST_SETS)):
        recs = records(files[name])
        out[name] = macro_f1([r["label"] for r in recs], probe.predict(scaler.transform(pooled(recs))))
    for op in TEST_SETS[1:]:
        out[f"drop_{op}"] = round(out["test_clean"] - out[f"test_{op}"], 4)
    return out


def stage2_logs(work: Path, runs: list[str]) -> dict:
    """Each stage-2 epoch's dev macro-F1 per expert and learning rates, per runs folder."""
    out = {}
    for name in runs:
        log = work / name / "mmbert_stage2" / "log.json"
        if log.exists():
            out[name] = [{k: e[k] for k in e if k.startswith("dev_f1_") or k in ("epoch", "lr")}
                         for e in json.loads(log.read_text())]
    return out


def encodings(model, featurizer, recs: list[dict], modality: str, batch_size: int = 100):
    """(pooled encodings (n, hidden), predicted labels (n,)) of ``recs`` through ``modality`` alone and its
    expert; pooled over that modality's tokens (text: every real token)."""
    import torch

    expert = model.config.modalities.index(modality)
    examples = featurizer.encode(recs, progress=False)
    pooled, predicted = [], []
    model.eval()
    with torch.no_grad():
        for i in range(0, len(examples), batch_size):
            batch = featurizer.collate(examples[i:i + batch_size])
            out = model(**batch, modalities=(modality,), expert=expert)
            keep = out.attention_mask * (out.token_types == MODALITY_TOKENS[modality] if modality != "text" else 1)
            keep = keep.unsqueeze(-1)
            pooled.append((out.last_hidden_state * keep).sum(1) / keep.sum(1).clamp(min=1.0))
            predicted.append(out.logits.argmax(-1))
    return torch.cat(pooled).numpy(), torch.cat(predicted).numpy()


def nearness(encoded: np.ndarray, clean: np.ndarray) -> dict:
    """Centred cosine of each post's encoding with its clean text's, and retrieval@1 among the clean posts."""
    a, b = encoded - encoded.mean(0), clean - clean.mean(0)
    a /= np.linalg.norm(a, axis=1, keepdims=True).clip(1e-9)
    b /= np.linalg.norm(b, axis=1, keepdims=True).clip(1e-9)
    similarity = a @ b.T
    return {"centred_cosine": round(float(np.diag(similarity).mean()), 4),
            "retrieval_at_1": round(float((similarity.argmax(1) == np.arange(len(a))).mean()), 4)}


def glyph_table_spread(table: np.ndarray, sample: int = 5000) -> dict:
    """How much the frozen glyph features differ between vocabulary entries: the share of the rows'
    mean square that varies across them (0: one vector for every glyph), and the mean |cosine| between
    centred rows of a seeded sample (near 1: all glyphs vary along one direction)."""
    rows = table[np.abs(table).sum(1) > 0]
    share = rows.var(0).sum() / np.square(rows).mean(0).sum()
    picked = rows[np.random.default_rng(0).choice(len(rows), min(sample, len(rows)), replace=False)]
    centred = picked - rows.mean(0)
    centred /= np.linalg.norm(centred, axis=1, keepdims=True).clip(1e-9)
    return {"entries": len(rows), "varying_share": round(float(share), 4),
            "mean_abs_cosine_centred": round(float(np.abs(centred @ centred.T).mean()), 4)}


def model_figures(model_dir: Path, files: dict[str, Path], features: dict) -> dict:
    """Per test set: each modality path's macro-F1 and its nearness to the clean text; the glyph
    table's spread once the glyph CNN is frozen into one."""
    from mmbert.loading import load_model

    model, featurizer = load_model(str(model_dir), features)
    out = {}
    vision = getattr(model.mmbert, "vision_encoder", None)
    if vision is not None and model.config.vision_encoder == "table":
        out["glyph_table"] = glyph_table_spread(vision.features.numpy())
    clean_recs = records(files["test_clean"])
    clean, _ = encodings(model, featurizer, clean_recs, "text")
    for name in TEST_SETS:
        recs = records(files[f"test_{name}"])
        labels = [r["label"] for r in recs]
        out[name] = {}
        for modality in model.config.modalities:
            encoded, predicted = encodings(model, featurizer, recs, modality)
            out[name][modality] = {"f1_alone": macro_f1(labels, predicted), **nearness(encoded, clean)}
    if model.config.stage == 3:
        out["knockout"] = knockout(model, featurizer, files)
    return out


def knockout(model, featurizer, files: dict[str, Path]) -> dict:
    """Per test set, macro-F1 of the whole model and of the model with each modality left out of the
    input; then per op and input, the drop from the clean posts."""
    from mmbert.inference import predict

    inputs = {"all": None, **{f"without_{m}": tuple(x for x in model.config.modalities if x != m)
                              for m in model.config.modalities}}
    out: dict = {name: {} for name in TEST_SETS}
    for name in TEST_SETS:
        recs = records(files[f"test_{name}"])
        batches = [featurizer.collate(featurizer.encode(recs[i:i + 100], progress=False))
                   for i in range(0, len(recs), 100)]
        labels = [r["label"] for r in recs]
        for key, modalities in inputs.items():
            out[name][key] = macro_f1(labels, predict(model, batches, modalities, progress=False)["probs"].argmax(1))
    out["drop"] = {op: {key: round(out["clean"][key] - out[op][key], 4) for key in inputs} for op in TEST_SETS[1:]}
    return out


def routing_shift(path: Path) -> dict:
    """Layer-mean routing weight per expert by op, and each op's shift from the clean posts; with the
    table's weights by kind of token (``mmbert.routing.TOKEN_KINDS``), also ``edited_tokens``: per op, the
    text and glyph tokens the cloak edited, against all the clean posts' text and glyph tokens."""
    table = read_json(path)
    experts = table["experts"]

    def named(weights) -> dict:
        return dict(zip(experts, np.round(weights, 4).tolist()))

    mean = {g: np.array(v["weights"]).mean(0) for g, v in table["groups"].items()}
    clean = mean.get("clean")
    shift = {g: named(w - clean) for g, w in mean.items() if clean is not None and g not in ("clean", "all")}
    result = {"source": str(path), "mean_weight": {g: named(w) for g, w in mean.items()}, "shift_from_clean": shift}
    tokens = table.get("tokens", {})
    if "clean" in tokens:
        result["edited_tokens"] = {
            g: {kind: {"n": by_kind[f"{kind}_edited"]["n"], "mean_weight": named(edited),
                       "shift_from_clean": named(edited - np.array(tokens["clean"][kind]["weights"]).mean(0))}
                for kind in ("text", "vision") if by_kind.get(f"{kind}_edited", {}).get("weights")
                for edited in [np.array(by_kind[f"{kind}_edited"]["weights"]).mean(0)]}
            for g, by_kind in tokens.items() if g not in ("clean", "all", "unchanged")}
    return result


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "mmbert_diagnosis.json", work=WORK / "mmbert")
    ap.add_argument("--runs", nargs="+", default=["runs_2000"],
                    help="runs folders in --work: the first is measured, stage 2 is read from all")
    ap.add_argument("--stages", nargs="+", type=int, default=[1, 2, 3], help="stages whose models to measure")
    ap.add_argument("--routing", type=Path, default=None, help="bench.mmbert_cold's routing.json of the first runs")
    args = ap.parse_args()
    from mmbert.loading import speech_features

    folder = args.work / args.runs[0]
    if not (folder / "mmbert_stage1" / "config.json").exists():
        raise SystemExit(f"{folder}: no finished MMBERT stage 1; run bench.mmbert_cold with --work {args.work} first")
    files = run_files(args.work, args.runs[0])
    config = json.loads((folder / "mmbert_stage1" / "config.json").read_text())
    features = {**config["features"], "speech_cache": str(args.work / "speech")}
    speech = speech_features(features, None, config["speech_pool"], config["max_speech_tokens"])
    report = {"work": str(args.work), "runs": args.runs, "speech_probe": speech_probe(files, speech),
              "stage2": stage2_logs(args.work, args.runs), "models": {}}
    for stage in args.stages:
        model_dir = folder / f"mmbert_stage{stage}"
        if (model_dir / "config.json").exists():
            report["models"][f"stage{stage}"] = model_figures(model_dir, files, features)
    if args.routing and args.routing.exists():
        report["routing"] = routing_shift(args.routing)
    report["machine"] = machine_info(("torch", "transformers", "scikit-learn"))
    write_result(args.out, report)
    print(json.dumps({k: report[k] for k in ("speech_probe", "stage2")}, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
