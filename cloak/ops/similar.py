"""Look-alike characters: 未 -> 末, 己 -> 已, 间 -> 问 (MMBERT §2.1 "deformation").

The look-alikes come from ``render``'s glyph-similarity index over GB2312 (nearest neighbours of
blurred glyph bitmaps), shipped as ``data/similar_chars.tsv`` so that this op needs no font and no
``render`` import. Only common characters are offered as substitutes: a poster picks a look-alike
their IME shows, not an obscure one.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources

from ..edits import Edit
from ..hanzi import common_chars
from ..params import Interval
from ..rng import Rng
from .base import SHARE, Op, register_op

SIMILARITY_FILE = "data/similar_chars.tsv"


@functools.cache
def similar_chars() -> dict[str, str]:
    """{character: its look-alikes among GB2312, best first} from the shipped index."""
    table = {}
    with resources.files("cloak").joinpath(SIMILARITY_FILE).open(encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or "\t" not in line:
                continue
            ch, neighbours = line.rstrip("\n").split("\t")
            table[ch] = neighbours
    return table


@functools.cache
def _common_lookalikes(top: int) -> dict[str, tuple[str, ...]]:
    common = common_chars()
    table = {}
    for ch, neighbours in similar_chars().items():
        kept = tuple(n for n in neighbours if n in common)[:top]
        if kept:
            table[ch] = kept
    return table


@register_op
@dataclass
class Similar(Op):
    """Swap characters for look-alike common characters.

    top: how many of the nearest common look-alikes to choose from; share: share of a word's
    characters swapped (at least one).
    """

    name = "similar"
    top: int = 3
    share: float = 0.5
    _parameter_constraints = {"top": Interval(int, 1), "share": SHARE}

    def prepare(self) -> None:
        _common_lookalikes(self.top)

    def edit_span(self, text: str, start: int, end: int, rng: Rng) -> list[Edit]:
        table = _common_lookalikes(self.top)
        return self.replace_chars(text, start, end, rng,
                                  lambda i: (table[text[i]], None) if text[i] in table else None,
                                  self.share)
