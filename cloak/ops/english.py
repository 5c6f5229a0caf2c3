"""Code-mixing with English: 同性恋 -> gay, 越南猴子 -> 越南monkey.

The table (``data/english.tsv``) gives, for the default lexicon's terms and the words inside them, the
English a Chinese poster actually writes. A span not in the table has its longest in-table part
replaced instead; a span with no such part is left to the next op.
"""
from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from importlib import resources

from ..edits import Edit
from ..rng import Rng
from .base import Op, register_op


@functools.cache
def english_table() -> dict[str, tuple[str, ...]]:
    """Chinese term -> English alternatives."""
    with resources.files("cloak").joinpath("data/english.tsv").open(encoding="utf-8") as f:
        return {row["zh"]: tuple(row["en"].split("|")) for row in csv.DictReader(f, delimiter="\t")}


@register_op
@dataclass
class English(Op):
    """Replace a word (or its longest known part) by an English word posters use for it."""

    name = "english"

    def prepare(self) -> None:
        english_table()

    def _part(self, text: str, start: int, end: int) -> tuple[int, int, tuple[str, ...]] | None:
        """The longest part of the span with English for it (the leftmost of equal length)."""
        table = english_table()
        for length in range(end - start, 0, -1):
            for s in range(start, end - length + 1):
                options = table.get(text[s:s + length])
                if options:
                    return s, s + length, options
        return None

    def candidates(self, text: str, start: int, end: int) -> list[Edit]:
        part = self._part(text, start, end)
        return [Edit(self.name, part[0], part[1], text[part[0]:part[1]], e) for e in part[2]] if part else []

    def edit_span(self, text: str, start: int, end: int, rng: Rng) -> list[Edit]:
        part = self._part(text, start, end)
        if part is None:
            return []
        s, e, options = part
        return [Edit(self.name, s, e, text[s:e], rng.choice(options))]
