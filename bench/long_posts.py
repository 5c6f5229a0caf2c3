"""Benchmark: posts of every length through every command, as a user runs them (whole commands).

Run from the repository root: ``.venv/bin/python -m bench.long_posts`` (``--quick`` for a smoke run);
writes ``bench/results/long_posts.json``. Posts are real COLD test posts joined end to end until
they reach 1 k, 10 k, 100 k and 1 M characters (one post per file). For each size it runs, in a
subprocess each, as a user would:

- ``cloak speak --tts tone`` (the issue's bar: peak memory under 500 MB on a 1 MB post; it used to
  run out of memory),
- ``cloak perturb`` with the default op mix, ``cloak render --size 32``,
- ``mmbert evaluate`` with a tiny text + vision MMBERT trained here on short COLD posts,

recording wall time and the peak resident memory of the command's process (``os.wait4``). With
``--baseline REV`` the code of an earlier commit (a temporary git worktree) runs the same speak, on
the sizes it survives, and the same evaluation of all COLD test posts, so before and after are
measured on one machine, back to back.

Then ``mmbert evaluate`` of that model (trained on COLD train posts of 8-32 characters, cut to 32
tokens, 64 positions) on all 5,323 COLD test posts, 1 to 128 characters: before the fix any post
longer than the position table crashed it.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import BIN, REPO, RESULTS, cold_records, machine_info, measure, parser, print_summary, write_result
from cloak.common.io import write_records

SIZES = (1_000, 10_000, 100_000, 1_000_000)
BASELINE_SIZES = (1_000, 4_000, 16_000)  # the old speech code is quadratic: larger ones take minutes
MEMORY_TARGET_MB = 500
SPEAK = "cloak speak --tts tone"


def long_post(posts: list[str], size: int) -> str:
    text, i = [], 0
    while sum(map(len, text)) < size:
        text.append(posts[i % len(posts)])
        i += 1
    return "".join(text)[:size]


def train_tiny(work: Path, cold: Path, train_posts: int) -> Path:
    """A tiny text + vision MMBERT (stages 1-3, one epoch each) on short COLD train posts (dev: COLD dev)."""
    for split, n in (("train", train_posts), ("dev", 200)):
        short = [r for r in cold_records(cold, split) if 8 <= len(r["text"]) <= 32]
        write_records(str(work / f"{split}.jsonl"), short[:n])
    (work / "tiny.yaml").write_text(
        "preset: tiny\nmodel: {modalities: [text, vision]}\n"
        "train: {stage1: {epochs: 1}, stage2: {epochs: 1, head_warmup_epochs: 0}, stage3: {epochs: 1}}\n")
    previous = None
    for stage in (1, 2, 3):
        out = work / f"s{stage}"
        args = [BIN / "mmbert", "train", "--stage", stage, "--config", work / "tiny.yaml", "--train",
                work / "train.jsonl", "--dev", work / "dev.jsonl", "--out", out, "-q"]
        result = measure(args + (["--from", previous] if previous else []))
        if result["exit"] != 0:
            raise SystemExit(f"training stage {stage} failed: {result['stderr']}")
        previous = out
    return previous


def commands(path: Path, work: Path, model: Path) -> dict[str, list]:
    cloak = BIN / "cloak"
    return {
        SPEAK: [cloak, "speak", "--in", path, "--speech-cache", work / "speech", "--tts", "tone"],
        "cloak perturb": [cloak, "perturb", "--in", path, "--out", work / "cloaked.jsonl", "--ops",
                          "homophone,emoji,split,abbrev,pinyin,english", "-q"],
        "cloak render --size 32": [cloak, "render", "--in", path, "--out", work / "glyphs", "--size", 32],
        "mmbert evaluate": [BIN / "mmbert", "evaluate", "--model", model, "--data", path, "-q"],
    }


def baseline(rev: str, posts: list[str], work: Path, model: Path, all_test: Path) -> dict:
    """The same speak and evaluation with the code of commit ``rev``."""
    tree = work / "baseline"
    subprocess.run(["git", "worktree", "add", "--detach", str(tree), rev], cwd=REPO, check=True,
                   capture_output=True)
    old = {"env": {"PYTHONPATH": str(tree)}, "cwd": str(tree)}
    try:
        speak = {}
        for size in BASELINE_SIZES:
            path = work / f"baseline-{size}.jsonl"
            write_records(str(path), [{"id": "long", "text": long_post(posts, size), "label": 1}])
            # as the code of that commit spelt the command
            speak[str(size)] = measure([sys.executable, "-m", "cloak.cli", "speak", "--in", path, "--out",
                                        work / f"baseline-speech-{size}", "--backend", "tone"], **old)
            print("baseline speak", size, speak[str(size)], flush=True)
        evaluate = measure([sys.executable, "-m", "mmbert.cli", "evaluate", "--model", model, "--data", all_test,
                            "-q"], **old)
        print("baseline evaluate", evaluate, flush=True)
        return {"rev": rev, SPEAK: speak, "evaluate_all_cold_test": evaluate}
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO, capture_output=True)


def by_post_length(posts: list[str], sizes: tuple[int, ...], work: Path, model: Path) -> dict[str, dict]:
    """Every command of ``commands`` on one post of each size."""
    by_size: dict[str, dict] = {}
    for size in sizes:
        path = work / f"post-{size}.jsonl"
        write_records(str(path), [{"id": "long", "text": long_post(posts, size), "label": 1}])
        by_size[str(size)] = {}
        for name, command in commands(path, work / f"out-{size}", model).items():
            (work / f"out-{size}").mkdir(exist_ok=True)
            by_size[str(size)][name] = measure(command)
            print(size, name, by_size[str(size)][name], flush=True)
    return by_size


def evaluate_all(test: list[dict], work: Path, model: Path) -> dict:
    """``mmbert evaluate`` of the tiny model on all COLD test posts, and its figures where it ran."""
    all_test = work / "cold_test.jsonl"
    write_records(str(all_test), test)
    result = {"posts": len(test), "longest_characters": max(len(r["text"]) for r in test),
              "model": "tiny preset, text + vision, trained on 8-32 character posts (max_length 32, 64 positions)",
              **measure([BIN / "mmbert", "evaluate", "--model", model, "--data", all_test, "--out",
                         work / "eval.json", "-q"])}
    if result["exit"] == 0:
        result["figures"] = json.loads((work / "eval.json").read_text())["overall"]
    return result


def summary_rows(result: dict, baseline_rev: str | None) -> list[tuple[str, str, str]]:
    rows = [(f"{name}, {int(size):,} chars", f"{r['seconds']} s, {r['peak_mb']} MB", "ok" if r["exit"] == 0 else
             f"exit {r['exit']}") for size, runs in result["by_post_length"].items() for name, r in runs.items()]
    e = result["evaluate_all_cold_test"]
    rows.append(("mmbert evaluate, all COLD test posts", f"{e['seconds']} s, {e['peak_mb']} MB",
                 f"macro-F1 {e['figures']['f1']:.3f}" if "figures" in e else f"exit {e['exit']}: {e['stderr']}"))
    if baseline_rev:
        old = result["baseline"]
        for size, r in old[SPEAK].items():
            rows.append((f"{baseline_rev[:8]}: speak, {int(size):,} chars", f"{r['seconds']} s, {r['peak_mb']} MB",
                         "ok" if r["exit"] == 0 else f"exit {r['exit']}"))
        r = old["evaluate_all_cold_test"]
        rows.append((f"{baseline_rev[:8]}: evaluate, all COLD test posts", f"{r['seconds']} s, {r['peak_mb']} MB",
                     "ok" if r["exit"] == 0 else f"exit {r['exit']}: {r['stderr'][:60]}"))
    return rows


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "long_posts.json", cold=True)
    ap.add_argument("--baseline", metavar="REV", help="also run cloak speak of this commit on small sizes")
    ap.add_argument("--quick", action="store_true", help="sizes up to 10 k and a smaller model")
    args = ap.parse_args()
    started = time.perf_counter()

    test = cold_records(args.cold, "test")
    posts = [r["text"] for r in test]
    sizes = SIZES[:2] if args.quick else SIZES
    result = {"benchmark": "bench/long_posts.py", "quick": args.quick, "machine": machine_info(("torch",)),
              "posts": "COLD test posts joined end to end, one post per file", "memory_target_mb": MEMORY_TARGET_MB}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model = train_tiny(work, args.cold, 200 if args.quick else 2000)
        result["by_post_length"] = by_post_length(posts, sizes, work, model)
        result["evaluate_all_cold_test"] = evaluate_all(test, work, model)
        if args.baseline:
            result["baseline"] = baseline(args.baseline, posts, work, model, work / "cold_test.jsonl")
    largest = result["by_post_length"][str(sizes[-1])][SPEAK]
    result["speak_largest_post_meets_target"] = largest["exit"] == 0 and largest["peak_mb"] < MEMORY_TARGET_MB
    write_result(args.out, result, indent=2)
    print_summary(summary_rows(result, args.baseline), args.out, time.perf_counter() - started, value_width=22)


if __name__ == "__main__":
    main()
