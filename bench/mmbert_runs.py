"""How the MMBERT benchmarks train (not a benchmark itself): a stage trained unless its folder holds the
finished model, and the run's speech made up front. ``bench.mmbert_cold`` and ``bench.mmbert_claim`` use
them; ``bench.mmbert_evaluation`` scores what they train.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from bench.common import epoch_seconds, read_json, resumable, timed
from cloak.common.io import read_records, write_atomic


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
    write_atomic(path, (json.dumps({"runs": timings}, indent=1) + "\n").encode())  # a work file, not figures
    return timings
