"""Which n-gram model ``cloak unveil`` should score with: one that keeps more of the n-grams it sees, or one
fitted on more text, judged on COLD dev, where the unveiler's settings are chosen.

Run from the repository root: ``.venv/bin/python -m bench.unveil_lm --cold DIR --swsr DIR`` (about 15
minutes on 2 cores; it shares ``bench.unveil``'s work folder, so its terms and models are reused). Writes
``bench/results/unveil_lm.json``.

- Models (``cloak fit-lm``, four characters): COLD train at its defaults (n-grams seen twice or more: what
  ``bench.unveil`` scores with); COLD train keeping every n-gram (``--min-count 1``); COLD train and SWSR's
  comments (``cloak convert --from swsr``), at the defaults and keeping every n-gram.
- Judged as ``bench.unveil --tune`` judges a setting: every candidate of COLD dev's cloaks (each op at its
  defaults, ``poster`` strength, seed 1) and of COLD dev's posts as they are, each post read by its
  likeliest reading under the model at the unveiler's default settings; the share of cloaked terms read
  back per op and of clean posts left unchanged, each against the default model's with a paired bootstrap
  95% interval over posts.
- Cost: the file's size, and the memory and seconds it takes a fresh process to load it.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from bench.common import (BIN, RESULTS, WORK, cold_work, machine_info, mined_terms, missing_data, ngram_model, parser,
                          print_summary, run_once, share_difference, write_result)
from cloak.common.io import write_atomic

DEFAULT = "COLD train"


def models(work: Path, swsr: Path, steps: dict) -> dict[str, Path]:
    """The n-gram models compared, by name, each fitted once."""
    swsr_posts = run_once("convert SWSR", work / "swsr.jsonl", [
        BIN / "cloak", "convert", "--from", "swsr", "--in", swsr / "SexComment.csv", "--out", work / "swsr.jsonl"],
        steps)
    both = work / "train_swsr.jsonl"
    if not both.exists():  # cloak fit-lm reads one file; atomic, so that a half-written one is never reused
        write_atomic(both, (work / "train.jsonl").read_bytes() + swsr_posts.read_bytes())
    fitted = {DEFAULT: ngram_model(work, steps)}
    every = ["--min-count", 1]
    for name, train, flags, out in ((f"{DEFAULT}, every n-gram", work / "train.jsonl", every, "cold_every.lm.gz"),
                                    (f"{DEFAULT} + SWSR", both, [], "cold_swsr.lm.gz"),
                                    (f"{DEFAULT} + SWSR, every n-gram", both, every, "cold_swsr_every.lm.gz")):
        fitted[name] = run_once(f"fit the n-gram model: {name}", work / out, [
            BIN / "cloak", "fit-lm", "--train", train, "--out", work / out, *flags], steps)
    return fitted


def loading_cost(model: Path) -> dict:
    """What loading ``model`` costs a fresh process: the memory it adds (MB: its peak resident size,
    VmHWM, before and after; not ``ru_maxrss``, which keeps the peak of the process it was forked from)
    and its seconds."""
    code = ("import re, time; from cloak.unveil.ngram import CharNgramLM\n"
            "def peak(): return int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1))\n"
            f"before, started = peak(), time.perf_counter(); CharNgramLM.load({str(model)!r})\n"
            "print(time.perf_counter() - started, before, peak())")
    seconds, before, after = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                            check=True).stdout.split()
    return {"file_mb": round(model.stat().st_size / 2**20, 1), "memory_mb": round((int(after) - int(before)) / 1024),
            "seconds": round(float(seconds), 2)}


def compared(counts: dict[str, list[tuple[str, int, int]]]) -> dict[str, dict]:
    """Per model: the share of clean posts unchanged and of cloaked terms read back per op, each beside its
    difference from the default model's, paired over posts."""
    base = counts[DEFAULT]
    posts = {}  # each set's posts, at the same places in every model's counts
    for k, (name, _, _) in enumerate(base):
        posts.setdefault(name, []).append(k)
    figures = {}
    for model, rows in counts.items():
        figures[model] = {}
        for name, picked in sorted(posts.items()):
            hits, totals = [rows[k][1] for k in picked], [rows[k][2] for k in picked]
            if name == "clean":  # a clean post counts 1 where it changed; the figure is the share unchanged
                hits, before = [1 - h for h in hits], [1 - base[k][1] for k in picked]
            else:
                before = [base[k][1] for k in picked]
            figures[model][name] = {"share": round(sum(hits) / max(1, sum(totals)), 4),
                                    "against_default": share_difference(hits, before, totals)}
    return figures


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "unveil_lm.json", cold=True, swsr=True, work=WORK / "unveil")
    args = ap.parse_args()
    if args.swsr is None:
        raise SystemExit(missing_data("swsr"))
    started = time.perf_counter()
    from bench.unveil_tuning import candidates, read_posts
    from cloak.ops import available_ops
    from cloak.unveil import CharNgramLM, Unveiler
    from cloak.unveil.unveiler import FUZZY, PRIORS, SINGLE, THRESHOLD

    work, steps = cold_work(args, ("train", "dev"))
    terms, fitted = mined_terms(work, steps), models(work, args.swsr, steps)
    posts = candidates(Unveiler(lexicon=str(terms), model=str(fitted[DEFAULT])), work, terms, sorted(available_ops()),
                       steps)  # every op, as bench.unveil --tune reads them
    setting = {"threshold": THRESHOLD, "fuzzy": FUZZY, "single": SINGLE, "priors": dict(PRIORS)}
    counts = {}
    for name, model in fitted.items():
        print(f"reading COLD dev with {name} ...", flush=True)
        counts[name] = read_posts(posts, setting, CharNgramLM.load(model))
    figures = compared(counts)
    result = {"benchmark": "bench/unveil_lm.py", "machine": machine_info(), "setting": setting,
              "posts_with_candidates": len(posts),
              "models": {name: {"file": model.name, **loading_cost(model), "dev": figures[name]}
                         for name, model in fitted.items()},
              "steps": steps, "seconds": round(time.perf_counter() - started, 1)}
    write_result(args.out, result)
    rows = [(name, f"{m['dev']['homophone']['share']}",
             f"clean {m['dev']['clean']['share']}, abbrev {m['dev']['abbrev']['share']}, {m['memory_mb']} MB")
            for name, m in result["models"].items()]
    print_summary(rows, args.out, time.perf_counter() - started)


if __name__ == "__main__":
    main()
