"""Which detector holds up best under cloaking, and what the figures say, in sentences.

Detectors are ranked by macro-F1 *under* the cloak attacks (DESIGN §9a(5)), never by the drop alone, and
every detector ranked together is judged on the same attacks: those every one of them is judged by (unseen
in its training, applied to at least 5% of the posts, and behind ``cloak unveil`` made by foreign ops, not by the
tables unveil reads with: DESIGN §9c(3)). A mean over seven attacks beside a mean over
thirteen compares the attacks as much as the detectors. Where the folders compared share no such attack,
each folder's rows are ranked apart. The best row's lead over each other carries its paired bootstrap
interval, and the attacks outside the ranking's under which the best row does worse are said beside it.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cloak.common.commands import plural
from cloak.ops import foreign_ops

from ..bootstrap import excludes_zero, mean_difference_interval
from .figures import counted, ranked_cells
from .results import Results
from .text import MOST_WORSE, attacks_text, change, flipped_text, interval_text, lead_bounds


def ranking(results: Sequence[Results], rows: Sequence[dict], attacks: Sequence[str]) -> list[dict]:
    """The ranking groups, each {"attacks": the attacks every row of it is judged on, "scope": None (every
    ranked row) or the folder whose rows it holds, "rows": its entries, best first}. An entry: the row's
    mean and worst macro-F1 under those attacks; after the first, the best row's lead over it with its
    paired bootstrap 95% interval (where both attacked the same posts) and ``worse``, the attacks outside
    the group's under which the best row does worse beyond the noise. Useless rows are left out."""
    by_label = {r.label: r for r in results}
    judged = [(row, counted(row, attacks)) for row in rows if not row["useless"]]
    groups = []
    for scope, common, members in _groups([(row, cells) for row, cells in judged if cells]):
        entries = sorted((_entry(row, common) for row in members), key=lambda e: -e["mean_f1"])
        for entry in entries[1:]:
            entry["lead"] = _lead(by_label, entries[0], entry, rows, attacks, common)
        groups.append({"attacks": common, "scope": scope, "rows": entries})
    return groups


def _groups(judged: list[tuple[dict, dict]]) -> list[tuple[str | None, list[str], list[dict]]]:
    """(scope, the attacks, the rows): every row on the attacks all of them are judged by; where there is
    none, each folder's rows on theirs (a row alone where its folder's share none either)."""
    if not judged:
        return []
    common = set.intersection(*(set(cells) for _, cells in judged))
    if common:
        return [(None, sorted(common), [row for row, _ in judged])]
    folders: dict[str, list[tuple[dict, dict]]] = {}
    for row, cells in judged:
        folders.setdefault(row["results"], []).append((row, cells))
    out = []
    for label, members in folders.items():
        shared = set.intersection(*(set(cells) for _, cells in members))
        out += [(label, sorted(shared), [row for row, _ in members])] if shared else \
            [(label, sorted(cells), [row]) for row, cells in members]
    return out


def _entry(row: dict, attacks: list[str]) -> dict:
    under = {a: row["cells"][a]["f1"] for a in attacks}
    worst = min(under, key=under.get)
    return {"row": row["row"], "results": row["results"], "victim": row["victim"], "clean_f1": row["clean_f1"],
            "mean_f1": float(np.mean(list(under.values()))),
            "mean_drop": float(np.mean([row["cells"][a]["drop"] for a in attacks])),
            "worst_f1": under[worst], "worst_attack": worst, "attacks": attacks, "f1": under}


def _lead(by_label: dict[str, Results], best: dict, entry: dict, rows: Sequence[dict], attacks: Sequence[str],
          common: list[str]) -> dict:
    first, second = by_label[best["results"]], by_label[entry["results"]]
    interval = _difference_interval(first, best["victim"], second, entry["victim"], common)
    cells = {r["row"]: r["cells"] for r in rows}
    worse = []
    for attack in attacks:
        mine, theirs = cells[best["row"]].get(attack) or {}, cells[entry["row"]].get(attack) or {}
        if attack in common or "f1" not in mine or "f1" not in theirs or mine["barely"] or theirs["barely"] or \
                mine["f1"] >= theirs["f1"]:
            continue
        gap = _difference_interval(second, entry["victim"], first, best["victim"], [attack])
        if gap is None or excludes_zero(gap):  # on other posts there is no interval: said as it is
            worse.append({"attack": attack, "f1": mine["f1"], "other": theirs["f1"], "interval": gap})
    worse.sort(key=lambda w: w["f1"] - w["other"])
    return {"over": entry["row"], "of": best["row"], "value": best["mean_f1"] - entry["mean_f1"],
            "attacks": len(common), "interval": interval, "noise": not excludes_zero(interval),
            "worse": worse}


def _difference_interval(first: Results, a: str, second: Results, b: str, attacks: list[str]) -> list[float] | None:
    """The paired bootstrap 95% interval of victim ``a``'s mean macro-F1 under ``attacks`` minus ``b``'s; None
    where they attacked other posts."""
    if not first.comparable(second):
        return None
    labels = first.labels(a)
    if not np.array_equal(labels, second.labels(b)):
        return None
    width = max(len(first.summary["data"].get("label_names") or {}), int(labels.max()) + 1, 2)
    return mean_difference_interval(labels, [first.predictions(a, x) for x in attacks],
                                    [second.predictions(b, x) for x in attacks], width)


def headlines(rows: Sequence[dict], groups: Sequence[dict], search: Sequence[dict], names: dict[str, str],
              attacks: Sequence[str], headings: dict[str, str]) -> list[str]:
    """What the figures say, in sentences: per row (:func:`row_sentence`), useless rows named; then which
    row holds up best under cloaking and by how much, or that its lead is within the noise."""
    lines = []
    for row in rows:
        if row["useless"]:
            lines.append(f"{row['row']} is useless as trained: {row['useless']}; its figures under attack mean nothing "
                         "and it is left out of the ranking.")
        elif parts := row_parts(row, [s for s in search if s["row"] == row["row"]], names, attacks, headings):
            lines.append(f"{row['row']} (clean macro-F1 {row['clean_f1']:.3f}): " + "; ".join(parts) + ".")
    return lines + [line for group in groups for line in ranking_sentences(group, len(groups) > 1, headings)]


def row_parts(row: dict, search: Sequence[dict], names: dict[str, str], attacks: Sequence[str],
              headings: dict[str, str]) -> list[str]:
    """A row's worst cloak attack and mean drop over the attacks it is judged by, what was left out and why,
    and what its searches do by gold label."""
    cloaks = counted(row, attacks)
    every = ranked_cells(row, attacks)
    seen = [a for a in every if row["cells"][a]["seen"]]
    own = [a for a in every if row["cells"][a].get("own_tables") and not row["cells"][a]["seen"]]
    barely = [a for a in every if row["cells"][a]["barely"]]
    parts = []
    if cloaks:
        worst = max(cloaks, key=lambda a: cloaks[a]["drop"])
        mean = change(float(np.mean([c["drop"] for c in cloaks.values()])))
        judged = plural(len(cloaks), "cloak attack") + (" it did not see in training" if seen else "") + \
            (" from other sources than its defence's tables" if own else "")
        if change(cloaks[worst]["drop"]).startswith("-"):
            parts.append(f"loses most to {headings[worst]} ({change(cloaks[worst]['drop'])} macro-F1"
                         f"{interval_text(cloaks[worst]['interval'])}), {mean} on average over {judged}")
        else:  # "loses most to radical (0.000)" would name an attack it does not lose to
            parts.append(f"loses nothing to any of {judged} ({mean} on average)")
    elif seen:
        parts.append(f"every cloak attack applied here cloaks with an op it was trained on ({len(seen)} of them): "
                     "its figures under them are in-distribution and flatter it, so they are no robustness "
                     "estimate; attack it with ops it did not see")
    elif own:
        parts.append(f"every cloak attack applied here is made by the tables its defence reads with ({len(own)} of "
                     "them): cloak unveil reads them back whole, which flatters it, so they are no robustness "
                     f"estimate; attack it with ops from other sources ({', '.join(foreign_ops())})")
    if seen and cloaks:
        seen_drop = float(np.mean([row["cells"][a]["drop"] for a in seen]))
        parts.append(f"{plural(len(seen), 'attack')} whose op it saw in training left out ({change(seen_drop)} "
                     "on average under them, in distribution)")
    if own and cloaks:
        own_drop = float(np.mean([row["cells"][a]["drop"] for a in own]))
        parts.append(f"{plural(len(own), 'attack')} made by its defence's own tables left out ({change(own_drop)} "
                     "on average under them, read back by the tables that made them)")
    if barely:
        parts.append(f"barely applied, left out: {', '.join(headings[a] for a in barely)}")
    for s in search:
        if s["success_rate"] is not None:
            by_label = [flipped_text(k, c, names) for k, c in sorted(s["by_label"].items(), reverse=True)
                        if c["right"]]
            parts.append(f"{headings[s['attack']]} flips {s['success_rate']:.0%} of the posts it got right"
                         + (f" ({'; '.join(by_label)})" if by_label else ""))
    return parts


def ranking_sentences(group: dict, scoped: bool, headings: dict[str, str]) -> list[str]:
    """Which row of a group holds up best under cloaking, over which attacks, and the attacks under which
    another does better; the next and by how much (or that the lead is within the noise); and the row that
    loses least if that is another."""
    ranked = group["rows"]
    if len(ranked) < 2:
        return []
    best, second = ranked[0], ranked[1]
    worse = "; ".join(_worse_clause(best, e, w, headings) for e in ranked[1:] for w in e["lead"]["worse"][:MOST_WORSE])
    opening, who = (f"Among the rows of {group['scope']}, holds up best", f"every ranked row of {group['scope']}") \
        if scoped else ("Holds up best", "every ranked row")
    lines = [f"{opening} under cloaking: {best['row']}, macro-F1 {best['mean_f1']:.3f} on average under "
             f"{attacks_text(group, headings.__getitem__, who)} ({best['worst_f1']:.3f} at worst, under "
             f"{headings[best['worst_attack']]})" + (f"; {worse}" if worse else "") + "."]
    lead = second["lead"]
    over = (f"over the {plural(lead['attacks'], 'attack')} both are judged by, {best['row']} leads by "
            f"{lead['value']:.3f}")
    if lead["interval"] is None:
        verdict = f"{over}; they attacked other posts, so the lead has no interval"
    elif lead["noise"]:
        verdict = f"{over}, within the noise (95% interval {lead_bounds(lead['interval'])})"
    else:
        verdict = f"{over}, 95% interval {lead_bounds(lead['interval'])}"
    lines.append(f"Next: {second['row']}, {second['mean_f1']:.3f} under {plural(len(second['attacks']), 'attack')} "
                 f"({second['worst_f1']:.3f} at worst); {verdict}.")
    least = min(ranked, key=lambda e: e["mean_drop"])
    if least is not best:
        lines.append(f"{least['row']} loses the least to cloaking ({change(least['mean_drop'])} on average) but "
                     f"scores lower under it: it starts at {least['clean_f1']:.3f}.")
    return lines


def _worse_clause(best: dict, other: dict, worse: dict, headings: dict[str, str]) -> str:
    """``but search hurts A more than B (macro-F1 0.017 under it against 0.068; the gap's 95% interval
    [+0.030, +0.072])``."""
    gap = f"; the gap's 95% interval {lead_bounds(worse['interval'])}" if worse["interval"] else ""
    return (f"but {headings[worse['attack']]} hurts {best['row']} more than {other['row']} (macro-F1 "
            f"{worse['f1']:.3f} under it against {worse['other']:.3f}{gap})")
