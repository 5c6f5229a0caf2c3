"""Edits: what a perturbation changed, enough to replay it on the source text or invert it.

An edit replaces ``source_text[start:end]`` (code points) by ``dst``; ``src`` is what it replaced, kept
so that an edit can be inverted and checked. An insertion has ``start == end`` and ``src == ""``.
Edits of one record never overlap and are kept sorted by position.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple


class Edit(NamedTuple):
    """One replacement in a text: ``src`` at ``[start, end)`` of the source became ``dst``, by ``op``. A record's
    edits replay its cloak (``apply_edits``) and undo it (``invert_edits``); in a record they are the dicts of
    ``to_dict``."""

    # A named tuple, not a frozen dataclass: ops create millions of these and a frozen dataclass's
    # __init__ costs several times more.
    op: str
    """The op (or reader, ``unveil:homophone``) that made it."""
    start: int
    """Where ``src`` starts in the source text, in code points."""
    end: int
    """Where ``src`` ends (exclusive)."""
    src: str
    """What the source text held there."""
    dst: str
    """What it was replaced by."""

    def to_dict(self) -> dict:
        """As a record holds it: ``{"op", "start", "end", "src", "dst"}``."""
        return self._asdict()

    @classmethod
    def from_dict(cls, d: Mapping) -> Edit:
        """From a record's dict (``to_dict``'s)."""
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


def splice(text: str, edits: Iterable[Edit]) -> str:
    """``text`` with ``edits`` (sorted, disjoint, known to fit) applied: ``apply_edits`` without its checks,
    where the edits were just made from the text."""
    parts: list[str] = []
    pos = 0
    for e in edits:
        parts.append(text[pos:e.start])
        parts.append(e.dst)
        pos = e.end
    parts.append(text[pos:])
    return "".join(parts)


def compose_edits(source: str, first: Iterable[Edit | Mapping], then: Iterable[Edit | Mapping]) -> list[Edit]:
    """One list of edits of ``source`` doing ``first`` (edits of ``source``) and then ``then`` (edits of what
    ``first`` made). Edits of the two that overlap (one inside the other; a character ``first`` removed
    strictly inside an edit of ``then``) become one edit, named by the edit of ``then``."""
    first, then = _as_edits(first), _as_edits(then)
    spans = output_spans(first)
    shifts = [(at, end, len(e.dst) - (e.end - e.start)) for e, at, end in spans]
    blocks = sorted([(at, end, e, True) for e, at, end in spans] + [(e.start, e.end, e, False) for e in then],
                    key=lambda b: (b[0], b[1]))
    groups: list[list] = []
    for block in blocks:
        if groups and block[0] < groups[-1][1]:
            groups[-1][1] = max(groups[-1][1], block[1])
            groups[-1][2].append(block)
        else:
            groups.append([block[0], block[1], [block]])
    middle = splice(source, first)
    edits = []
    for lo, hi, members in groups:
        later = [e._replace(start=e.start - lo, end=e.end - lo) for _, _, e, is_first in members if not is_first]
        start = min(e.start if is_first else _back(e.start, shifts, True) for _, _, e, is_first in members)
        end = max(e.end if is_first else _back(e.end, shifts, False) for _, _, e, is_first in members)
        op = later[0].op if later else members[0][2].op
        edits.append(Edit(op, start, end, source[start:end], splice(middle[lo:hi], later)))
    return edits


def _back(pos: int, shifts: list[tuple[int, int, int]], start: bool) -> int:
    """Where a place of the edited text was in the source; a character removed right there (an empty
    output at ``pos``) lies before a start and after an end."""
    return pos - sum(d for at, end, d in shifts if end < pos or (end == pos and (at < pos or start)))
