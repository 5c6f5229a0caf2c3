"""The robustness report: folders of ``attacks evaluate`` -> ``report.json``, ``report.md``, ``report.html``.

``report.json`` holds every number (each folder's whole summary with its settings, data hash and
versions); ``report.md`` the tables, to paste into an issue or a paper; ``report.html`` one page that
works offline: plots inline as SVG (text drawn as paths), no script, nothing fetched, and every text from
the data escaped by jinja2's autoescape, under a content-security policy that would block a script anyway.

What a person can quote from it, and how sure it is:

- every drop carries its paired bootstrap 95% interval (:mod:`attacks.bootstrap`); a drop whose interval
  holds zero is marked as within the noise;
- "holds up best" ranks the victims by macro-F1 *under* the cloak attacks (the mean over them, and the
  worst case), not by the drop alone: a detector that starts low, or says one label for every post,
  loses little and detects little. A victim that predicts one label for every clean post, or scores
  below 0.5 macro-F1 clean, is flagged and left out; the lead over the next victim carries its interval;
- the search is split by gold label: an offensive post flipped evades the detector, a non-offensive one
  flipped is a false alarm;
- each victim is described: its kind, settings, the data it was trained on and the cloaks that data
  carried.

Several folders (say, one detector before and after training on cloaked posts) compare side by side:
each (folder, victim) is a row.
"""
from __future__ import annotations

import dataclasses
import datetime
import io
import json
import os
from collections.abc import Sequence

import numpy as np

from cloak.commands import check_out_folder, plural
from cloak.edits import invert_edits, output_spans
from cloak.io import label_name, write_atomic
from mmbert.metrics import useless_reason

from .bootstrap import excludes_zero, mean_difference_interval
from .evaluate import META, SUMMARY, outcome_file
from .victims.base import versions

TEMPLATE = "report.html.j2"
MIN_EXAMPLE_CHARS, MAX_EXAMPLE_CHARS = 15, 160  # the posts shown as examples, when there are such


@dataclasses.dataclass
class Results:
    """One ``attacks evaluate`` folder: its summary, what was run, and the label its rows carry."""

    path: str
    label: str
    summary: dict
    run: dict
    written: str  # when summary.json was written (ISO time)

    def kind(self, attack: str) -> str:
        """``cloak``, ``search``, ``fgm`` or ``pgd``: what the summary recorded of the attack."""
        return self.summary["attacks"][attack]["kind"]

    def comparable(self, other: Results) -> bool:
        """Whether both attacked the same posts, so their figures pair post by post."""
        keys = ("sha256", "records", "limit", "shard")
        return all(self.summary["data"].get(k) == other.summary["data"].get(k) for k in keys)


def load_results(path: str, label: str | None = None) -> Results:
    summary_path, run_path = os.path.join(path, SUMMARY), os.path.join(path, META)
    if not os.path.isdir(path):
        raise FileNotFoundError(f"{path}: no such folder (give the --out folder of `attacks evaluate`)")
    if not os.path.isfile(summary_path):
        if os.path.isfile(run_path):
            raise ValueError(f"{path}: unfinished (`attacks evaluate` stopped before it wrote {SUMMARY}): rerun the "
                             "same command to finish it")
        raise FileNotFoundError(f"{path}: no {SUMMARY}: not a folder written by `attacks evaluate --out {path}`")
    with open(summary_path, encoding="utf-8") as f:
        summary = json.load(f)
    run = {}
    if os.path.isfile(run_path):
        with open(run_path, encoding="utf-8") as f:
            run = json.load(f)
    written = datetime.datetime.fromtimestamp(os.path.getmtime(summary_path), datetime.timezone.utc)
    return Results(path, label or os.path.basename(os.path.normpath(path)), summary, run,
                   written.isoformat(timespec="seconds"))


def short_name(attack: str) -> str:
    """``cloak:homophone`` -> ``homophone``: the column headings of the matrix."""
    return attack.removeprefix("cloak:")


def attack_kinds(results: Sequence[Results]) -> dict[str, str]:
    """Every attack of the folders and its kind, as each summary recorded it."""
    return {a: r.kind(a) for r in results for a in r.summary["attacks"]}


def attack_order(results: Sequence[Results]) -> list[str]:
    """Cloak attacks, the most damaging first (mean macro-F1 drop over the rows), then the searches, then
    FGM and PGD by eps."""
    kinds, drops = attack_kinds(results), {}
    for r in results:
        for entry in r.summary["victims"].values():
            for attack, figures in entry["attacks"].items():
                drops.setdefault(attack, [])
                if "skipped" not in figures:
                    drops[attack].append(figures["drop"]["f1"])
    settings = {a: s for r in results for a, s in r.summary["attacks"].items()}

    def key(attack: str):
        kind = kinds[attack]
        if kind in ("fgm", "pgd"):
            return (2, kind, float(settings[attack]["eps"]))
        return (0 if kind == "cloak" else 1, "", -float(np.mean(drops[attack])) if drops[attack] else 0.0)
    return sorted(drops, key=key)


def attack_groups(result: Results) -> list[dict]:
    """The attacks of a folder grouped by their settings, for a header a person reads: {"kind", "settings",
    "ops": [the ops or mixes run with those settings]}."""
    groups: dict[str, dict] = {}
    for settings in result.summary["attacks"].values():
        rest = {k: v for k, v in settings.items() if k not in ("kind", "ops", "eps")}
        key = json.dumps([settings["kind"], rest], sort_keys=True)
        group = groups.setdefault(key, {"kind": settings["kind"], "settings": rest, "ops": []})
        group["ops"].append(str(settings["eps"]) if "eps" in settings else settings.get("ops", ""))
    return list(groups.values())


def victim_facts(result: Results, victim: str) -> dict:
    """What the folder recorded of a victim: kind, settings, training data and the cloaks it carried."""
    facts = result.summary["victims"][victim].get("facts") or \
        (result.run.get("victims", {}).get(victim) or {}).get("facts") or {}
    return {"kind": facts.get("kind", "?"), "settings": facts.get("settings", "not recorded"),
            "trained_on": facts.get("trained_on"), "fingerprint": facts.get("fingerprint")}


def names_of_labels(results: Sequence[Results], given: dict[int, str] | None = None) -> dict[str, str]:
    """Each label's name: ``given`` (``--label-names``), else as the folders recorded them, else the
    default (non-offensive / offensive, "offensive (label k)" beyond)."""
    found = {k for r in results for e in r.summary["victims"].values() for f in e["attacks"].values()
             for k in f.get("textattack_by_label", {})}
    names = {k: label_name(k) for k in sorted(found | {"0", "1"})}
    for r in results:
        names.update(r.summary["data"].get("label_names") or {})
    names.update({str(k): v for k, v in (given or {}).items()})
    return names


# --- the figures ----------------------------------------------------------------------------------------

def matrix_rows(results: Sequence[Results], attacks: Sequence[str], names: dict[str, str]) -> list[dict]:
    """One row per (folder, victim): clean macro-F1, whether the victim is useless as trained, and per
    attack the attacked macro-F1, the drop and its interval, the posts it reached, whether it was barely
    applied (under 5% of the posts) or seen in training (its op cloaked the victim's training data), and
    the success rate (or why it was skipped)."""
    kinds, rows = attack_kinds(results), []
    for r in results:
        for victim, entry in r.summary["victims"].items():
            facts = victim_facts(r, victim)
            trained_ops = set(((facts["trained_on"] or {}).get("train", {}).get("cloaked") or {}).get("ops", {}))
            cells = {}
            for attack in attacks:
                figures = entry["attacks"].get(attack)
                if figures is None:
                    continue
                if "skipped" in figures:
                    cells[attack] = {"skipped": figures["skipped"]}
                    continue
                interval = (figures.get("drop_interval") or {}).get("f1")
                ops = attack_ops(r.summary["attacks"][attack])
                cells[attack] = {"kind": kinds[attack], "f1": figures["all"]["f1"], "drop": figures["drop"]["f1"],
                                 "interval": interval, "noise": interval is not None and not excludes_zero(interval),
                                 "accuracy": figures["all"]["accuracy"],
                                 "success_rate": figures["textattack"]["success_rate"], "changed": figures["changed"],
                                 "coverage": figures.get("coverage"), "barely": bool(figures.get("barely_applied")),
                                 "on_changed": (figures.get("on_changed") or {}).get("drop", {}).get("f1"),
                                 "on_changed_interval": ((figures.get("on_changed") or {}).get("drop_interval") or {})
                                 .get("f1"),
                                 "seen": kinds[attack] == "cloak" and bool(ops & trained_ops)}
            predicted = entry.get("clean_predictions")  # summaries before it have none: macro-F1 alone then
            warning = useless_reason(entry["clean"]["f1"], entry["clean"]["n"], predicted, "clean posts", names)
            rows.append({"row": victim if len(results) == 1 else f"{r.label} / {victim}", "results": r.label,
                         "victim": victim, "facts": facts, "clean_f1": entry["clean"]["f1"],
                         "clean_accuracy": entry["clean"]["accuracy"], "posts": entry["clean"]["n"],
                         "predicted": predicted or {}, "useless": warning, "cells": cells})
    return rows


def attack_ops(settings: dict) -> set[str]:
    """The op names an attack cloaks with (``homophone:share=1,emoji`` -> {homophone, emoji})."""
    return {spec.split(":")[0] for spec in str(settings.get("ops", "")).split(",") if spec}


def counted(row: dict, attacks: Sequence[str]) -> dict[str, dict]:
    """The cloak attacks a row's robustness is judged by: those applied to at least 5% of the posts whose
    op the victim did not see in training (an augmented detector attacked by its own generator is tested
    in distribution, which flatters it)."""
    return {a: c for a in attacks if (c := row["cells"].get(a) or {}).get("kind") == "cloak"
            and not c["barely"] and not c["seen"]}


def ranking(results: Sequence[Results], rows: Sequence[dict], attacks: Sequence[str]) -> list[dict]:
    """The rows by macro-F1 under the cloak attacks each did not see in training (the mean over them; the
    worst case beside it), best first, useless rows left out; each after the first with the best row's
    lead over it on the attacks both are judged by, and that lead's paired bootstrap 95% interval (where
    both attacked the same posts)."""
    by_label = {r.label: r for r in results}
    entries = []
    for row in rows:
        under = {a: c["f1"] for a, c in counted(row, attacks).items()}
        if not under or row["useless"]:
            continue
        worst = min(under, key=under.get)
        entries.append({"row": row["row"], "results": row["results"], "victim": row["victim"],
                        "clean_f1": row["clean_f1"], "mean_f1": float(np.mean(list(under.values()))),
                        "mean_drop": float(np.mean([row["cells"][a]["drop"] for a in under])),
                        "worst_f1": under[worst], "worst_attack": worst, "attacks": sorted(under), "f1": under})
    entries.sort(key=lambda e: -e["mean_f1"])
    if entries:
        best = entries[0]
        for entry in entries[1:]:
            common = sorted(set(best["attacks"]) & set(entry["attacks"]))
            value = float(np.mean([best["f1"][a] - entry["f1"][a] for a in common])) if common else None
            interval = _lead_interval(by_label[best["results"]], best["victim"], by_label[entry["results"]],
                                      entry["victim"], common) if common else None
            entry["lead"] = {"over": entry["row"], "of": best["row"], "value": value, "attacks": len(common),
                             "interval": interval, "noise": not excludes_zero(interval)}
    return entries


def _lead_interval(first: Results, a: str, second: Results, b: str, attacks: list[str]) -> list[float] | None:
    if not first.comparable(second):
        return None
    labels = _labels(first, a)
    if not np.array_equal(labels, _labels(second, b)):
        return None
    width = max(len(first.summary["data"].get("label_names") or {}), int(labels.max()) + 1, 2)
    return mean_difference_interval(labels, [_predictions(first, a, x) for x in attacks],
                                    [_predictions(second, b, x) for x in attacks], width)


def _outcomes(result: Results, victim: str, name: str) -> list[dict]:
    with open(os.path.join(result.path, victim, name), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _labels(result: Results, victim: str) -> np.ndarray:
    return np.array([o["label"] for o in _outcomes(result, victim, "clean.jsonl")])


def _predictions(result: Results, victim: str, attack: str) -> np.ndarray:
    """Each post's predicted label under ``attack``; -1 where unanswered."""
    return np.array([-1 if o["probs"] is None else int(np.argmax(o["probs"]))
                     for o in _outcomes(result, victim, outcome_file(attack))])


def search_rows(results: Sequence[Results], attacks: Sequence[str]) -> list[dict]:
    """The searches, counted as TextAttack counts, overall and by gold label (``by_label``: per label, the
    posts the victim got right and how many of them the search flipped)."""
    rows = []
    for r in results:
        for victim, entry in r.summary["victims"].items():
            for attack in attacks:
                figures = entry["attacks"].get(attack)
                if figures is None or "skipped" in figures or r.kind(attack) != "search":
                    continue
                counts = figures["textattack"]
                rows.append({"row": victim if len(results) == 1 else f"{r.label} / {victim}", "attack": attack,
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


def flipped_text(label: str, counts: dict, names: dict[str, str]) -> str:
    """``106 of 106 offensive posts it caught get past it`` / ``155 of 180 non-offensive posts it cleared
    become false alarms``: what a search's flips of one gold label mean."""
    if label == "0":
        return f"{counts['flipped']} of {counts['right']} {names[label]} posts it cleared become false alarms"
    return f"{counts['flipped']} of {counts['right']} {names[label]} posts it caught get past it"


def headlines(rows: Sequence[dict], ranked: Sequence[dict], search: Sequence[dict], names: dict[str, str],
              attacks: Sequence[str]) -> list[str]:
    """What the figures say, in sentences: per row its worst cloak attack and mean drop over the attacks it
    is judged by (unseen in training, applied to at least 5% of the posts), what was left out and why, and
    what the search does by gold label; useless rows named; then which row holds up best under cloaking
    and by how much, or that its lead is within the noise."""
    lines = []
    for row in rows:
        if row["useless"]:
            lines.append(f"{row['row']} is useless as trained: {row['useless']}; its figures under attack mean nothing "
                         "and it is left out of the ranking.")
            continue
        cloaks = counted(row, attacks)
        every = [a for a in attacks if row["cells"].get(a, {}).get("kind") == "cloak"]
        seen = [a for a in every if row["cells"][a]["seen"]]
        barely = [a for a in every if row["cells"][a]["barely"]]
        parts = []
        if cloaks:
            worst = max(cloaks, key=lambda a: cloaks[a]["drop"])
            parts.append(f"loses most to {short_name(worst)} ({change(cloaks[worst]['drop'])} macro-F1"
                         f"{interval_text(cloaks[worst]['interval'])}), "
                         f"{change(float(np.mean([c['drop'] for c in cloaks.values()])))} on average over "
                         f"{plural(len(cloaks), 'cloak attack')}" + (" it did not see in training" if seen else ""))
        elif seen:
            parts.append(f"every cloak attack applied here cloaks with an op it was trained on ({len(seen)} of them): "
                         "its figures under them are in-distribution and flatter it, so they are no robustness "
                         "estimate; attack it with ops it did not see")
        if seen and cloaks:
            seen_drop = float(np.mean([row["cells"][a]["drop"] for a in seen]))
            parts.append(f"{plural(len(seen), 'attack')} whose op it saw in training left out ({change(seen_drop)} "
                         "on average under them, in distribution)")
        if barely:
            parts.append(f"barely applied, left out: {', '.join(short_name(a) for a in barely)}")
        for s in search:
            if s["row"] == row["row"] and s["success_rate"] is not None:
                by_label = [flipped_text(k, c, names) for k, c in sorted(s["by_label"].items(), reverse=True)
                            if c["right"]]
                parts.append(f"{short_name(s['attack'])} flips {s['success_rate']:.0%} of the posts it got right"
                             + (f" ({'; '.join(by_label)})" if by_label else ""))
        if parts:
            lines.append(f"{row['row']} (clean macro-F1 {row['clean_f1']:.3f}): " + "; ".join(parts) + ".")
    return lines + ranking_sentences(ranked)


def ranking_sentences(ranked: Sequence[dict]) -> list[str]:
    """Which row holds up best under cloaking, the next and by how much (or that the lead is within the
    noise), and the row that loses least if that is another."""
    if len(ranked) < 2:
        return []
    lines = []
    best, second = ranked[0], ranked[1]
    lines.append(f"Holds up best under cloaking: {best['row']}, macro-F1 {best['mean_f1']:.3f} on average under "
                 f"{plural(len(best['attacks']), 'cloak attack')} ({best['worst_f1']:.3f} at worst, under "
                 f"{short_name(best['worst_attack'])}).")
    lead = second["lead"]
    if lead["value"] is None:
        verdict = "no cloak attack counts for both (seen in training, or barely applied), so they are not compared"
    else:
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


def embedding_curves(results: Sequence[Results], rows: Sequence[dict], attacks: Sequence[str]) -> list[dict]:
    """Accuracy against eps per row for FGM and PGD (eps 0 is the clean accuracy)."""
    settings = {a: s for r in results for a, s in r.summary["attacks"].items()}
    curves = []
    for row in rows:
        for kind in ("fgm", "pgd"):
            points = [(0.0, row["clean_accuracy"])]
            for attack in attacks:
                cell = row["cells"].get(attack)
                eps = float(settings[attack]["eps"]) if settings[attack]["kind"] == kind else 0.0
                if eps > 0 and cell and "skipped" not in cell:  # eps 0 is the clean point already there
                    points.append((eps, cell["accuracy"]))
            if len(points) > 1:
                curves.append({"row": row["row"], "kind": kind, "points": points})
    return curves


def examples_of(result: Results, victim: str, attacks: Sequence[str], limit: int) -> list[dict]:
    """Up to ``limit`` posts the victim got right and an attack flipped, one per attack — the searches
    first (the most damaging attack, which the cloak ops would otherwise crowd out), then the cloak attacks,
    the most damaging first — and no post twice, each the shortest of at least ``MIN_EXAMPLE_CHARS``
    characters: the original and the adversarial text as segments, the edited ones marked with their op."""
    entry = result.summary["victims"][victim]
    folder = os.path.join(result.path, victim)
    clean_path = os.path.join(folder, "clean.jsonl")
    if not os.path.isfile(clean_path):
        return []
    clean = _outcomes(result, victim, "clean.jsonl")
    chosen: list[dict] = []
    seen: set = set()
    textual = [a for a in attacks if result.kind(a) in ("search", "cloak")] if attacks else []
    for attack in sorted(textual, key=lambda a: result.kind(a) != "search"):
        if len(chosen) >= limit:
            break
        path = os.path.join(folder, outcome_file(attack))
        if "skipped" in entry["attacks"].get(attack, {"skipped": ""}) or not os.path.isfile(path):
            continue
        best = None
        with open(path, encoding="utf-8") as f:
            for line, before in zip(f, clean):
                outcome = json.loads(line)
                if not outcome["edits"] or not _flipped(outcome["label"], before["probs"], outcome["probs"]):
                    continue
                original = invert_edits(outcome["text"], outcome["edits"])
                if outcome["id"] in seen or len(original) > MAX_EXAMPLE_CHARS:
                    continue
                if best is None or _example_rank(original) < _example_rank(best[0]):
                    best = (original, outcome, before)
        if best:
            original, outcome, before = best
            seen.add(outcome["id"])
            label = outcome["label"]
            chosen.append({"attack": attack, "id": outcome["id"], "label": label,
                           "clean_p": before["probs"][label], "attacked_p": outcome["probs"][label],
                           "queries": outcome.get("queries"), "edits": outcome["edits"],
                           "original": source_segments(original, outcome["edits"]),
                           "adversarial": output_segments(outcome["text"], outcome["edits"])})
    return chosen


def _example_rank(text: str) -> tuple:
    """Short posts read fastest, but a post of a few characters shows little of how posters write."""
    return (len(text) < MIN_EXAMPLE_CHARS, len(text))


def _flipped(label: int, before: list, after: list | None) -> bool:
    if after is None or any(p is None for p in after):
        return False
    return int(np.argmax(before)) == label and int(np.argmax(after)) != label


def source_segments(text: str, edits: Sequence[dict]) -> list[dict]:
    """The original text cut into plain and edited pieces ({"text", "op"}; op None where untouched)."""
    return _segments(text, [(e["start"], e["end"], e["op"]) for e in edits])


def output_segments(text: str, edits: Sequence[dict]) -> list[dict]:
    return _segments(text, [(start, end, edit.op) for edit, start, end in output_spans(edits)])


def _segments(text: str, spans: Sequence[tuple[int, int, str]]) -> list[dict]:
    pieces, at = [], 0
    for start, end, op in sorted(spans):
        if start > at:
            pieces.append({"text": text[at:start], "op": None})
        pieces.append({"text": text[start:end], "op": op})
        at = end
    if at < len(text):
        pieces.append({"text": text[at:], "op": None})
    return pieces


def build_report(results: Sequence[Results], *, curves: Sequence[str] = (), routing: Sequence[str] = (),
                 examples: int = 3, label_names: dict[int, str] | None = None) -> dict:
    """Everything the report shows, as plain data (``report.json``). ``curves``: folders of ``attacks
    curve``; ``routing``: folders of ``mmbert routing``; ``label_names`` overrides what each label is called."""
    labels = [r.label for r in results]
    if len(set(labels)) < len(labels):
        raise ValueError(f"two results folders share the label {labels}: give each its own (--label)")
    attacks = attack_order(results)
    names = names_of_labels(results, label_names)
    rows = matrix_rows(results, attacks, names)
    ranked = ranking(results, rows, attacks)
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
        "headlines": headlines(rows, ranked, search, names, attacks),
        "matrix": rows,
        "ranking": ranked,
        "coverage": coverage_rows(rows, attacks),
        "search": search,
        "embedding": embedding_curves(results, rows, attacks),
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


# --- text -----------------------------------------------------------------------------------------------

def change(drop: float) -> str:
    """A drop in macro-F1 as the signed change a reader expects (-0.123: lost 0.123), 0.000 for no change."""
    return "0.000" if abs(drop) < 0.0005 else f"{-drop:+.3f}"


def bounds(interval: Sequence[float] | None) -> str:
    """A drop's interval as the change it bounds: drop [0.06, 0.12] -> ``[-0.120, -0.060]``."""
    if interval is None:
        return ""
    low, high = sorted(-x for x in interval)
    return lead_bounds([low, high])


def interval_text(interval: Sequence[float] | None) -> str:
    return "" if interval is None else f", 95% interval {bounds(interval)}"


def lead_bounds(interval: Sequence[float] | None) -> str:
    """``[-0.013, +0.045]`` (no -0.000: a bound that rounds to zero is zero)."""
    if interval is None:
        return ""
    low, high = (round(x, 3) or 0.0 for x in interval)
    return f"[{low:+.3f}, {high:+.3f}]"


def _pct(x: float | None) -> str:
    return _num(x, ".1%")


def _num(x: float | None, spec: str) -> str:
    return "" if x is None else format(x, spec)


def flips_cell(counts: dict | None) -> str:
    """``106 / 106 (100.0%)``: posts of a gold label the search flipped, of those the victim got right."""
    if not counts or not counts["right"]:
        return ""
    return f"{counts['flipped']} / {counts['right']} ({_pct(counts['rate'])})"


def flips_heading(label: str, names: dict[str, str]) -> str:
    return f"{names[label]} posts flipped ({'false alarms' if label == '0' else 'evasion'})"


def _md(text: str) -> str:
    """Data text made inert in Markdown: no HTML, no links, no emphasis, no table breaks, one line."""
    text = " ".join(text.split())
    for ch in "\\`*_[]<>|#!~":
        text = text.replace(ch, "\\" + ch)
    return text


def trained_on_text(trained_on: dict | None, names: dict[str, str] | None = None) -> str:
    """``cold_train.jsonl (sha256 1a2b3c4d5e6f, 412 kB, 2,000 posts: 988 non-offensive, 1,012 offensive; 700 of
    them cloaked: homophone 300 (characters 280, whole word 20), ...)``: each op with the styles its edits show;
    ``names``: what each label is called."""
    if not trained_on or "train" not in trained_on:
        return "not recorded (train it with `attacks train` to have it recorded)"
    train = trained_on["train"]
    where = (f"{train['path']} (sha256 {train['sha256'][:12]}, {train['bytes'] / 1000:,.0f} kB, "
             if "path" in train else "(")
    labels = ", ".join(f"{n:,} {label_name(k, names)}" for k, n in train["labels"].items())
    cloaked = train["cloaked"]
    styles = cloaked.get("styles", {})  # recorded since issue 35; older victim.json files have none

    def styled(op: str) -> str:
        shown = ", ".join(f"{style} {n:,}" for style, n in styles.get(op, {}).items())
        return f" ({shown})" if shown else ""
    seen = (f"{cloaked['records']:,} of them cloaked: " + ", ".join(f"{op} {n:,}{styled(op)}"
                                                                       for op, n in cloaked["ops"].items())
            if cloaked["records"] else "no cloaked posts")
    return f"{where}{train['records']:,} {'post' if train['records'] == 1 else 'posts'}: {labels}; {seen})"


def _md_header(report: dict) -> list[str]:
    """The data, each victim, and the headlines."""
    out = ["# Robustness report", ""]
    out += [f"- `{r['label']}`: {plural(r['data'].get('records'), 'record')} of {_md(str(r['data'].get('path')))} "
            f"(sha256 {str(r['data'].get('sha256'))[:12]}), written {r['written']}" for r in report["results"]]
    described = {v: f for r in report["results"] for v, f in r["victims"].items()}  # each victim once
    out += [f"- `{_md(victim)}`: {_md(f['kind'])}, {_md(f['settings'])}; "
            f"trained on {_md(trained_on_text(f['trained_on'], report['label_names']))}"
            for victim, f in described.items()]
    out += [""] + [f"- {_md(line)}" for line in report["headlines"]]
    return out


def _md_matrix(report: dict) -> list[str]:
    """Clean macro-F1 and its change under each attack, a row a victim."""
    out: list[str] = []
    out += ["", "## Macro-F1 under each attack", "",
            "Clean macro-F1, then its change under each attack (attacked - clean) with the paired bootstrap 95% "
            "interval of the change; `~` marks a change within the noise (its interval holds zero); `-` where the "
            "attack does not apply.", ""]
    attacks = report["attacks"]
    out.append("| victim | clean | " + " | ".join(short_name(a) for a in attacks) + " |")
    out.append("|---|---:|" + "---:|" * len(attacks))
    for row in report["matrix"]:
        cells = [_md_cell(row["cells"].get(a)) for a in attacks]
        flag = " (useless as trained)" if row["useless"] else ""
        out.append(f"| {_md(row['row'])}{flag} | {row['clean_f1']:.3f} | " + " | ".join(cells) + " |")
    return out


def _md_coverage(report: dict) -> list[str]:
    """The posts each cloak attack changed, and the drops over all and over those."""
    if not report["coverage"]:
        return []
    out: list[str] = []
    out += ["", "## Coverage", "",
            "The posts each cloak attack changed, and each row's change in macro-F1 over all posts and over "
            "the posts it changed. An attack that changed under 5% of the posts is barely applied "
            "and counts in no average.", "",
            "| attack | posts changed | " + " | ".join(f"{_md(r['row'])}: all / changed" for r in
                                                     report["coverage"][0]["rows"]) + " |",
            "|---|---|" + "---|" * len(report["coverage"][0]["rows"])]
    for c in report["coverage"]:
        cells = [f"{change(x['drop'])} / {'' if x['on_changed'] is None else change(x['on_changed'])}"
                 f"{' (seen)' if x['seen'] else ''}" for x in c["rows"]]
        out.append(f"| {short_name(c['attack'])}{' (barely applied)' if c['barely'] else ''} | "
                   f"{coverage_text(c['coverage'])} | " + " | ".join(cells) + " |")
    return out


def _md_ranking(report: dict) -> list[str]:
    """Macro-F1 under the counted cloak attacks, the best first, with its lead."""
    if not report["ranking"]:
        return []
    out: list[str] = []
    out += ["", "## Under cloaking", "", "Macro-F1 under the cloak attacks each row is judged by (unseen in "
            "training, applied to at least 5% of the posts), the best first; the lead of the best row over each "
            "other row over the attacks both are judged by, with its paired bootstrap 95% interval.", "",
            "| victim | clean | mean under cloaking | worst case | lead of the best |", "|---|---:|---:|---|---|"]
    for e in report["ranking"]:
        lead = e.get("lead")
        lead_text = "" if lead is None else "no attack counts for both" if lead["value"] is None else \
            f"{lead['value']:+.3f} {lead_bounds(lead['interval'])} over {plural(lead['attacks'], 'attack')}" + \
            (" (within the noise)" if lead["noise"] else "")
        out.append(f"| {_md(e['row'])} | {e['clean_f1']:.3f} | {e['mean_f1']:.3f} | {e['worst_f1']:.3f} "
                   f"({short_name(e['worst_attack'])}) | {lead_text} |")
    return out


def _md_search(report: dict) -> list[str]:
    """The search attack, split by gold label."""
    if not report["search"]:
        return []
    names = report["label_names"]
    out: list[str] = []
    labels = sorted({k for s in report["search"] for k in s["by_label"]}, reverse=True)
    out += ["", "## Search attack", "",
            "Counted as TextAttack counts (posts the victim already gets wrong are skipped). By gold label: an "
            "offensive post flipped gets past the detector; a non-offensive one flipped is a false alarm.", "",
            "| victim | attack | clean F1 | attacked F1 | success rate | "
            + " | ".join(flips_heading(k, names) for k in labels)
            + " | accuracy under attack | characters changed | queries a post |",
            "|---|---|---:|---:|---:|" + "---:|" * len(labels) + "---:|---:|---:|"]
    out += [f"| {_md(s['row'])} | {s['attack']} | {s['clean_f1']:.3f} | {s['f1']:.3f} | {_pct(s['success_rate'])} | "
            + " | ".join(flips_cell(s["by_label"].get(k)) for k in labels)
            + f" | {_pct(s['accuracy_under_attack'])} | {_pct(s['perturbed_share'])} | "
            f"{_num(s['queries_per_example'], '.1f')} |" for s in report["search"]]
    return out


def _md_embedding(report: dict) -> list[str]:
    """Accuracy under FGM / PGD at each eps."""
    if not report["embedding"]:
        return []
    out: list[str] = []
    eps = sorted({e for c in report["embedding"] for e, _ in c["points"]})
    out += ["", "## Accuracy under FGM / PGD", "", "| victim | attack | " + " | ".join(f"eps {e:g}" for e in eps)
            + " |", "|---|---|" + "---:|" * len(eps)]
    for c in report["embedding"]:
        at = dict(c["points"])
        out.append(f"| {_md(c['row'])} | {c['kind'].upper()} | "
                   + " | ".join(f"{at[e]:.3f}" if e in at else "" for e in eps) + " |")
    return out


def _md_examples(report: dict) -> list[str]:
    """A few attacked posts a victim, edited spans marked."""
    if not any(report["examples"].values()):
        return []
    names = report["label_names"]
    out: list[str] = []
    out += ["", "## Examples", "", "Edited spans in 【】."]
    for row, examples in report["examples"].items():
        if examples:
            out += ["", f"### {_md(row)}", ""]
            for ex in examples:
                out.append(f"- {short_name(ex['attack'])} (p({names[str(ex['label'])]}) {ex['clean_p']:.2f} -> "
                           f"{ex['attacked_p']:.2f}): {_md_segments(ex['original'])} -> "
                           f"{_md_segments(ex['adversarial'])}")
    return out


def _md_curves(report: dict) -> list[str]:
    """Each training-size curve as a table."""
    out: list[str] = []
    for curve in report["curves"]:
        out += ["", f"## Training-size curve: {_md(str(curve['victim']))}", "", "| training posts | macro-F1 (mean) "
                "| min | max |", "|---:|---:|---:|---:|"]
        out += [f"| {b['size']} | {b['mean_macro_f1']:.3f} | {b['min_macro_f1']:.3f} | {b['max_macro_f1']:.3f} |"
                for b in curve["by_size"]]
    return out


# The page's sections in order; each gives its lines, none where the report has nothing for it.
MARKDOWN_SECTIONS = (_md_header, _md_matrix, _md_coverage, _md_ranking, _md_search, _md_embedding, _md_examples,
                     _md_curves)


def markdown(report: dict) -> str:
    return "\n".join(line for section in MARKDOWN_SECTIONS for line in section(report)) + "\n"


def _md_cell(cell: dict | None) -> str:
    if cell is None:
        return ""
    if "skipped" in cell:
        return "-"
    marks = " (seen)" if cell.get("seen") else ""
    if cell.get("barely"):
        marks += f" (barely applied: {cell['coverage']['changed']}/{cell['coverage']['posts']})"
    return f"{'~' if cell['noise'] else ''}{change(cell['drop'])} {bounds(cell['interval'])}{marks}".strip()


def coverage_rows(rows: Sequence[dict], attacks: Sequence[str]) -> list[dict]:
    """Per cloak attack: the posts it changed (of all, of the offensive), and per row the drop over all posts
    and over the posts it reached, each with its interval."""
    out = []
    for attack in attacks:
        cells = [(row["row"], c) for row in rows if (c := row["cells"].get(attack) or {}).get("kind")
                 == "cloak" and c.get("coverage")]
        if cells:
            out.append({"attack": attack, "coverage": cells[0][1]["coverage"], "barely": cells[0][1]["barely"],
                        "rows": [{"row": name, "drop": c["drop"], "interval": c["interval"], "seen": c["seen"],
                                  "on_changed": c["on_changed"], "on_changed_interval": c["on_changed_interval"]}
                                 for name, c in cells]})
    return out


def coverage_text(coverage: dict) -> str:
    """``218 of 300 (72.7%); offensive 140 of 150 (93.3%)``."""
    return (f"{coverage['changed']} of {coverage['posts']} ({_pct(coverage['share'])}); offensive "
            f"{coverage['offensive_changed']} of {coverage['offensive_posts']} ({_pct(coverage['offensive_share'])})")


def _md_segments(segments: Sequence[dict]) -> str:
    return "".join(_md(s["text"]) if s["op"] is None else f"【{_md(s['text'])}】" for s in segments)


# --- html -----------------------------------------------------------------------------------------------

def drop_colour(drop: float) -> str:
    """White at no drop, deepening red to a drop of 0.5 macro-F1; green where the attack helped."""
    if drop < 0:
        return f"rgba(40, 150, 60, {min(1.0, -drop / 0.2) * 0.5:.2f})"
    return f"rgba(215, 48, 39, {min(1.0, drop / 0.5) * 0.85:.2f})"


def html(report: dict) -> str:
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("attacks", "templates"),
                             autoescape=jinja2.select_autoescape(default=True), undefined=jinja2.StrictUndefined)
    env.filters.update(pct=_pct, short=short_name, colour=drop_colour, change=change, bounds=bounds,
                       lead_bounds=lead_bounds, flips=flips_cell, trained_on=trained_on_text)
    env.globals.update(plural=plural, flips_heading=flips_heading)
    plots = {"ops": op_bars_svg(report), "eps": eps_svg(report),
             "curves": [_svg(lambda path, c=c: _plot_curve(c, path)) for c in report["curves"]],
             "routing": [_svg(lambda path, t=t: _plot_routing(t, path)) for t in report["routing"]]}
    search_labels = sorted({k for s in report["search"] for k in s["by_label"]}, reverse=True)
    return env.get_template(TEMPLATE).render(report=report, plots=plots, search_labels=search_labels)


def _plot_curve(curve: dict, path: str) -> None:
    from .curve import plot_curve

    plot_curve(curve, path)


def _plot_routing(table: dict, path: str) -> None:
    from mmbert.routing import plot_routing

    plot_routing(table, path)


def _svg(draw) -> str:
    """What ``draw(path)`` saves, as inline SVG markup (text as paths: no font fetched, no data as text)."""
    import tempfile

    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams.update({"svg.fonttype": "path", "svg.hashsalt": "mmcloak"})
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "plot.svg")
        draw(path)
        with open(path, encoding="utf-8") as f:
            svg = f.read()
    return svg[svg.index("<svg"):]


def _figure(width: float, height: float):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, height), constrained_layout=True)


def _save(fig, path: str) -> None:
    import matplotlib.pyplot as plt

    fig.savefig(path, metadata={"Date": None})
    plt.close(fig)


def op_bars_svg(report: dict) -> str | None:
    """Macro-F1 per cloak attack, one bar per row on an axis from zero, the row's clean macro-F1 as a
    dashed line; the legend below, at the text's size."""
    ops = [a for a in report["attacks"] if any(r["cells"].get(a, {}).get("kind") == "cloak" for r in report["matrix"])]
    rows = [r for r in report["matrix"] if any(a in r["cells"] and "f1" in r["cells"][a] for a in ops)]
    if not ops or not rows:
        return None

    def draw(path: str) -> None:
        fig, ax = _figure(7.5, 1.4 + 0.16 * len(ops) * (len(rows) + 1) + 0.2 * len(rows))
        height = 0.8 / len(rows)
        colours = [f"C{i % 10}" for i in range(len(rows))]
        for i, row in enumerate(rows):
            y = np.arange(len(ops)) + (i - (len(rows) - 1) / 2) * height
            values = [row["cells"].get(a, {}).get("f1", np.nan) for a in ops]
            ax.barh(y, values, height=height, color=colours[i], label=f"{row['row']} (dashed: clean)")
            ax.axvline(row["clean_f1"], color=colours[i], linestyle="--", linewidth=1)
        ax.set_yticks(range(len(ops)), [short_name(a) for a in ops], fontsize=10)
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_xlabel("macro-F1 under the attack", fontsize=10)
        fig.legend(loc="outside lower center", ncol=min(len(rows), 3), fontsize=10, frameon=False)
        _save(fig, path)
    return _svg(draw)


def eps_svg(report: dict) -> str | None:
    if not report["embedding"]:
        return None

    def draw(path: str) -> None:
        fig, ax = _figure(6.5, 3.6)
        rows = list(dict.fromkeys(c["row"] for c in report["embedding"]))
        for c in report["embedding"]:
            eps, acc = zip(*c["points"])
            ax.plot(eps, acc, marker="o", color=f"C{rows.index(c['row']) % 10}",
                    linestyle="-" if c["kind"] == "fgm" else "--", label=f"{c['row']} {c['kind'].upper()}")
        ax.set_xlabel("eps (L2 norm of the perturbation per post)")
        ax.set_ylabel("accuracy")
        ax.set_ylim(0, 1)
        ax.legend(fontsize=10)
        _save(fig, path)
    return _svg(draw)


def terminal_matrix(report: dict) -> str:
    """The matrix for a terminal, attacks down and rows across (a few rows fit a terminal's width, a dozen
    attacks do not); ``~`` marks a change within the noise."""
    rows = report["matrix"]
    width = max(10, *(len(r["row"]) for r in rows))
    head = max(12, *(len(short_name(a)) for a in report["attacks"]), len("clean macro-F1"))
    out = io.StringIO()
    out.write(f"{'':<{head}}  " + "  ".join(f"{r['row']:>{width}}" for r in rows) + "\n")
    out.write(f"{'clean macro-F1':<{head}}  " + "  ".join(f"{r['clean_f1']:>{width}.3f}" for r in rows) + "\n")
    for attack in report["attacks"]:
        cells = []
        for r in rows:
            cell = r["cells"].get(attack)
            text = "" if cell is None else "skipped" if "skipped" in cell else \
                ("~" if cell["noise"] else "") + change(cell["drop"])
            cells.append(f"{text:>{width}}")
        out.write(f"{short_name(attack):<{head}}  " + "  ".join(cells) + "\n")
    if any(c.get("noise") for r in rows for c in r["cells"].values()):
        out.write("~: within the noise (the change's paired bootstrap 95% interval holds zero)\n")
    return out.getvalue()
