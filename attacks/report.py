"""The robustness report: folders of ``attacks evaluate`` -> ``report.json``, ``report.md``, ``report.html``.

``report.json`` holds every number (each folder's whole summary with its settings, data hash and
versions); ``report.md`` the tables, to paste into an issue or a paper; ``report.html`` one page that
works offline: plots inline as SVG (text drawn as paths), no script, nothing fetched, and every text from
the data escaped by jinja2's autoescape, under a content-security policy that would block a script anyway.

Several folders (say, one detector before and after training on cloaked posts) compare side by side:
each (folder, victim) is a row of the matrix.
"""
from __future__ import annotations

import dataclasses
import datetime
import io
import json
import os
from collections.abc import Sequence

import numpy as np

from cloak.edits import invert_edits, output_spans
from cloak.io import write_atomic

from .evaluate import META, SUMMARY, outcome_file
from .victim import versions

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


def load_results(path: str, label: str | None = None) -> Results:
    summary_path = os.path.join(path, SUMMARY)
    if not os.path.isfile(summary_path):
        raise FileNotFoundError(f"{path}: no {SUMMARY}: not a folder written by `attacks evaluate --out {path}`")
    with open(summary_path, encoding="utf-8") as f:
        summary = json.load(f)
    run_path = os.path.join(path, META)
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


def attack_kind(attack: str) -> str:
    return attack.split(":")[0].split("@")[0]


def attack_order(results: Sequence[Results]) -> list[str]:
    """Cloak attacks, the most damaging first (mean macro-F1 drop over the rows), then the searches, then
    FGM and PGD by eps."""
    drops: dict[str, list[float]] = {}
    for r in results:
        for entry in r.summary["victims"].values():
            for attack, figures in entry["attacks"].items():
                drops.setdefault(attack, [])
                if "skipped" not in figures:
                    drops[attack].append(figures["drop"]["f1"])

    def key(attack: str):
        kind = attack_kind(attack)
        if kind in ("fgm", "pgd"):
            return (2, kind, float(attack.split("@")[1]))
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


def matrix_rows(results: Sequence[Results], attacks: Sequence[str]) -> list[dict]:
    """One row per (folder, victim): clean macro-F1 and, per attack, attacked macro-F1, drop and success rate
    (or why the pair was skipped)."""
    rows = []
    for r in results:
        for victim, entry in r.summary["victims"].items():
            cells = {}
            for attack in attacks:
                figures = entry["attacks"].get(attack)
                if figures is None:
                    continue
                if "skipped" in figures:
                    cells[attack] = {"skipped": figures["skipped"]}
                else:
                    cells[attack] = {"f1": figures["all"]["f1"], "drop": figures["drop"]["f1"],
                                     "accuracy": figures["all"]["accuracy"],
                                     "success_rate": figures["textattack"]["success_rate"],
                                     "by_label": success_by_label(figures), "changed": figures["changed"]}
            rows.append({"row": victim if len(results) == 1 else f"{r.label} / {victim}", "results": r.label,
                         "victim": victim, "clean_f1": entry["clean"]["f1"], "clean_accuracy": entry["clean"]["accuracy"],
                         "posts": entry["clean"]["n"], "cells": cells})
    return rows


def headlines(rows: Sequence[dict], attacks: Sequence[str]) -> list[str]:
    """What the matrix says, in sentences: per row its worst cloak op, its mean change over the cloak ops
    and the search's success rate; then which row holds up best under cloaking, and, when another row
    starts higher and so ends higher, which one scores best under cloaking."""
    lines, means, attacked = [], {}, {}
    for row in rows:
        cloaks = {a: c for a in attacks if attack_kind(a) == "cloak" and "drop" in (c := row["cells"].get(a) or {})}
        parts = []
        if cloaks:
            worst = max(cloaks, key=lambda a: cloaks[a]["drop"])
            means[row["row"]] = float(np.mean([c["drop"] for c in cloaks.values()]))
            attacked[row["row"]] = float(np.mean([c["f1"] for c in cloaks.values()]))
            parts.append(f"loses most to {short_name(worst)} ({change(cloaks[worst]['drop'])} macro-F1), "
                         f"{change(means[row['row']])} on average over {len(cloaks)} cloak attacks")
        for a in attacks:
            cell = row["cells"].get(a) or {}
            if attack_kind(a) == "search" and cell.get("success_rate") is not None:
                by_label = ", ".join(f"label {k}: {v:.0%}" for k, v in cell["by_label"].items() if v is not None)
                parts.append(f"{short_name(a)} flips {cell['success_rate']:.0%} of the posts it got right"
                             + (f" ({by_label})" if len(cell["by_label"]) > 1 else ""))
        if parts:
            lines.append(f"{row['row']} (clean macro-F1 {row['clean_f1']:.3f}): " + "; ".join(parts) + ".")
    if len(means) > 1:
        best = min(means, key=means.get)
        lines.append(f"Holds up best under cloaking: {best} ({change(means[best])} on average).")
        highest = max(attacked, key=attacked.get)
        if highest != best:
            lines.append(f"Scores best under cloaking: {highest} (macro-F1 {attacked[highest]:.3f} on average over the "
                         f"cloak attacks, against {attacked[best]:.3f} for {best}).")
    return lines


def success_by_label(figures: dict) -> dict[str, float | None]:
    """The success rate on the posts of each gold label: on offensive posts a success evades the
    detector, on clean ones it raises a false alarm (summaries written before it have none)."""
    return {k: v["success_rate"] for k, v in figures.get("textattack_by_label", {}).items()}


def search_rows(results: Sequence[Results], attacks: Sequence[str]) -> list[dict]:
    rows = []
    for r in results:
        for victim, entry in r.summary["victims"].items():
            for attack in attacks:
                figures = entry["attacks"].get(attack)
                if attack_kind(attack) != "search" or figures is None or "skipped" in figures:
                    continue
                counts = figures["textattack"]
                rows.append({"row": victim if len(results) == 1 else f"{r.label} / {victim}", "attack": attack,
                             "clean_f1": entry["clean"]["f1"], "f1": figures["all"]["f1"],
                             "success_rate": counts["success_rate"], "by_label": success_by_label(figures),
                             "accuracy_under_attack": counts["accuracy_under_attack"],
                             "perturbed_share": figures["perturbed_share"],
                             "queries_per_example": counts["queries_per_example"],
                             "successes": counts["successes"], "failures": counts["failures"],
                             "skipped": counts["skipped"]})
    return rows


def embedding_curves(rows: Sequence[dict], attacks: Sequence[str]) -> list[dict]:
    """Accuracy against eps per row for FGM and PGD (eps 0 is the clean accuracy)."""
    curves = []
    for row in rows:
        for kind in ("fgm", "pgd"):
            points = [(0.0, row["clean_accuracy"])]
            for attack in attacks:
                cell = row["cells"].get(attack)
                eps = float(attack.split("@")[1]) if attack_kind(attack) == kind else 0.0
                if eps > 0 and cell and "skipped" not in cell:  # eps 0 is the clean point already there
                    points.append((eps, cell["accuracy"]))
            if len(points) > 1:
                curves.append({"row": row["row"], "kind": kind, "points": points})
    return curves


def examples_of(result: Results, victim: str, attacks: Sequence[str], limit: int) -> list[dict]:
    """Up to ``limit`` posts the victim got right and an attack flipped, one per attack (the most damaging
    first) and no post twice, each the shortest of at least ``MIN_EXAMPLE_CHARS`` characters: the original
    and the adversarial text as segments, the edited ones marked with their op."""
    entry = result.summary["victims"][victim]
    folder = os.path.join(result.path, victim)
    clean_path = os.path.join(folder, "clean.jsonl")
    if not os.path.isfile(clean_path):
        return []
    clean = [json.loads(line) for line in open(clean_path, encoding="utf-8") if line.strip()]
    chosen: list[dict] = []
    seen: set = set()
    for attack in attacks:
        if len(chosen) >= limit:
            break
        path = os.path.join(folder, outcome_file(attack))
        if attack_kind(attack) in ("fgm", "pgd") or "skipped" in entry["attacks"].get(attack, {"skipped": ""}) \
                or not os.path.isfile(path):
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


def _flipped(label: int, before: list, after: list) -> bool:
    if any(p is None for p in after):
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
                 examples: int = 3) -> dict:
    """Everything the report shows, as plain data (``report.json``). ``curves``: folders of ``attacks
    curve``; ``routing``: folders of ``mmbert routing``."""
    labels = [r.label for r in results]
    if len(set(labels)) < len(labels):
        raise ValueError(f"two results folders share the label {labels}: give each its own (--label)")
    attacks = attack_order(results)
    rows = matrix_rows(results, attacks)
    return {
        "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "versions": {k: v for k, v in versions("torch", "scikit-learn").items() if v},
        "results": [{"label": r.label, "path": os.path.abspath(r.path), "written": r.written,
                     "data": r.summary["data"], "attacks": r.summary["attacks"], "attack_groups": attack_groups(r),
                     "versions": {k: v for k, v in r.summary["versions"].items() if v},
                     "skipped": {v: e["skipped"] for v, e in r.run.get("victims", {}).items() if e.get("skipped")},
                     "victims": {v: e["description"] for v, e in r.run.get("victims", {}).items()
                                 if e.get("description", "as trained") != "as trained"},
                     "summary": r.summary} for r in results],
        "attacks": attacks,
        "headlines": headlines(rows, attacks),
        "matrix": rows,
        "search": search_rows(results, attacks),
        "embedding": embedding_curves(rows, attacks),
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
    os.makedirs(out_dir, exist_ok=True)
    paths = {kind: os.path.join(out_dir, f"report.{kind}") for kind in ("json", "md", "html")}
    write_atomic(paths["json"], (json.dumps(report, indent=1, ensure_ascii=False, allow_nan=False) + "\n").encode())
    write_atomic(paths["md"], markdown(report).encode())
    write_atomic(paths["html"], html(report).encode())
    return paths


def change(drop: float) -> str:
    """A drop in macro-F1 as the signed change a reader expects (-0.123: lost 0.123), 0.000 for no change."""
    return "0.000" if abs(drop) < 0.0005 else f"{-drop:+.3f}"


# --- markdown -------------------------------------------------------------------------------------------

def _pct(x: float | None) -> str:
    return _num(x, ".1%")


def by_label_text(by_label: dict[str, float | None]) -> str:
    """Success rates by gold label, as ``0: 84.0% · 1: 99.4%`` (empty for one label or none)."""
    return " · ".join(f"{k}: {_pct(v)}" for k, v in by_label.items()) if len(by_label) > 1 else ""


def _num(x: float | None, spec: str) -> str:
    return "" if x is None else format(x, spec)


def _md(text: str) -> str:
    """Data text made inert in Markdown: no HTML, no links, no emphasis, no table breaks, one line."""
    text = " ".join(text.split())
    for ch in "\\`*_[]<>|#!~":
        text = text.replace(ch, "\\" + ch)
    return text


def markdown(report: dict) -> str:
    out = ["# Robustness report", ""]
    out += [f"- `{r['label']}`: {r['data'].get('records')} records of {_md(str(r['data'].get('path')))} "
            f"(sha256 {str(r['data'].get('sha256'))[:12]}), written {r['written']}" for r in report["results"]]
    described = dict.fromkeys(pair for r in report["results"] for pair in r["victims"].items())  # each victim once
    out += [f"- `{_md(victim)}`: {_md(text)}" for victim, text in described]
    out += [""] + [f"- {_md(line)}" for line in report["headlines"]]
    out += ["", "## Macro-F1 under each attack", "",
            "Clean macro-F1, then its change under each attack (attacked - clean); `-` where the attack does "
            "not apply.", ""]
    attacks = report["attacks"]
    out.append("| victim | clean | " + " | ".join(short_name(a) for a in attacks) + " |")
    out.append("|---|---:|" + "---:|" * len(attacks))
    for row in report["matrix"]:
        cells = [("-" if "skipped" in c else change(c["drop"])) if (c := row["cells"].get(a)) else "" for a in attacks]
        out.append(f"| {_md(row['row'])} | {row['clean_f1']:.3f} | " + " | ".join(cells) + " |")
    if report["search"]:
        out += ["", "## Search attack", "",
                "| victim | attack | clean F1 | attacked F1 | success rate | by gold label | accuracy under attack | "
                "characters changed | queries a post |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        out += [f"| {_md(s['row'])} | {s['attack']} | {s['clean_f1']:.3f} | {s['f1']:.3f} | {_pct(s['success_rate'])} | "
                f"{by_label_text(s['by_label'])} | {_pct(s['accuracy_under_attack'])} | {_pct(s['perturbed_share'])} | "
                f"{_num(s['queries_per_example'], '.1f')} |"
                for s in report["search"]]
    if report["embedding"]:
        eps = sorted({e for c in report["embedding"] for e, _ in c["points"]})
        out += ["", "## Accuracy under FGM / PGD", "", "| victim | attack | " + " | ".join(f"eps {e:g}" for e in eps)
                + " |", "|---|---|" + "---:|" * len(eps)]
        for c in report["embedding"]:
            at = dict(c["points"])
            out.append(f"| {_md(c['row'])} | {c['kind'].upper()} | "
                       + " | ".join(f"{at[e]:.3f}" if e in at else "" for e in eps) + " |")
    if any(report["examples"].values()):
        out += ["", "## Examples", "", "Edited spans in 【】."]
        for row, examples in report["examples"].items():
            if examples:
                out += ["", f"### {_md(row)}", ""]
                for ex in examples:
                    out.append(f"- {short_name(ex['attack'])} (p(true label {ex['label']}) {ex['clean_p']:.2f} -> "
                               f"{ex['attacked_p']:.2f}): {_md_segments(ex['original'])} -> "
                               f"{_md_segments(ex['adversarial'])}")
    for curve in report["curves"]:
        out += ["", f"## Training-size curve: {_md(str(curve['victim']))}", "", "| training posts | macro-F1 (mean) "
                "| min | max |", "|---:|---:|---:|---:|"]
        out += [f"| {b['size']} | {b['mean_macro_f1']:.3f} | {b['min_macro_f1']:.3f} | {b['max_macro_f1']:.3f} |"
                for b in curve["by_size"]]
    return "\n".join(out) + "\n"


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
    env.filters.update(pct=_pct, by_label=by_label_text, short=short_name, colour=drop_colour, change=change)
    plots = {"ops": op_bars_svg(report), "eps": eps_svg(report),
             "curves": [_svg(lambda path, c=c: _plot_curve(c, path)) for c in report["curves"]],
             "routing": [_svg(lambda path, t=t: _plot_routing(t, path)) for t in report["routing"]]}
    return env.get_template(TEMPLATE).render(report=report, plots=plots)


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
    """Macro-F1 per cloak attack, one bar per row, the row's clean macro-F1 as a dashed line."""
    ops = [a for a in report["attacks"] if attack_kind(a) == "cloak"]
    rows = [r for r in report["matrix"] if any(a in r["cells"] and "f1" in r["cells"][a] for a in ops)]
    if not ops or not rows:
        return None

    def draw(path: str) -> None:
        fig, ax = _figure(7.5, 1.4 + 0.13 * len(ops) * (len(rows) + 1))
        height = 0.8 / len(rows)
        colours = [f"C{i % 10}" for i in range(len(rows))]
        for i, row in enumerate(rows):
            y = np.arange(len(ops)) + (i - (len(rows) - 1) / 2) * height
            values = [row["cells"].get(a, {}).get("f1", np.nan) for a in ops]
            ax.barh(y, values, height=height, color=colours[i], label=row["row"])
            ax.axvline(row["clean_f1"], color=colours[i], linestyle="--", linewidth=1)
        ax.set_yticks(range(len(ops)), [short_name(a) for a in ops])
        ax.invert_yaxis()
        ax.set_xlabel("macro-F1 under the attack (dashed: clean)")
        # the drops are a few hundredths: an axis from 0 would hide them
        low = min((v for r in rows for a in ops if (v := r["cells"].get(a, {}).get("f1")) is not None), default=0.0)
        ax.set_xlim(max(0.0, low - 0.05), min(1.0, max(r["clean_f1"] for r in rows) + 0.02))
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
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
        ax.legend(fontsize=8)
        _save(fig, path)
    return _svg(draw)


def terminal_matrix(report: dict) -> str:
    """The matrix for a terminal, attacks down and rows across (a few rows fit a terminal's width, a dozen
    attacks do not)."""
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
            text = "" if cell is None else "skipped" if "skipped" in cell else change(cell["drop"])
            cells.append(f"{text:>{width}}")
        out.write(f"{short_name(attack):<{head}}  " + "  ".join(cells) + "\n")
    return out.getvalue()
