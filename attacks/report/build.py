"""Everything the report shows, as plain data (``report.json``), and the three files written from it."""
from __future__ import annotations

import datetime
import json
import os
from collections.abc import Sequence

from cloak.common.commands import check_out_folder
from cloak.common.io import write_atomic

from ..victims.base import versions
from .defences import defence_rows
from .examples import examples_of
from .figures import (attack_order, budget_curves, coverage_rows, matrix_rows, missing_attacks, search_rows)
from .markdown import markdown
from .page import html
from .ranking import headlines, ranking
from .results import Results, attack_groups, attack_infos, names_of_labels, victim_facts


def build_report(results: Sequence[Results], *, curves: Sequence[str] = (), routing: Sequence[str] = (),
                 examples: int = 3, label_names: dict[int, str] | None = None) -> dict:
    """Everything the report shows, as plain data (``report.json``). ``curves``: folders of ``attacks
    curve``; ``routing``: folders of ``mmbert routing``; ``label_names`` overrides what each label is called."""
    labels = [r.label for r in results]
    if len(set(labels)) < len(labels):
        raise ValueError(f"two results folders share the label {labels}: give each its own (--label)")
    attacks = attack_order(results)
    headings = {name: info.heading for name, info in attack_infos(results).items()}
    names = names_of_labels(results, label_names)
    rows = matrix_rows(results, attacks, names)
    groups = ranking(results, rows, attacks)
    search = search_rows(results, attacks)
    return {
        "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "versions": {k: v for k, v in versions("torch", "scikit-learn").items() if v},
        "label_names": names,
        "results": [{"label": r.label, "path": os.path.abspath(r.path), "written": r.written,
                     "data": r.summary["data"], "attacks": r.summary["attacks"], "attack_groups": attack_groups(r),
                     "versions": {k: v for k, v in r.summary["versions"].items() if v},
                     "skipped": {v: e["skipped"] for v, e in r.run.get("victims", {}).items() if e.get("skipped")},
                     "victims": {v: victim_facts(r, v) for v in r.summary["victims"]},
                     "summary": r.summary} for r in results],
        "attacks": attacks,
        "headings": {a: headings[a] for a in attacks},
        "missing": missing_attacks(results, attacks),
        "headlines": headlines(rows, groups, search, names, attacks, headings),
        "matrix": rows,
        "ranking": groups,
        "coverage": coverage_rows(rows, attacks),
        "search": search,
        "defences": defence_rows(results, rows, attacks),
        "budget": budget_curves(results, rows, attacks),
        "examples": {row["row"]: examples_of(next(r for r in results if r.label == row["results"]), row["victim"],
                                             attacks, examples) for row in rows},
        "curves": [_read_json(d, "curve.json", "attacks curve") for d in curves],
        "routing": [_read_json(d, "routing.json", "mmbert routing") for d in routing],
    }


def _read_json(folder: str, name: str, command: str) -> dict:
    path = os.path.join(folder, name)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{folder}: no {name}: not a folder written by `{command}`")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def write_report(report: dict, out_dir: str) -> dict[str, str]:
    """``report.json``, ``report.md`` and ``report.html`` in ``out_dir``; returns their paths."""
    check_out_folder("--out", out_dir)
    os.makedirs(out_dir, exist_ok=True)
    paths = {kind: os.path.join(out_dir, f"report.{kind}") for kind in ("json", "md", "html")}
    write_atomic(paths["json"], (json.dumps(report, indent=1, ensure_ascii=False, allow_nan=False) + "\n").encode())
    write_atomic(paths["md"], markdown(report).encode())
    write_atomic(paths["html"], html(report).encode())
    return paths
