"""Figures as a reader reads them, shared by the Markdown page, the HTML page and the terminal."""
from __future__ import annotations

from collections.abc import Callable, Sequence

from cloak.common.commands import plural
from cloak.common.io import label_name


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


def pct(x: float | None) -> str:
    return num(x, ".1%")


def signed(difference: float, bounds: Sequence[float], noise: bool) -> str:
    """A difference with its interval, ``~`` where the interval holds zero: ``-0.312 [-0.35, -0.27]``."""
    return f"{difference:+.3f} {lead_bounds(bounds)}{' ~' if noise else ''}"


def num(x: float | None, spec: str) -> str:
    return "" if x is None else format(x, spec)


def flips_cell(counts: dict | None) -> str:
    """``106 / 106 (100.0%)``: posts of a gold label the search flipped, of those the victim got right."""
    if not counts or not counts["right"]:
        return ""
    return f"{counts['flipped']} / {counts['right']} ({pct(counts['rate'])})"


def flips_heading(label: str, names: dict[str, str]) -> str:
    return f"{names[label]} posts flipped ({'false alarms' if label == '0' else 'evasion'})"


def search_labels(report: dict) -> list[str]:
    """The gold labels of the search table's columns, the offensive first."""
    return sorted({k for s in report["search"] for k in s["by_label"]}, reverse=True)


def flipped_text(label: str, counts: dict, names: dict[str, str]) -> str:
    """``106 of 106 offensive posts it caught get past it`` / ``155 of 180 non-offensive posts it cleared
    become false alarms``: what a search's flips of one gold label mean."""
    if label == "0":
        return f"{counts['flipped']} of {counts['right']} {names[label]} posts it cleared become false alarms"
    return f"{counts['flipped']} of {counts['right']} {names[label]} posts it caught get past it"


def coverage_text(coverage: dict) -> str:
    """``218 of 300 (72.7%); offensive 140 of 150 (93.3%)``."""
    return (f"{coverage['changed']} of {coverage['posts']} ({pct(coverage['share'])}); offensive "
            f"{coverage['offensive_changed']} of {coverage['offensive_posts']} ({pct(coverage['offensive_share'])})")


MOST_WORSE = 3  # the attacks under which the best row does worse, named a row (the largest differences first)


def lead_text(lead: dict, heading: Callable[[str], str]) -> str:
    """``+0.016 [-0.015, +0.047] over 7 attacks (within the noise); worse under search (0.017 against
    0.068)``: the best row's lead over another, and the attacks outside those it is taken over under which
    the best row does worse (``heading``: an attack's name as the page writes it)."""
    text = f"{lead['value']:+.3f} {lead_bounds(lead['interval'])} over {plural(lead['attacks'], 'attack')}" + \
        (" (within the noise)" if lead["noise"] else "")
    if lead["worse"]:
        text += "; worse under " + ", ".join(f"{heading(w['attack'])} ({w['f1']:.3f} against {w['other']:.3f})"
                                              for w in lead["worse"][:MOST_WORSE])
        text += f" and {plural(len(lead['worse']) - MOST_WORSE, 'more attack')}" if len(lead["worse"]) > MOST_WORSE \
            else ""
    return text


def attacks_text(group: dict, heading: Callable[[str], str], who: str = "every row here") -> str:
    """``the 7 cloak attacks every row here is judged by: abbrev, english, ...``: what a ranking averages."""
    return (f"the {plural(len(group['attacks']), 'cloak attack')} {who} is judged by: "
            + ", ".join(heading(a) for a in group["attacks"]))


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
