"""What the MMBERT benchmarks share (not a benchmark itself): a stage trained unless finished, a model folder
evaluated on test sets, the predictions as the verdict reads them, and the run's speech made up front.

``bench.mmbert_cold``, ``bench.mmbert_heldout`` and ``bench.mmbert_claim`` use them.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from bench.common import epoch_seconds, read_json, resumable, timed, write_result
from bench.mmbert_data import TEST_OPS
from cloak.io import read_records

TEST_SETS = ("clean", *TEST_OPS)


def trained(stage: int, run: dict, files: dict, out: Path, from_dir: Path, allow_skip: bool = False) -> dict:
    """Train a stage unless ``out`` already holds its finished model (resumed where it stopped after a
    checkpoint); returns its training summary."""
    from mmbert.train import train_stage

    summary = out / "training.json"
    if not summary.exists():
        started = time.time()
        train_stage(stage, run, str(files["train"]), str(files["dev"]), str(out), str(from_dir),
                    resume=resumable(out), allow_skip=allow_skip)
        print(f"{out.name}: {time.time() - started:.0f} s", flush=True)
    data = json.loads(summary.read_text())
    log = json.loads((out / "log.json").read_text())
    return {"best_epoch": data["best_epoch"], "epochs_run": data["epochs_run"], "best_dev_score": data["best_score"],
            "seconds": round(sum(e["seconds"] for e in log), 1), "epoch_seconds": epoch_seconds(log)}


def evaluate(model_dir: Path, files: dict, features: dict,
             sets: tuple[str, ...] = TEST_SETS) -> tuple[dict, dict[str, np.ndarray]]:
    """Figures on each test set (``files["test_NAME"]``, ``clean`` first), overall and on the posts its op
    changed; the drops against the same posts clean (the test files hold the same posts in the same order).
    Also returns the predictions, by test set. ``features``: the run's (its speech cache, where the test
    posts were spoken)."""
    from mmbert.inference import infer
    from mmbert.loading import load_model
    from mmbert.metrics import classification_metrics

    model, featurizer = load_model(str(model_dir), features)
    out, clean_predictions, by_set = {}, None, {}
    for name in sets:
        records = [r for _, r in read_records(str(files[f"test_{name}"]))]
        predictions = by_set[name] = infer(model, featurizer, records)["probs"].argmax(1)
        labels = [r["label"] for r in records]
        out[name] = {"all": classification_metrics(labels, predictions)}
        if name == "clean":
            clean_predictions = predictions
            continue
        changed = [i for i, r in enumerate(records) if r.get("source_text", r["text"]) != r["text"]]
        changed_labels = [labels[i] for i in changed]
        out[name]["changed"] = classification_metrics(changed_labels, predictions[changed])
        out[name]["clean_on_changed"] = classification_metrics(changed_labels, clean_predictions[changed])
        out[name]["drop_f1"] = round(out["clean"]["all"]["f1"] - out[name]["all"]["f1"], 4)
        out[name]["drop_f1_changed"] = round(out[name]["clean_on_changed"]["f1"] - out[name]["changed"]["f1"], 4)
    return out, by_set


def predictions_text(labels: np.ndarray, predictions: dict[str, dict[str, np.ndarray]]) -> dict:
    """The gold labels and every model's predicted label on every test set, a digit a post (``"0110..."``): what
    ``bench.mmbert_verdict`` resamples across seeds, compact in the JSON."""
    def digits(values: np.ndarray) -> str:
        return "".join(map(str, values.tolist()))

    return {"labels": digits(labels), **{m: {k: digits(v) for k, v in p.items()} for m, p in predictions.items()}}


def speech_step(run: dict, files: dict, work: Path, workers: int = 1) -> list[dict]:
    """Every text of the run spoken and encoded up front (cached in ``WORK/speech``) by ``workers``
    processes, timed apart from the training it would otherwise hide in; each run's timing is kept in
    ``WORK/speech_timings.json`` (the first is the one-off cost, a rerun's finds the speech cached)."""
    from mmbert.loading import speech_features

    texts = sorted({r["text"] for path in files.values() for _, r in read_records(str(path))})
    speech = speech_features(run["features"])
    _, seconds = timed(lambda: speech.features(texts, progress=False, workers=workers))
    path = work / "speech_timings.json"
    timings = [*read_json(path, {"runs": []})["runs"], {"texts": len(texts), "seconds": round(seconds, 1),
                                                        "tts": run["features"]["tts"]["name"], "workers": workers}]
    write_result(path, {"runs": timings})
    return timings
