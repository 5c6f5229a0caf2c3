"""Look-alike characters: 未 -> 末, 己 -> 已, 间 -> 问 (MMBERT §2.1 "deformation").

The look-alikes come from ``render``'s glyph-similarity index over GB2312 (nearest neighbours of
blurred glyph bitmaps), shipped as ``data/similar_chars.tsv`` so that this op needs no font and no
``render`` import. Only common characters are offered as substitutes: a poster picks a look-alike
their IME shows, not an obscure one. ``similar:table=FILE`` reads an index you built yourself
(``cloak render --build-similarity-index --index-out FILE``, say with another font) instead.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from importlib import resources

from ..edits import Edit
from ..hanzi import common_chars
from ..common.params import Interval, Satisfies
from ..rng import Rng
from .base import SHARE, Op, register_op

SIMILARITY_FILE = "data/similar_chars.tsv"


@functools.cache
def similar_chars(path: str = "") -> dict[str, str]:
    """{character: its look-alikes, best first} from an index file (default: the shipped one)."""
    table = {}
    source = open(os.path.expanduser(path), encoding="utf-8") if path else \
        resources.files("cloak").joinpath(SIMILARITY_FILE).open(encoding="utf-8")
    with source as f:
        for number, line in enumerate(f, 1):
            if line.startswith("#") or not line.strip():
                continue
            ch, sep, neighbours = line.rstrip("\n").partition("\t")
            if not sep or len(ch) != 1:
                raise ValueError(f"{path}, line {number}: expected a character, a tab and its look-alikes")
            table[ch] = neighbours
    return table


@functools.cache
def _common_lookalikes(top: int, path: str = "") -> dict[str, tuple[str, ...]]:
    common = common_chars()
    table = {}
    for ch, neighbours in similar_chars(path).items():
        kept = tuple(n for n in neighbours if n in common)[:top]
        if kept:
            table[ch] = kept
    return table


@register_op
@dataclass
class Similar(Op):
    """Swap characters for look-alike common characters.

    top: how many of the nearest common look-alikes to choose from; share: share of a word's
    characters swapped (at least one); table: an index file to read instead of the shipped one.
    """

    name = "similar"
    top: int = 3
    share: float = 0.5
    whole_term = {"share": 1.0}
    table: str = ""
    _parameter_constraints = {"top": Interval(int, 1), "share": SHARE,
                              "table": Satisfies(lambda p: p == "" or os.path.isfile(os.path.expanduser(p)),
                                                 "an index file that exists (or empty: the shipped one)")}

    def prepare(self) -> None:
        _common_lookalikes(self.top, self.table)

    def _options(self, text: str):
        table = _common_lookalikes(self.top, self.table)
        return lambda i: (table[text[i]], None) if text[i] in table else None  # nearest look-alike first

    def candidates(self, text: str, start: int, end: int) -> list[Edit]:
        return self.char_candidates(text, self.found_chars(text, start, end, self._options(text)))

    def edit_span(self, text: str, start: int, end: int, rng: Rng) -> list[Edit]:
        return self.replace_chars(text, start, end, rng, self._options(text), self.share)
