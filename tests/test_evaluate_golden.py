"""``attacks evaluate`` with today's attacks keeps its outcomes byte for byte.

``data/evaluate_golden.json`` holds the SHA-256 of every outcome file, and TextAttack's counts of every
(victim, attack), that the runs below wrote: a TF-IDF victim and a tiny BERT (both trained here, on the first
200 posts of ``samples/cold/cold_test_300.jsonl``) attacked on the next 60 by the cloak, search, FGM and PGD
attacks, once with the defaults and once with every search and cloak option away from them. Made once by the
code at commit c7c7ab2, before the search was split into goal, constraints, transformation and method; a
change to an attack, its options or the evaluator's counting that moves one byte fails here. Regenerate it
only for a change the docs announce: ``MMCLOAK_WRITE_GOLDEN=1 pytest tests/test_evaluate_golden.py``.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import read_jsonl, save_tiny_backbone

GOLDEN = Path(__file__).resolve().parent / "data" / "evaluate_golden.json"
# six epochs at a high rate: a tiny BERT that tells the labels apart (73% on the attacked posts), so the search has
# something to flip
BERT = {"config": {"max_length": 48}, "training": {"epochs": 6, "lr": 5e-3, "batch_size": 16, "patience": 6}}
RUNS = {
    "defaults": ["--attacks", "cloak,search,fgm,pgd", "--eps", "0,0.5", "--steps", "3"],
    "options": ["--attacks", "cloak,search", "--ops", "similar,homophone+emoji", "--mode", "both", "--rate", "0.5",
                "--variants", "2", "--seed", "3", "--strength", "whole", "--targets", "lexicon", "--importance",
                "deletion", "--stopwords", "zh", "--query-budget", "50", "--max-candidates", "3"],
}


# Torch's kernels, MKL and oneDNN each take the code path of the CPU's widest instructions (AVX-512, AVX2 ...),
# whose sums differ in the last bits, and a BERT trained at a high rate carries those bits into its
# probabilities. So the runs are processes on the paths every x86-64 CPU has (ATen's scalar kernels, MKL's
# compatible mode, oneDNN at SSE4.1), on one thread, since sums are also ordered by the threads that make them.
PORTABLE = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "SSE41",
            "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _invoke(*args) -> None:
    result = subprocess.run([sys.executable, "-m", "attacks.cli", *map(str, args)], capture_output=True, text=True,
                            env={**os.environ, **PORTABLE})
    assert result.returncode == 0, (args, result.stderr[-3000:])


def evaluate_outputs(tmp: Path, sample: Path, backbone: str) -> dict:
    """{"files": {run/victim/file: SHA-256}, "counts": {run/victim/attack: {"all" and each gold label:
    [successes, failures, skipped, queries a post]}}}: TextAttack's counts, the evaluator's figures."""
    rows = read_jsonl(sample)
    train, data = tmp / "train.jsonl", tmp / "test.jsonl"
    for path, part in ((train, rows[:200]), (data, rows[200:260])):
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in part), encoding="utf-8")
    config = tmp / "bert.yaml"
    config.write_text(json.dumps(BERT))
    _invoke("train", "--model", "tfidf-lr", "--train", train, "--out", tmp / "tfidf-lr")
    _invoke("train", "--model", "bert", "--backbone", backbone, "--config", config, "--train", train,
            "--out", tmp / "bert", "-q")
    found: dict = {"files": {}, "counts": {}}
    for run, args in RUNS.items():
        out = tmp / run
        _invoke("evaluate", "--victim", tmp / "tfidf-lr", "--victim", tmp / "bert", "--data", data, *args,
                "--out", out, "-q")
        for path in sorted(out.glob("*/*.jsonl")):
            found["files"][f"{run}/{path.parent.name}/{path.name}"] = hashlib.sha256(path.read_bytes()).hexdigest()
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
        for victim, entry in summary["victims"].items():
            for attack, figures in entry["attacks"].items():
                if "skipped" not in figures:
                    found["counts"][f"{run}/{victim}/{attack}"] = {
                        label: [c["successes"], c["failures"], c["skipped"], c["queries_per_example"]]
                        for label, c in {"all": figures["textattack"], **figures["textattack_by_label"]}.items()}
    return found


@pytest.fixture
def emojiless_backbone(tmp_path):
    """The tests' tiny BERT without emoji tokens. With them, 🏴 is one of four tokens at random in each process
    (the England, Scotland and Wales flags lose their tag characters to the tokenizer's cleaning and become
    it), and the emoji op writes 🏴 for 其 and 旗."""
    pytest.importorskip("torch")
    from mmbert.tokenization import build_tokenizer

    return save_tiny_backbone(tmp_path / "backbone", build_tokenizer(add_emoji=False))


def test_evaluate_writes_the_golden_outcomes(tmp_path, sample_path, emojiless_backbone):
    made = evaluate_outputs(tmp_path, sample_path, emojiless_backbone)
    if os.environ.get("MMCLOAK_WRITE_GOLDEN"):
        GOLDEN.write_text(_dumps(made), encoding="utf-8")
        pytest.skip(f"wrote {GOLDEN.name}")
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert sorted(made["files"]) == sorted(golden["files"])
    for name, digest in golden["files"].items():
        assert made["files"][name] == digest, f"{name} differs from the golden outcomes"
    assert made["counts"] == golden["counts"]


def _dumps(found: dict) -> str:
    """One line a file or a (run, victim, attack): a change shows as the lines it moves."""
    lines = [f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for part in ("counts", "files")
             for k, v in sorted(found[part].items())]
    counts = len(found["counts"])
    return ('{"counts": {\n' + ",\n".join(lines[:counts]) + '\n}, "files": {\n' + ",\n".join(lines[counts:])
            + "\n}}\n")
