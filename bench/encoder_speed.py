"""Seconds an epoch of the transformer detectors and MMBERT on a real pretrained encoder, to size the
long runs of issue 37 (multilingual-e5-small: 12 layers, hidden 384, XLM-R's 250k-piece vocabulary).

Run from the repository root with the encoder and the Whisper weights ``make weights`` fetches
(``mmcloak-weights e5 weights``, ``mmcloak-weights whisper-base weights``)::

    make weights
    .venv/bin/python -m bench.encoder_speed --encoder weights/e5 --weights weights

Each (model, layers, threads) is one epoch in a fresh process (torch's thread count is set once a
process), at ``max_length`` 64, with the encoder's 12 layers and its first 6 (``backbone_layers``), on
1 and 2 threads:

- ``bert``, ``chinesebert``: ``--posts`` COLD training posts in file order (any length; cut to 64
  tokens, head and tail), batches of 16 (Wankmüller 2021's recipe), dev ``--dev`` COLD dev posts.
- ``mmbert``: stages 1, 2 and 3 one epoch each, the ``small`` preset's settings (batches of 32, glyph
  CNN, speech by eSpeak NG and Whisper base): ``--posts`` COLD posts of 8-32 characters each followed
  by one cloak (``bench/mmbert_data.py``'s data, as item 3's runs train), dev ``--dev`` posts and cloaks.
  ``twin``: its text-only twin (the same backbone, one modality), stage-3 settings.

Figures: the loop's epoch seconds (training plus scoring the dev posts, which is timed on its own and
given beside), seconds a training example, and the one-off costs a long run pays once: the glyph table
of the whole vocabulary (drawn once per vocabulary and size, cached on disk) and speech (eSpeak NG +
Whisper base a text, cached). Writes ``bench/results/encoder_speed.json`` after every measurement; a
rerun skips those already there (``--force`` redoes them), so an interrupted run continues.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import REPO, RESULTS, WORK, machine_info, parser, print_summary, read_json, write_result

KINDS = ("bert", "chinesebert", "mmbert", "twin")
MAX_LENGTH = 64


def data(cold: Path, work: Path, posts: int, dev: int) -> dict[str, Path]:
    """The measurement's record files in ``work`` (written once)."""
    from bench.common import cold_records
    from bench.mmbert_data import TRAIN_OPS, cloaked, interleaved, sample
    from cloak.common.io import write_records

    paths = {name: work / f"{name}.jsonl" for name in ("train", "dev", "mm_train", "mm_dev")}
    if all(p.exists() for p in paths.values()):
        return paths
    work.mkdir(parents=True, exist_ok=True)
    write_records(paths["train"], cold_records(cold, "train")[:posts])
    write_records(paths["dev"], cold_records(cold, "dev")[:dev])
    for name, split, n in (("mm_train", "train", posts), ("mm_dev", "dev", dev)):
        clean = sample(cold, split, n, 0)
        write_records(paths[name], interleaved(clean, cloaked(clean, TRAIN_OPS, 0)))
    return paths


def run_config(encoder: str, weights: Path, work: Path, layers: int, text_only: bool) -> dict:
    from mmbert.presets import load_run_config

    run = load_run_config("small")
    run["model"].update(backbone=encoder, backbone_layers=layers)
    if text_only:
        run["model"]["modalities"] = ["text"]
    run["features"].update(tts={"name": "espeak-ng"}, whisper=str(weights / "whisper-base.pt"),
                           speech_cache=str(work / "speech"))
    run["train"]["max_length"] = MAX_LENGTH
    run["train"]["stage2"]["head_warmup_epochs"] = 0  # one epoch trains every expert
    for stage in ("stage1", "stage2", "stage3"):
        run["train"][stage]["epochs"] = 1
    return run


def one_off(encoder: str, weights: Path, paths: dict[str, Path], work: Path) -> dict:
    """What a long run pays once: the vocabulary's glyph tables (chinesebert's 24 px, MMBERT's 32 px)
    and the speech of every text; both cached, so the measurements after find them."""
    from cloak.common.io import read_records
    from mmbert.loading import speech_features
    from mmbert.tokenization import add_emoji, load_tokenizer, piece_texts
    from mmbert.vision import glyph_images

    tokenizer = load_tokenizer(encoder)
    added = add_emoji(tokenizer)
    pieces = piece_texts(tokenizer)
    out = {"vocabulary": {"entries": len(pieces), "emoji_added": added}}
    for size in (24, 32):
        started = time.perf_counter()
        glyph_images(pieces, size, progress=False)
        out[f"glyph_table_{size}px_seconds"] = round(time.perf_counter() - started, 1)
    texts = [r["text"] for name in ("mm_train", "mm_dev") for _, r in read_records(str(paths[name]))]
    speech = speech_features(run_config(encoder, weights, work, 12, False)["features"], stride=8, max_tokens=32)
    started = time.perf_counter()
    speech.features(texts, progress=False)
    seconds = time.perf_counter() - started
    out["speech"] = {"texts": len(set(texts)), "seconds": round(seconds, 1),
                     "seconds_per_text": round(seconds / max(1, len(set(texts))), 3),
                     "note": "eSpeak NG + Whisper base (trimmed), 0 if already cached"}
    return out


def measure(kind: str, layers: int, encoder: str, weights: Path, paths: dict[str, Path], work: Path) -> dict:
    """One epoch of ``kind`` in this process (its thread count already set)."""
    from cloak.common.io import read_records

    def records(name: str) -> list[dict]:
        return [r for _, r in read_records(str(paths[name]), labels=True)]

    out_dir = tempfile.mkdtemp(prefix=f"encoder-speed-{kind}-", dir=work)
    started = time.perf_counter()
    if kind in ("bert", "chinesebert"):
        from attacks import make_victim

        train, dev = records("train"), records("dev")
        victim = make_victim(kind, {"backbone": encoder, "backbone_layers": layers, "max_length": MAX_LENGTH},
                             {"epochs": 1, "batch_size": 16})
        victim.fit(train, dev, out_dir=out_dir, progress=False)
        entry = victim.log_["log"][0]
        timed = time.perf_counter()
        victim.predict_proba([r["text"] for r in dev])
        dev_seconds = time.perf_counter() - timed
        stages = {"epoch": {"seconds": entry["seconds"], "dev_seconds": round(dev_seconds, 2),
                            "examples": len(train), "batch_size": 16}}
    else:
        from mmbert.train import train_stage

        run = run_config(encoder, weights, work, layers, kind == "twin")
        train, dev = str(paths["mm_train"]), str(paths["mm_dev"])
        examples = sum(1 for _ in open(train, encoding="utf-8"))
        stages, previous = {}, None
        for stage in ((3,) if kind == "twin" else (1, 2, 3)):
            stage_dir = os.path.join(out_dir, f"s{stage}")
            train_stage(stage, run, train, dev, stage_dir, previous, allow_skip=kind == "twin", progress=False)
            with open(os.path.join(stage_dir, "log.json"), encoding="utf-8") as f:
                entry = json.load(f)[0]
            stages[f"stage{stage}"] = {"seconds": entry["seconds"], "examples": examples,
                                       "batch_size": run["train"]["batch_size"]}
            previous = stage_dir
    for figures in stages.values():
        train_seconds = figures["seconds"] - figures.get("dev_seconds", 0.0)
        figures["seconds_per_example"] = round(train_seconds / figures["examples"], 4)
    shutil.rmtree(out_dir, ignore_errors=True)
    return {"stages": stages, "wall_seconds": round(time.perf_counter() - started, 1)}


def child(args) -> None:
    """``--one KIND,LAYERS,THREADS``: measure in this process and print the figures as JSON."""
    kind, layers, threads = args.one.split(",")
    import torch

    torch.set_num_threads(int(threads))
    torch.manual_seed(0)
    paths = {name: args.work / f"{name}.jsonl" for name in ("train", "dev", "mm_train", "mm_dev")}
    figures = measure(kind, int(layers), str(args.encoder), args.weights, paths, args.work)
    print("RESULT " + json.dumps(figures), flush=True)


def measure_one(args, kind: str, layers: str, threads: str) -> dict:
    """One (model, layers, threads) epoch in a fresh process (torch's thread count is set once a process)."""
    command = [sys.executable, "-m", "bench.encoder_speed", "--one", f"{kind},{layers},{threads}", "--encoder",
               str(args.encoder), "--weights", str(args.weights), "--work", str(args.work)]
    env = {**os.environ, "OMP_NUM_THREADS": threads, "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=REPO)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode or not lines:
        raise SystemExit(f"{kind} layers={layers} threads={threads} failed:\n{done.stderr[-3000:]}")
    return {"kind": kind, "layers": int(layers), "threads": int(threads), "loadavg_at_start": os.getloadavg(),
            **json.loads(lines[-1][len("RESULT "):])}


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "encoder_speed.json", cold=True, work=WORK / "encoder_speed")
    ap.add_argument("--encoder", type=Path, default=REPO / "weights" / "e5", help="multilingual-e5-small's folder")
    ap.add_argument("--weights", type=Path, default=REPO / "weights", help="holds whisper-base.pt")
    ap.add_argument("--posts", type=int, default=200, help="training posts an epoch")
    ap.add_argument("--dev", type=int, default=32, help="dev posts scored an epoch")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--layers", default="12,6", help="the encoder's layers kept, each measured")
    ap.add_argument("--threads", default="1,2", help="torch threads, each measured")
    ap.add_argument("--force", action="store_true", help="redo measurements already in --out")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.work = args.work.resolve()
    if args.one:
        return child(args)
    started = time.time()
    results = read_json(args.out, {}) if not args.force else {}
    paths = data(args.cold, args.work, args.posts, args.dev)
    results.update(benchmark="bench/encoder_speed.py", encoder=str(args.encoder), max_length=MAX_LENGTH,
                   posts=args.posts, dev_posts=args.dev, machine=machine_info(("torch", "transformers")))
    if "one_off" not in results:
        os.environ["OMP_NUM_THREADS"] = "2"
        results["one_off"] = one_off(str(args.encoder), args.weights, paths, args.work)
        write_result(args.out, results)
    runs = results.setdefault("runs", {})
    for kind in args.kinds.split(","):
        for layers in args.layers.split(","):
            for threads in args.threads.split(","):
                key = f"{kind} layers={layers} threads={threads}"
                if key not in runs:
                    print(key, flush=True)
                    runs[key] = measure_one(args, kind, layers, threads)
                    write_result(args.out, results)
    rows = [(f"{key} {stage}", f"{figures['seconds']:.1f} s",
             f"{figures['seconds_per_example'] * 1000:.0f} ms an example, {figures['examples']} examples")
            for key, run in runs.items() for stage, figures in run["stages"].items()]
    print_summary(rows, args.out, time.time() - started, value_width=10)


if __name__ == "__main__":
    main()
