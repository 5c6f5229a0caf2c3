"""The figures' data, from the folders' summaries and what each attack declared: the order of the attacks,
the robustness matrix, the coverage table, the search table and the budget curves."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mmbert.metrics import useless_reason

from ..attack import FIGURES
from ..cloaking import attack_ops, foreign_attack
from ..bootstrap import excludes_zero
from .results import AttackInfo, Results, attack_infos, trained_ops, victim_facts


def row_name(results: Sequence[Results], result: Results, victim: str) -> str:
    """A row's name: the victim's, after its folder's label when several folders compare."""
    return victim if len(results) == 1 else f"{result.label} / {victim}"


def attack_order(results: Sequence[Results]) -> list[str]:
    """The attacks by the figure they declare (the cloaks, then the searches, then the rest, then the curves);
    within one, the most damaging first (mean macro-F1 drop over the rows), a curve's points by kind and
    axis."""
    infos, drops = attack_infos(results), {}
    for r in results:
        for entry in r.summary["victims"].values():
            for attack, figures in entry["attacks"].items():
                drops.setdefault(attack, [])
                if "skipped" not in figures:
                    drops[attack].append(figures["drop"]["f1"])

    def key(attack: str) -> tuple:
        info = infos[attack]
        place = FIGURES.index(info.shown.figure)
        if info.shown.axis:
            return place, info.kind, float(info.settings.get(info.shown.axis, 0))
        return place, "", -float(np.mean(drops[attack])) if drops[attack] else 0.0
    return sorted(drops, key=key)


def matrix_cell(info: AttackInfo, settings: dict, figures: dict, seen_ops: set[str], defended: bool = False) -> dict:
    """One (row, attack): the attacked macro-F1, the drop and its interval, the posts it reached, whether it
    was barely applied (under 5% of the posts), seen in training (its op cloaked the victim's training data)
    or made by its defence's tables (``own_tables``: a victim behind ``cloak unveil`` cloaked by ops that are not
    foreign, which unveil reads back with the tables that made them), and the success rate (or why it was
    skipped)."""
    if "skipped" in figures:
        return {"skipped": figures["skipped"]}
    interval = (figures.get("drop_interval") or {}).get("f1")
    on_changed = figures.get("on_changed") or {}
    return {"kind": info.kind, "figure": info.shown.figure, "f1": figures["all"]["f1"], "drop": figures["drop"]["f1"],
            "interval": interval, "noise": interval is not None and not excludes_zero(interval),
            "accuracy": figures["all"]["accuracy"], "success_rate": figures["textattack"]["success_rate"],
            "changed": figures["changed"], "coverage": figures.get("coverage"),
            "barely": bool(figures.get("barely_applied")), "on_changed": on_changed.get("drop", {}).get("f1"),
            "on_changed_interval": (on_changed.get("drop_interval") or {}).get("f1"),
            "seen": info.shown.trained_ops and bool(attack_ops(settings) & seen_ops),
            # the attacks declaring their ops' cloaks in distribution for what was trained on them (the cloaks)
            "foreign": info.shown.trained_ops and foreign_attack(settings),
            "own_tables": defended and info.shown.trained_ops and not foreign_attack(settings)}


def matrix_rows(results: Sequence[Results], attacks: Sequence[str], names: dict[str, str]) -> list[dict]:
    """One row per (folder, victim): clean macro-F1, whether the victim is useless as trained, and a cell
    per attack its folder ran (:func:`matrix_cell`)."""
    infos, rows = attack_infos(results), []
    for r in results:
        for victim, entry in r.summary["victims"].items():
            facts = victim_facts(r, victim)
            cells = {a: matrix_cell(infos[a], r.summary["attacks"][a], entry["attacks"][a], trained_ops(facts),
                                    bool(facts.get("defence"))) for a in attacks if a in entry["attacks"]}
            predicted = entry.get("clean_predictions")  # summaries before it have none: macro-F1 alone then
            warning = useless_reason(entry["clean"]["f1"], entry["clean"]["n"], predicted, "clean posts", names)
            rows.append({"row": row_name(results, r, victim), "results": r.label, "victim": victim, "facts": facts,
                         "clean_f1": entry["clean"]["f1"], "clean_accuracy": entry["clean"]["accuracy"],
                         "posts": entry["clean"]["n"], "predicted": predicted or {}, "useless": warning,
                         "cells": cells})
    return rows


def ranked_cells(row: dict, attacks: Sequence[str]) -> list[str]:
    """The attacks of a row whose figure is the ranked one (the cloaks), seen, made by its defence's tables or
    barely applied or not."""
    return [a for a in attacks if (row["cells"].get(a) or {}).get("figure") == "ranked"]


def counted(row: dict, attacks: Sequence[str]) -> dict[str, dict]:
    """The cloak attacks a row's robustness is judged by: those applied to at least 5% of the posts whose
    op the victim did not see in training (an augmented detector attacked by its own generator is tested
    in distribution, which flatters it) and, behind ``cloak unveil``, made by foreign ops (unveil reads the
    project's own cloaks back with the tables that made them, which flatters it just as much)."""
    return {a: c for a in ranked_cells(row, attacks)
            if not (c := row["cells"][a])["barely"] and not c["seen"] and not c.get("own_tables")}


def missing_attacks(results: Sequence[Results], attacks: Sequence[str]) -> dict[str, list[str]]:
    """Per folder that lacks some, the attacks of the report its run did not include (a blank in its rows)."""
    lacking = {r.label: [a for a in attacks if a not in r.summary["attacks"]] for r in results}
    return {label: names for label, names in lacking.items() if names}


def coverage_rows(rows: Sequence[dict], attacks: Sequence[str]) -> list[dict]:
    """Per cloak attack: the posts it changed (of all, of the offensive), and for every row that any cloak
    attacked the drop over all posts and over the posts it reached, each with its interval (None where the
    row's run did not include the attack)."""
    covered = [row for row in rows if any(row["cells"][a].get("coverage") for a in ranked_cells(row, attacks))]
    out = []
    for attack in attacks:
        cells = [(row["row"], row["cells"].get(attack) or {}) for row in covered]
        found = [c for _, c in cells if c.get("figure") == "ranked" and c.get("coverage")]
        if found:
            out.append({"attack": attack, "coverage": found[0]["coverage"], "barely": found[0]["barely"],
                        "rows": [{"row": name, "drop": c.get("drop"), "interval": c.get("interval"),
                                  "seen": c.get("seen", False), "own_tables": c.get("own_tables", False),
                                  "on_changed": c.get("on_changed"),
                                  "on_changed_interval": c.get("on_changed_interval")} for name, c in cells]})
    return out


def search_rows(results: Sequence[Results], attacks: Sequence[str]) -> list[dict]:
    """The attacks shown by their counts (the searches), counted as TextAttack counts, overall and by gold
    label (``by_label``: per label, the posts the victim got right and how many of them the search flipped)."""
    infos, rows = attack_infos(results), []
    for r in results:
        for victim, entry in r.summary["victims"].items():
            for attack in attacks:
                figures = entry["attacks"].get(attack)
                if figures is None or "skipped" in figures or infos[attack].shown.figure != "counts":
                    continue
                counts = figures["textattack"]
                rows.append({"row": row_name(results, r, victim), "attack": attack,
                             "clean_f1": entry["clean"]["f1"], "f1": figures["all"]["f1"],
                             "success_rate": counts["success_rate"], "by_label": {
                                 k: {"right": c["successes"] + c["failures"], "flipped": c["successes"],
                                     "rate": c["success_rate"]}
                                 for k, c in figures.get("textattack_by_label", {}).items()},
                             "accuracy_under_attack": counts["accuracy_under_attack"],
                             "perturbed_share": figures["perturbed_share"],
                             "queries_per_example": counts["queries_per_example"],
                             "successes": counts["successes"], "failures": counts["failures"],
                             "skipped": counts["skipped"]})
    return rows


def budget_curves(results: Sequence[Results], rows: Sequence[dict], attacks: Sequence[str]) -> list[dict]:
    """Accuracy against each curve's axis (eps), a curve per row and kind; at 0 the clean accuracy."""
    infos = attack_infos(results)
    curving = [infos[a] for a in attacks if infos[a].shown.figure == "curve"]
    curves = []
    for row in rows:
        for kind in dict.fromkeys(info.kind for info in curving):
            shown = next(info.shown for info in curving if info.kind == kind)
            points = [(0.0, row["clean_accuracy"])]
            for info in curving:
                cell = row["cells"].get(info.name)
                at = float(info.settings.get(info.shown.axis, 0))  # without its axis setting: no point
                if info.kind == kind and at > 0 and cell and "skipped" not in cell:  # 0 is the clean point
                    points.append((at, cell["accuracy"]))
            if len(points) > 1:
                curves.append({"row": row["row"], "kind": kind, "axis": shown.axis, "axis_text": shown.axis_text,
                               "points": points})
    return curves
