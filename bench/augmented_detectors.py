"""What the augmentation benchmarks share (they write no figures here): posts cloaked by the README's realistic
recipe, balanced or not, and tfidf-lr trained on files of posts."""
from __future__ import annotations

from pathlib import Path

from bench.common import BIN, run_once

RECIPE = ["--ops", "homophone,similar,emoji,split,abbrev,pinyin", "--targets", "lexicon+mined", "--strength",
          "poster"]


def cloaked(work: Path, data: Path, name: str, balance: bool, seed: int, steps: dict) -> Path:
    """``data`` cloaked by the recipe (terms mined from COLD train), balanced or not."""
    out = work / f"{name}.jsonl"
    return run_once(f"cloak {name}", out, [BIN / "cloak", "perturb", "--in", data, "--out", out, *RECIPE, "--mine-from",
                                       work / "train.jsonl", "--balance" if balance else "--no-balance", "--seed",
                                       seed, "-q"], steps)


def detector(work: Path, name: str, train: list[Path], steps: dict) -> Path:
    """tfidf-lr trained on the records of ``train`` (concatenated), once."""
    victim, data = work / f"victim_{name}", work / f"victim_{name}.train.jsonl"
    if not (victim / "victim.json").exists():
        data.write_bytes(b"".join(path.read_bytes() for path in train))
    run_once(f"train {name}", victim / "victim.json", [BIN / "attacks", "train", "--model", "tfidf-lr", "--train",
                                                      data, "--out", victim, "-q"], steps)
    return victim
