"""C²TU's test sets as the benchmarks read them (``bench.c2tu_sets``, ``bench.external_defences``; no figures
here): a file of a set, and which posts of its COLD set are COLD dev posts."""
from __future__ import annotations

import json
from pathlib import Path

from bench.common import cold_records


def read_set(folder: Path, name: str, part: str) -> list[dict]:
    """One file of a set (``cloaked``, ``gold``, ``lexicon`` or ``outputs/NAME``): C²TU's one-line JSON list."""
    return json.loads((folder / f"{name}_{part}.json").read_text(encoding="utf-8"))


def cold_parts(cold: Path, gold: list[str]) -> dict[str, list[int]]:
    """The COLD set's posts by COLD split: ``dev`` those whose text before cloaking is a COLD dev post and no
    COLD test post (31 are both), ``test`` the rest."""
    dev, test = ({r["text"] for r in cold_records(cold, split)} for split in ("dev", "test"))
    parts: dict[str, list[int]] = {"dev": [], "test": []}
    for i, text in enumerate(gold):
        parts["dev" if text in dev and text not in test else "test"].append(i)
    return parts
