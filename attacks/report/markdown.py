"""``report.md``: the report's tables, to paste into an issue or a paper, every text of the data made inert."""
from __future__ import annotations

import functools
from collections.abc import Sequence

from cloak.common.commands import plural

from .text import (attacks_text, bounds, change, coverage_text, flips_cell, flips_heading, lead_bounds, lead_text, num,
                   pct, search_labels, signed, trained_on_text)


def markdown(report: dict) -> str:
    return "\n".join(line for section in MARKDOWN_SECTIONS for line in section(report)) + "\n"


def md(text: str) -> str:
    """Data text made inert in Markdown: no HTML, no links, no emphasis, no table breaks, one line."""
    text = " ".join(text.split())
    for ch in "\\`*_[]<>|#!~":
        text = text.replace(ch, "\\" + ch)
    return text


def _heading(report: dict, attack: str) -> str:
    """An attack's name in a heading or a sentence (``homophone`` for ``cloak:homophone``), made inert."""
    return md(report["headings"][attack])


def _header(report: dict) -> list[str]:
    """The data, each victim, and the headlines."""
    out = ["# Robustness report", ""]
    out += [f"- `{r['label']}`: {plural(r['data'].get('records'), 'record')} of {md(str(r['data'].get('path')))} "
            f"(sha256 {str(r['data'].get('sha256'))[:12]}), written {r['written']}" for r in report["results"]]
    described = {v: f for r in report["results"] for v, f in r["victims"].items()}  # each victim once
    out += [f"- `{md(victim)}`: {md(f['kind'])}, {md(f['settings'])}; "
            f"trained on {md(trained_on_text(f['trained_on'], report['label_names']))}"
            for victim, f in described.items()]
    out += [""] + [f"- {md(line)}" for line in report["headlines"]]
    return out


def _matrix(report: dict) -> list[str]:
    """Clean macro-F1 and its change under each attack, a row a victim; the attacks a folder did not run."""
    out: list[str] = []
    out += ["", "## Macro-F1 under each attack", "",
            "Clean macro-F1, then its change under each attack (attacked - clean) with the paired bootstrap 95% "
            "interval of the change; `~` marks a change within the noise (its interval holds zero); `-` where the "
            "attack does not apply.", ""]
    attacks = report["attacks"]
    out.append("| victim | clean | " + " | ".join(_heading(report, a) for a in attacks) + " |")
    out.append("|---|---:|" + "---:|" * len(attacks))
    for row in report["matrix"]:
        cells = [_cell(row["cells"].get(a)) for a in attacks]
        flag = " (useless as trained)" if row["useless"] else ""
        out.append(f"| {md(row['row'])}{flag} | {row['clean_f1']:.3f} | " + " | ".join(cells) + " |")
    if report["missing"]:
        out += ["", "A blank cell: the row's run did not include that attack. " + "; ".join(
            f"`{md(label)}` did not run {', '.join(_heading(report, a) for a in lacking)}"
            for label, lacking in report["missing"].items()) + "."]
    return out


def _cell(cell: dict | None) -> str:
    if cell is None:
        return ""
    if "skipped" in cell:
        return "-"
    marks = _in_distribution(cell)
    if cell.get("barely"):
        marks += f" (barely applied: {cell['coverage']['changed']}/{cell['coverage']['posts']})"
    return f"{'~' if cell['noise'] else ''}{change(cell['drop'])} {bounds(cell['interval'])}{marks}".strip()


def _in_distribution(cell: dict) -> str:
    """`` (seen)``: its op cloaked the row's training data; `` (its defence's tables)``: made by the tables the
    row's ``cloak unveil`` reads with; both left out of the row's averages."""
    return " (seen)" if cell.get("seen") else " (its defence's tables)" if cell.get("own_tables") else ""


def _coverage(report: dict) -> list[str]:
    """The posts each cloak attack changed, and the drops over all and over those."""
    if not report["coverage"]:
        return []
    out: list[str] = []
    out += ["", "## Coverage", "",
            "The posts each cloak attack changed, and each row's change in macro-F1 over all posts and over "
            "the posts it changed. An attack that changed under 5% of the posts is barely applied "
            "and counts in no average.", "",
            "| attack | posts changed | " + " | ".join(f"{md(r['row'])}: all / changed" for r in
                                                     report["coverage"][0]["rows"]) + " |",
            "|---|---|" + "---|" * len(report["coverage"][0]["rows"])]
    for c in report["coverage"]:
        cells = ["" if x["drop"] is None else
                 f"{change(x['drop'])} / {'' if x['on_changed'] is None else change(x['on_changed'])}"
                 f"{_in_distribution(x)}" for x in c["rows"]]
        out.append(f"| {_heading(report, c['attack'])}{' (barely applied)' if c['barely'] else ''} | "
                   f"{coverage_text(c['coverage'])} | " + " | ".join(cells) + " |")
    return out


def _ranking(report: dict) -> list[str]:
    """Macro-F1 under the cloak attacks every row of a group is judged by, the best first, with its lead."""
    if not report["ranking"]:
        return []
    heading = functools.partial(_heading, report)
    out = ["", "## Under cloaking", "", "Macro-F1 under cloaking, the best first, every row on the same cloak "
           "attacks: those every row of the table is judged by (unseen in its training, applied to at least 5% of "
           "the posts, and behind `cloak unveil` from other sources than its tables); the worst case among them; "
           "the lead of the best row over each other row, with its paired bootstrap 95% interval, and the attacks "
           "outside those under which the best row does worse."]
    for group in report["ranking"]:
        scope = f" (the rows of `{md(group['scope'])}`)" if group["scope"] else ""
        out += ["", f"Averaged over {attacks_text(group, heading)}{scope}.", "",
                "| victim | clean | mean under cloaking | worst case | lead of the best |", "|---|---:|---:|---|---|"]
        out += [f"| {md(e['row'])} | {e['clean_f1']:.3f} | {e['mean_f1']:.3f} | {e['worst_f1']:.3f} "
                f"({heading(e['worst_attack'])}) | {lead_text(e['lead'], heading) if 'lead' in e else ''} |"
                for e in group["rows"]]
    return out


def _search(report: dict) -> list[str]:
    """The search attack, split by gold label."""
    if not report["search"]:
        return []
    names = report["label_names"]
    out: list[str] = []
    labels = search_labels(report)
    out += ["", "## Search attack", "",
            "Counted as TextAttack counts (posts the victim already gets wrong are skipped). By gold label: an "
            "offensive post flipped gets past the detector; a non-offensive one flipped is a false alarm.", "",
            "| victim | attack | clean F1 | attacked F1 | success rate | "
            + " | ".join(flips_heading(k, names) for k in labels)
            + " | accuracy under attack | characters changed | queries a post |",
            "|---|---|---:|---:|---:|" + "---:|" * len(labels) + "---:|---:|---:|"]
    out += [f"| {md(s['row'])} | {md(s['attack'])} | {s['clean_f1']:.3f} | {s['f1']:.3f} | {pct(s['success_rate'])} | "
            + " | ".join(flips_cell(s["by_label"].get(k)) for k in labels)
            + f" | {pct(s['accuracy_under_attack'])} | {pct(s['perturbed_share'])} | "
            f"{num(s['queries_per_example'], '.1f')} |" for s in report["search"]]
    return out


def _budget(report: dict) -> list[str]:
    """Accuracy under each curve's attacks (FGM / PGD) at each point of its axis (eps)."""
    out: list[str] = []
    for axis in dict.fromkeys(c["axis"] for c in report["budget"]):
        curves = [c for c in report["budget"] if c["axis"] == axis]
        at = sorted({x for c in curves for x, _ in c["points"]})
        out += ["", f"## Accuracy under {' / '.join(dict.fromkeys(c['kind'].upper() for c in curves))}", "",
                "| victim | attack | " + " | ".join(f"{axis} {x:g}" for x in at) + " |",
                "|---|---|" + "---:|" * len(at)]
        for c in curves:
            points = dict(c["points"])
            out.append(f"| {md(c['row'])} | {md(c['kind'].upper())} | "
                       + " | ".join(f"{points[x]:.3f}" if x in points else "" for x in at) + " |")
    return out


def _examples(report: dict) -> list[str]:
    """A few attacked posts a victim, edited spans marked."""
    if not any(report["examples"].values()):
        return []
    names = report["label_names"]
    out: list[str] = []
    out += ["", "## Examples", "", "Edited spans in 【】."]
    for row, examples in report["examples"].items():
        if examples:
            out += ["", f"### {md(row)}", ""]
            for ex in examples:
                out.append(f"- {_heading(report, ex['attack'])} (p({names[str(ex['label'])]}) "
                           f"{ex['clean_p']:.2f} -> {ex['attacked_p']:.2f}): {_segments(ex['original'])} -> "
                           f"{_segments(ex['adversarial'])}")
    return out


def _segments(segments: Sequence[dict]) -> str:
    return "".join(md(s["text"]) if s["op"] is None else f"【{md(s['text'])}】" for s in segments)


def _training_curves(report: dict) -> list[str]:
    """Each training-size curve as a table."""
    out: list[str] = []
    for curve in report["curves"]:
        out += ["", f"## Training-size curve: {md(str(curve['victim']))}", "", "| training posts | macro-F1 (mean) "
                "| min | max |", "|---:|---:|---:|---:|"]
        out += [f"| {b['size']} | {b['mean_macro_f1']:.3f} | {b['min_macro_f1']:.3f} | {b['max_macro_f1']:.3f} |"
                for b in curve["by_size"]]
    return out


# The page's sections in order; each gives its lines, none where the report has nothing for it.
def _defences(report: dict) -> list[str]:
    """Each detector with and without unveil in front, and trained on cloaked posts or not: which to pick, and what
    it costs on clean posts."""
    view = report.get("defences")
    if not view:
        return []
    searches = view["searches"]
    out = ["", "## Defences", "",
           f"Each detector as it is, with `cloak unveil` in front, trained on cloaked posts or not. Mean drop: the "
           f"mean macro-F1 drop over {attacks_text({'attacks': view['attacks']}, lambda a: _heading(report, a))}, "
           "with its paired bootstrap 95% interval; as in the ranking, an attack whose op a row saw in training, that "
           "a row's defence reads back with the tables that made it (only attacks by foreign ops, from other sources, "
           "judge a detector behind unveil), or that changed under 5% of the posts, is left out. Against: what unveil "
           "in front changed, clean macro-F1 (its cost on clean posts) and the mean drop, defended minus not, each "
           "with its interval (`~` within the noise). The search queries the whole pipeline: against a defended "
           "detector it is an adaptive attack on unveil.",
           ""]
    out.append("| victim | defence | clean | mean drop | clean change | drop change | "
               + " | ".join(_heading(report, a) for a in searches) + (" |" if searches else "|"))
    out.append("|---|---|---:|---:|---:|---:|" + "---:|" * len(searches))
    for e in view["rows"]:
        against = e.get("against") or {}
        clean = signed(against["clean_change"], against["clean_interval"], against["clean_noise"]) if against else ""
        drop = signed(against["drop_change"], against["drop_interval"], against["drop_noise"]) \
            if "drop_change" in against else ""
        mean = f"{e['mean_drop']:.3f} {lead_bounds(e['mean_drop_interval'])}" if e["mean_drop"] is not None else "-"
        search = [f"{c['drop']:.3f} {lead_bounds(c['interval'])}" if c else "-" for c in e["search"].values()]
        out.append(f"| {md(e['row'])} | {md(e['defence'])} | {e['clean_f1']:.3f} | {mean} | {clean} | {drop} | "
                   + " | ".join(search) + (" |" if search else "|"))
    return out


MARKDOWN_SECTIONS = (_header, _matrix, _coverage, _ranking, _defences, _search, _budget, _examples, _training_curves)
