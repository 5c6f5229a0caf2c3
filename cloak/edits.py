"""Edits: what a perturbation changed, enough to replay it on the source text or invert it.

An edit replaces ``source_text[start:end]`` (code points) by ``dst``; ``src`` is what it replaced, kept
so that an edit can be inverted and checked. An insertion has ``start == end`` and ``src == ""``.
Edits of one record never overlap and are kept sorted by position.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple


class Edit(NamedTuple):
    # A named tuple, not a frozen dataclass: ops create millions of these and a frozen dataclass's
    # __init__ costs several times more.
    op: str
    start: int
    end: int
    src: str
    dst: str

    def to_dict(self) -> dict:
        return self._asdict()

    @classmethod
    def from_dict(cls, d: Mapping) -> Edit:
        return cls(op=d["op"], start=int(d["start"]), end=int(d["end"]), src=d["src"], dst=d["dst"])


class EditError(ValueError):
    """The edits do not fit the text they are applied to."""


def _as_edits(edits: Iterable[Edit | Mapping]) -> list[Edit]:
    return sorted((e if isinstance(e, Edit) else Edit.from_dict(e) for e in edits),
                  key=lambda e: (e.start, e.end))


def apply_edits(source: str, edits: Iterable[Edit | Mapping]) -> str:
    """Replay edits on the source text and return the perturbed text."""
    parts: list[str] = []
    pos = 0
    for e in _as_edits(edits):
        if e.start < pos or e.end < e.start or e.end > len(source):
            raise EditError(f"edit {e} overlaps another or lies outside a text of length {len(source)}")
        if source[e.start:e.end] != e.src:
            raise EditError(f"edit {e} expects {e.src!r} at {e.start} but the text has "
                            f"{source[e.start:e.end]!r}")
        parts.append(source[pos:e.start])
        parts.append(e.dst)
        pos = e.end
    parts.append(source[pos:])
    return "".join(parts)


def output_spans(edits: Iterable[Edit | Mapping]) -> list[tuple[Edit, int, int]]:
    """Each edit (sorted) with the span its ``dst`` occupies in the perturbed text."""
    spans = []
    shift = 0  # perturbed position minus source position, before the current edit
    for e in _as_edits(edits):
        at = e.start + shift
        spans.append((e, at, at + len(e.dst)))
        shift += len(e.dst) - (e.end - e.start)
    return spans


def invert_edits(text: str, edits: Iterable[Edit | Mapping]) -> str:
    """Undo edits on the perturbed text and return the source text."""
    parts: list[str] = []
    pos = 0  # in the perturbed text
    for e, at, end in output_spans(edits):
        if at < pos or text[at:end] != e.dst:
            raise EditError(f"edit {e} expects {e.dst!r} at {at} of the perturbed text")
        parts.append(text[pos:at])
        parts.append(e.src)
        pos = end
    parts.append(text[pos:])
    return "".join(parts)
