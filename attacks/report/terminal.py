"""The robustness matrix for a terminal (what ``attacks report`` prints)."""
from __future__ import annotations

import io

from .text import change


def terminal_matrix(report: dict) -> str:
    """Attacks down and rows across (a few rows fit a terminal's width, a dozen attacks do not); ``~`` marks a
    change within the noise, a blank an attack the row's run did not include."""
    rows, headings = report["matrix"], report["headings"]
    width = max(10, *(len(r["row"]) for r in rows))
    head = max(12, *(len(headings[a]) for a in report["attacks"]), len("clean macro-F1"))
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
        out.write(f"{headings[attack]:<{head}}  " + "  ".join(cells) + "\n")
    if any(c.get("noise") for r in rows for c in r["cells"].values()):
        out.write("~: within the noise (the change's paired bootstrap 95% interval holds zero)\n")
    if report["missing"]:
        out.write("blank: the row's run did not include the attack\n")
    return out.getvalue()
