"""The training-size curve of Wankmüller (2021, arXiv:2102.02111; its Fig. 14): macro-F1 on a fixed
test set against the number of training posts, over repeated nested subsamples.

For repeat ``r`` the training records are shuffled with seed ``(seed, r)`` and each size takes the
first ``size`` of that order, so within a repeat every sample contains the smaller ones. Each run
appends a line to ``runs.jsonl`` as it finishes: an interrupted curve resumes by running the same
command again (only the missing runs are trained).
"""
from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Sequence

import numpy as np

from cloak.common.io import write_atomic

from .victims.base import Victim, labels_of, texts_of


def nested_samples(n: int, sizes: Sequence[int], repeats: int, seed: int) -> dict[tuple[int, int], np.ndarray]:
    """{(size, repeat): row indices}: within a repeat, each size's rows hold every smaller size's."""
    if max(sizes) > n:
        raise ValueError(f"the largest size ({max(sizes)}) is more than the {n} training records")
    out = {}
    for r in range(repeats):
        order = np.random.default_rng([seed, r]).permutation(n)
        for size in sizes:
            out[(size, r)] = np.sort(order[:size])
    return out


def training_curve(make: Callable[[int], Victim], train: Sequence[dict], test: Sequence[dict], sizes: Sequence[int],
                   repeats: int, out_dir: str, seed: int = 0, progress: Callable[[str], None] | None = None) -> dict:
    """Train ``make(seed)`` on each nested sample, score it on ``test``; writes ``runs.jsonl``,
    ``curve.json`` and ``curve.png`` into ``out_dir`` and returns the summary."""
    from mmbert.metrics import classification_metrics

    os.makedirs(out_dir, exist_ok=True)
    runs_path = os.path.join(out_dir, "runs.jsonl")
    done = {}
    if os.path.exists(runs_path):
        with open(runs_path, encoding="utf-8") as f:
            for line in f:
                try:
                    run = json.loads(line)
                    done[(run["size"], run["repeat"])] = run
                except (json.JSONDecodeError, KeyError):
                    continue  # a line cut short by a kill: that run is trained again
    test_texts, test_labels = texts_of(test), labels_of(test, "the test records")
    for (size, repeat), rows in nested_samples(len(train), sizes, repeats, seed).items():
        if (size, repeat) in done:
            continue
        started = time.perf_counter()
        victim = make(seed + repeat)
        work = os.path.join(out_dir, "work", f"{size}-{repeat}")
        victim.fit([train[i] for i in rows], out_dir=work, progress=False)
        trained = time.perf_counter() - started
        figures = classification_metrics(test_labels, victim.predict(test_texts))
        run = {"size": size, "repeat": repeat, "victim": victim.name, "macro_f1": figures["f1"],
               "accuracy": figures["accuracy"], "train_seconds": round(trained, 2),
               "seconds": round(time.perf_counter() - started, 2)}
        with open(runs_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(run) + "\n")
        shutil.rmtree(work, ignore_errors=True)
        done[(size, repeat)] = run
        if progress:
            progress(f"size {size}, repeat {repeat + 1}/{repeats}: macro-F1 {figures['f1']:.4f}")
    shutil.rmtree(os.path.join(out_dir, "work"), ignore_errors=True)
    summary = {"victim": next(iter(done.values()))["victim"], "test_records": len(test), "seed": seed,
               "repeats": repeats, "sizes": list(sizes),
               "by_size": [{"size": s, **_spread([done[(s, r)]["macro_f1"] for r in range(repeats)])} for s in sizes],
               "runs": [done[(s, r)] for s in sizes for r in range(repeats)]}
    write_atomic(os.path.join(out_dir, "curve.json"), (json.dumps(summary, indent=1) + "\n").encode())
    plot_curve(summary, os.path.join(out_dir, "curve.png"))
    return summary


def _spread(values: list[float]) -> dict:
    return {"mean_macro_f1": float(np.mean(values)), "min_macro_f1": float(np.min(values)),
            "max_macro_f1": float(np.max(values))}


def plot_curve(summary: dict, path: str) -> None:
    """Macro-F1 against training size: the mean over repeats, and a band from their min to max."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summary["by_size"]
    sizes = [r["size"] for r in rows]
    fig, ax = plt.subplots(figsize=(5.5, 3.6), constrained_layout=True)
    ax.fill_between(sizes, [r["min_macro_f1"] for r in rows], [r["max_macro_f1"] for r in rows], alpha=0.25,
                    label=f"min-max of {summary['repeats']} repeats")
    ax.plot(sizes, [r["mean_macro_f1"] for r in rows], marker="o", label=f"{summary['victim']}, mean")
    ax.set_xscale("log")
    ax.set_xticks(sizes, [f"{s:,}" for s in sizes])
    ax.set_xlabel("training posts")
    ax.set_ylabel(f"macro-F1 on {summary['test_records']:,} test posts")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.savefig(path, dpi=120)
    plt.close(fig)
