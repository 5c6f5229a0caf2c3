"""The page's plots, as inline SVG markup (text drawn as paths: no font fetched, no data as text)."""
from __future__ import annotations

import os

import numpy as np

LINE_STYLES = ("-", "--", ":", "-.")  # a curve's kind, one style each (FGM solid, PGD dashed)


def svg(draw) -> str:
    """What ``draw(path)`` saves, as inline SVG markup."""
    import tempfile

    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams.update({"svg.fonttype": "path", "svg.hashsalt": "mmcloak"})
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "plot.svg")
        draw(path)
        with open(path, encoding="utf-8") as f:
            markup = f.read()
    return markup[markup.index("<svg"):]


def figure(width: float, height: float):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, height), constrained_layout=True)


def save(fig, path: str) -> None:
    import matplotlib.pyplot as plt

    fig.savefig(path, metadata={"Date": None})
    plt.close(fig)


def legend_columns(labels: list[str], width: float) -> int:
    """As many legend columns (three at most) as labels of 10 pt text fit across ``width`` inches: a legend
    wider than its figure is cut at both sides."""
    entry = max(len(label) for label in labels) * 5.5 + 30  # points: about 5.5 a character, the swatch and gap
    return max(1, min(len(labels), 3, int(width * 72 // entry)))


def op_bars_svg(report: dict) -> str | None:
    """Macro-F1 per cloak attack, one bar per row on an axis from zero, the row's clean macro-F1 as a
    dashed line; the legend below, at the text's size."""
    ops = [a for a in report["attacks"]
           if any(r["cells"].get(a, {}).get("figure") == "ranked" for r in report["matrix"])]
    rows = [r for r in report["matrix"] if any(a in r["cells"] and "f1" in r["cells"][a] for a in ops)]
    if not ops or not rows:
        return None

    def draw(path: str) -> None:
        fig, ax = figure(7.5, 1.4 + 0.16 * len(ops) * (len(rows) + 1) + 0.2 * len(rows))
        height = 0.8 / len(rows)
        colours = [f"C{i % 10}" for i in range(len(rows))]
        for i, row in enumerate(rows):
            y = np.arange(len(ops)) + (i - (len(rows) - 1) / 2) * height
            values = [row["cells"].get(a, {}).get("f1", np.nan) for a in ops]
            ax.barh(y, values, height=height, color=colours[i], label=f"{row['row']} (dashed: clean)")
            ax.axvline(row["clean_f1"], color=colours[i], linestyle="--", linewidth=1)
        ax.set_yticks(range(len(ops)), [report["headings"][a] for a in ops], fontsize=10)
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_xlabel("macro-F1 under the attack", fontsize=10)
        fig.legend(loc="outside lower center", ncol=legend_columns([f"{r['row']} (dashed: clean)" for r in rows], 7.5),
                   fontsize=10, frameon=False)
        save(fig, path)
    return svg(draw)


def curves_svg(report: dict, axis: str) -> str | None:
    """Accuracy against ``axis`` (eps), a line per row and kind: the row its colour, the kind its style."""
    curves = [c for c in report["budget"] if c["axis"] == axis]
    if not curves:
        return None

    def draw(path: str) -> None:
        fig, ax = figure(6.5, 3.6)
        rows = list(dict.fromkeys(c["row"] for c in curves))
        kinds = list(dict.fromkeys(c["kind"] for c in curves))
        for c in curves:
            at, accuracy = zip(*c["points"])
            ax.plot(at, accuracy, marker="o", color=f"C{rows.index(c['row']) % 10}",
                    linestyle=LINE_STYLES[kinds.index(c["kind"]) % len(LINE_STYLES)],
                    label=f"{c['row']} {c['kind'].upper()}")
        ax.set_xlabel(curves[0]["axis_text"] or axis)
        ax.set_ylabel("accuracy")
        ax.set_ylim(0, 1)
        ax.legend(fontsize=10)
        save(fig, path)
    return svg(draw)


def training_curve_svg(curve: dict) -> str:
    from ..curve import plot_curve

    return svg(lambda path: plot_curve(curve, path))


def routing_svg(table: dict) -> str:
    from mmbert.routing import plot_routing

    return svg(lambda path: plot_routing(table, path))
