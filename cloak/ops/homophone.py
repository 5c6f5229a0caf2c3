"""Homophones: 白人 -> 拜仁, 满 -> 蛮 (MMBERT §2.1; ToxiCloakCN's homophone cloaking).

Word level first, as ToxiCloakCN does: a target word becomes another dictionary word that sounds the
same, chosen with probability proportional to its corpus frequency, so 白人 becomes 拜仁 (a football
club everybody knows) rather than an obscure word. Only words made entirely of common characters are
candidates. Where no such word exists (or for single characters), characters are swapped one by one
for common characters with the same sound, again frequency-weighted.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import accumulate

from ..cache import disk_cached
from ..edits import Edit
from ..hanzi import char_frequencies, common_chars, is_han, word_frequencies
from ..pinyin import char_readings, check_tone, reading_key, syllable_key, word_reading
from ..rng import Rng
from .base import Op, register_op

# Words rarer than this in jieba's dictionary read as typos, not as a poster's pun.
MIN_WORD_FREQ = 10
MAX_WORD_LEN = 4

Candidates = tuple[tuple[str, ...], tuple[float, ...]]  # (items, cumulative weights)


def _candidates(groups: dict[str, list[tuple[str, int]]]) -> dict[str, Candidates]:
    # Weight by the square root of frequency: common words still win, but 白刃 (85) does not drown
    # every other reading of 白人 the way raw counts would.
    return {key: (tuple(w for w, _ in items), tuple(accumulate(math.sqrt(f) for _, f in items)))
            for key, items in groups.items()}


@disk_cached
def word_index(tone: str) -> dict[str, Candidates]:
    """Sound key -> dictionary words of common characters with that sound."""
    common = common_chars()
    groups: dict[str, list[tuple[str, int]]] = {}
    for word, freq in word_frequencies().items():
        if (freq >= MIN_WORD_FREQ and 2 <= len(word) <= MAX_WORD_LEN
                and all(ch in common for ch in word)):
            groups.setdefault(reading_key(word_reading(word), tone), []).append((word, freq))
    return _candidates(groups)


@disk_cached
def char_index(tone: str) -> dict[str, Candidates]:
    """Sound key -> common characters whose main reading has that sound."""
    freqs = char_frequencies()
    groups: dict[str, list[tuple[str, int]]] = {}
    for ch in common_chars():
        readings = char_readings(ch)
        if readings:
            groups.setdefault(syllable_key(readings[0], tone), []).append((ch, freqs[ch]))
    return _candidates(groups)


def _pick(candidates: Candidates | None, avoid: str, rng: Rng) -> str | None:
    """A frequency-weighted candidate other than ``avoid``."""
    if candidates is None:
        return None
    items, cum = candidates
    if len(items) == 1:
        return None if items[0] == avoid else items[0]
    for _ in range(4):  # rejection sampling: avoid is usually rare among many
        pick = rng.weighted_choice(items, cum)
        if pick != avoid:
            return pick
    others = [w for w in items if w != avoid]
    return rng.choice(others) if others else None


@register_op
@dataclass
class Homophone(Op):
    """Swap a word for a same-sounding dictionary word, or characters for same-sounding characters.

    tone: ``exact`` | ``toneless`` | ``fuzzy`` (see ``cloak.pinyin``); word: try whole words first;
    share: the share of a word's characters swapped at character level (at least one).
    """

    name = "homophone"
    tone: str = "toneless"
    word: bool = True
    share: float = 0.5

    def __post_init__(self) -> None:
        check_tone(self.tone)

    def prepare(self) -> None:
        char_index(self.tone)
        if self.word:
            word_index(self.tone)

    def edit_span(self, text: str, start: int, end: int, rng: Rng) -> list[Edit]:
        word = text[start:end]
        if all(is_han(ch) for ch in word):
            reading: tuple[str | None, ...] = word_reading(word)
            if self.word and 2 <= len(word) <= MAX_WORD_LEN:
                new = _pick(word_index(self.tone).get(reading_key(reading, self.tone)), word, rng)
                if new is not None:
                    return [Edit(self.name, start, end, word, new)]
        else:
            reading = tuple((char_readings(ch) or (None,))[0] if is_han(ch) else None for ch in word)
        index = char_index(self.tone)

        def substitute(i: int, rng: Rng) -> str | None:
            syllable = reading[i - start]
            return _pick(index.get(syllable_key(syllable, self.tone)), text[i], rng) if syllable else None

        return self.replace_chars(text, start, end, rng, substitute, self.share)
