"""``report.html``: one page that works offline, from the jinja2 template ``attacks/templates/report.html.j2``
(autoescape on: every text of the data is escaped)."""
from __future__ import annotations

from cloak.common.commands import plural

from .plots import curves_svg, op_bars_svg, routing_svg, training_curve_svg
from .text import (attacks_text, bounds, change, flips_cell, flips_heading, lead_bounds, lead_text, pct, search_labels,
                   signed, trained_on_text)

TEMPLATE = "report.html.j2"


def drop_colour(drop: float) -> str:
    """White at no drop, deepening red to a drop of 0.5 macro-F1; green where the attack helped."""
    if drop < 0:
        return f"rgba(40, 150, 60, {min(1.0, -drop / 0.2) * 0.5:.2f})"
    return f"rgba(215, 48, 39, {min(1.0, drop / 0.5) * 0.85:.2f})"


def breakable(name: str):
    """``search:homophone+emoji`` escaped, with a line break allowed after each ``+ : / @`` (a long attack or row
    name wraps in a narrow column instead of widening the table)."""
    from markupsafe import Markup, escape

    text = str(escape(name))
    for mark in "+:/@":
        text = text.replace(mark, mark + "<wbr>")
    return Markup(text)


def html(report: dict) -> str:
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("attacks", "templates"),
                             autoescape=jinja2.select_autoescape(default=True), undefined=jinja2.StrictUndefined)
    headings = report["headings"]
    env.filters.update(pct=pct, heading=headings.__getitem__, colour=drop_colour, change=change, bounds=bounds,
                       lead_bounds=lead_bounds, flips=flips_cell, trained_on=trained_on_text, breakable=breakable,
                       lead=lambda lead: lead_text(lead, headings.__getitem__),
                       averaged=lambda group: attacks_text(group, headings.__getitem__),
                       signed=lambda change, part: signed(change[f"{part}_change"], change[f"{part}_interval"],
                                                          change[f"{part}_noise"]))
    env.globals.update(plural=plural, flips_heading=flips_heading)
    plots = {"ops": op_bars_svg(report),
             "budget": [(axis, curves_svg(report, axis))
                        for axis in dict.fromkeys(c["axis"] for c in report["budget"])],
             "curves": [training_curve_svg(c) for c in report["curves"]],
             "routing": [routing_svg(t) for t in report["routing"]]}
    return env.get_template(TEMPLATE).render(report=report, plots=plots, search_labels=search_labels(report))
