"""Show cloaked and unveiled records to a person: the source with what was replaced, the cloak with what
replaced it, and what ``cloak unveil`` read back.

In a colour terminal the edited spans are coloured (red: replaced, green: inserted text, cyan: read back);
elsewhere they are bracketed, ``⟦白人⟧`` -> ``⟦白刃⟧``, so the difference survives a log file or a pipe (white
square brackets: Weibo posts write their emoticons in plain ones, ``[机智]``). A
record ``cloak unveil`` wrote shows a third line, ``=``, the text read back, its restored spans marked
(and the cloak's line marks what the unveiler read back of it).
"""
from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.text import Text

from .edits import output_spans

_INVISIBLE = {ord(c): f"\\u{ord(c):04x}" for c in "\u200b\u200c\u200d\u2060\ufeff"}
_ONE_LINE = {ord("\n"): "⏎", ord("\r"): "⏎", ord("\t"): " "}  # one for one: edit offsets still fit


def _marked(text: str, spans: list[tuple[int, int]], style: str, colour: bool) -> Text:
    out = Text()
    pos = 0
    for start, end in spans:
        out.append(text[pos:start])
        piece = text[start:end].translate(_INVISIBLE)  # a zero-width insertion must show
        if colour:
            out.append(piece or "‸", style=style)
        else:
            out.append(f"⟦{piece}⟧")
        pos = end
    out.append(text[pos:])
    return out


def render_record(record: dict, colour: bool) -> list[Text]:
    """The lines of a record: its source and its cloak (a perturbed record) and what was read back (an
    unveiled one), each with the edits marked and the prefix ``- `` / ``+ `` / ``= ``."""
    lines = []
    cloak_edits = record.get("cloak", {}).get("edits", [])
    unveil = record.get("unveil")
    written = record.get("unveiled_from", record["text"]) if unveil is not None else record["text"]
    if "cloak" in record:
        spans = output_spans(cloak_edits)
        source = record.get("source_text", written)
        lines.append(Text("  - ") + _marked(source.translate(_ONE_LINE), [(e.start, e.end) for e, _, _ in spans],
                                            "bold red", colour))
        lines.append(Text("  + ") + _marked(written.translate(_ONE_LINE), [(a, b) for _, a, b in spans],
                                            "bold green", colour))
    if unveil is not None:
        spans = output_spans(unveil.get("edits", []))
        if "cloak" not in record:
            lines.append(Text("  + ") + _marked(written.translate(_ONE_LINE), [(e.start, e.end) for e, _, _ in spans],
                                                "bold green", colour))
        lines.append(Text("  = ") + _marked(record["text"].translate(_ONE_LINE), [(a, b) for _, a, b in spans],
                                            "bold cyan", colour))
    return lines


def show_records(records: Iterable[dict], console: Console | None = None, limit: int = 20,
                 only_changed: bool = True) -> int:
    """Print up to ``limit`` records as source / cloak (/ read back) lines; returns how many were shown."""
    console = console or Console(highlight=False, soft_wrap=True)
    colour = console.is_terminal and not console.no_color
    shown = 0
    for record in records:
        if shown >= limit:
            break
        edits = [*record.get("cloak", {}).get("edits", []), *record.get("unveil", {}).get("edits", [])]
        if only_changed and not edits:
            continue
        ops = ", ".join(sorted({e["op"] for e in edits})) or "unchanged"
        console.print(Text(f"{record.get('id', shown)}  ({ops})", style="dim"))
        for line in render_record(record, colour):
            console.print(line)
        shown += 1
    return shown
