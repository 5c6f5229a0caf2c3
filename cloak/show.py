"""Show cloaked records to a person: the source with what was replaced, the cloak with what replaced it.

In a colour terminal the edited spans are coloured (red: replaced, green: inserted text); elsewhere they
are bracketed, ``[白人]`` -> ``[白刃]``, so the difference survives a log file or a pipe.
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
            out.append(f"[{piece}]")
        pos = end
    out.append(text[pos:])
    return out


def render_record(record: dict, colour: bool) -> tuple[Text, Text]:
    """(source line, cloaked line) of a perturbed record, with the edits marked."""
    spans = output_spans(record.get("cloak", {}).get("edits", []))
    source = record.get("source_text", record["text"])
    src_spans = [(e.start, e.end) for e, _, _ in spans]
    dst_spans = [(start, end) for _, start, end in spans]
    return (_marked(source.translate(_ONE_LINE), src_spans, "bold red", colour),
            _marked(record["text"].translate(_ONE_LINE), dst_spans, "bold green", colour))


def show_records(records: Iterable[dict], console: Console | None = None, limit: int = 20,
                 only_changed: bool = True) -> int:
    """Print up to ``limit`` records as source / cloak pairs; returns how many were shown."""
    console = console or Console(highlight=False, soft_wrap=True)
    colour = console.is_terminal and not console.no_color
    shown = 0
    for record in records:
        if shown >= limit:
            break
        edits = record.get("cloak", {}).get("edits", [])
        if only_changed and not edits:
            continue
        source, cloaked = render_record(record, colour)
        ops = ", ".join(sorted({e["op"] for e in edits})) or "unchanged"
        console.print(Text(f"{record.get('id', shown)}  ({ops})", style="dim"))
        console.print(Text("  - ") + source)
        console.print(Text("  + ") + cloaked)
        shown += 1
    return shown
