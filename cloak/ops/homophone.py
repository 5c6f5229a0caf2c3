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

from ..common.cache import disk_cached
from ..edits import Edit
from ..hanzi import char_frequencies, cjk_chars, common_chars, gb2312_chars, is_han, word_frequencies
from ..common.params import Options
from ..pinyin import TONES, char_readings, load_readings, reading_key, syllable_key, word_reading
from ..rng import Rng
from .base import SHARE, Candidates, Op, pick, ranked_items, register_op

# Words rarer than this in jieba's dictionary read as typos, not as a poster's pun.
MIN_WORD_FREQ = 10
MAX_WORD_LEN = 4

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
    common = common_chars()
    groups: dict[str, list[tuple[str, int]]] = {}
    for ch, freq in char_frequencies().items():  # a fixed order: a set's would vary with the hash seed
        if ch not in common:
            continue
        readings = char_readings(ch)
        if readings:
            groups.setdefault(syllable_key(readings[0], tone), []).append((ch, freq))
    return _candidates(groups)


@disk_cached
def rare_char_index(tone: str, reach: str) -> dict[str, Candidates]:
    """Sound key -> same-sounding characters outside the common ones: the rest of GB2312 (``reach``
    ``gb2312``) or every CJK ideograph pypinyin reads (``cjk``), weighted by frequency like the common
    ones, characters with no frequency at all weighing one occurrence: an IME lists them last."""
    common, freqs = common_chars(), char_frequencies()
    pool = gb2312_chars() if reach == "gb2312" else cjk_chars()
    groups: dict[str, list[tuple[str, int]]] = {}
    for ch in sorted(pool, key=lambda ch: (-freqs.get(ch, 1), ch)):
        readings = char_readings(ch)
        if ch not in common and readings:
            groups.setdefault(syllable_key(readings[0], tone), []).append((ch, freqs.get(ch, 1)))
    return _candidates(groups)


def _reading(word: str) -> tuple[str | None, ...]:
    """One syllable per character: the word's reading in context, or (with other characters in it) each
    Han character's main reading and None elsewhere."""
    if all(is_han(ch) for ch in word):
        return word_reading(word)
    return tuple((char_readings(ch) or (None,))[0] if is_han(ch) else None for ch in word)


def _memoised(memo: dict, word: str, compute):
    """``memo[word]``, computed on first use; targets repeat (lexicon terms above all), each word is looked
    up once, and the memo is emptied past 100,000 words so that memory stays bounded."""
    found = memo.get(word)
    if found is None:
        if len(memo) > 100_000:
            memo.clear()
        found = memo[word] = compute(word)
    return found


def _without(candidates: Candidates | None, avoid: str) -> Candidates | None:
    """The candidates other than ``avoid`` (the word or character being replaced), or None."""
    if candidates is None or avoid not in candidates[0]:
        return candidates
    kept = [(w, hi - lo) for w, lo, hi in zip(candidates[0], (0.0, *candidates[1]), candidates[1])
            if w != avoid]
    if not kept:
        return None
    return tuple(w for w, _ in kept), tuple(accumulate(weight for _, weight in kept))


@register_op
@dataclass
class Homophone(Op):
    """Swap a word for a same-sounding dictionary word, or characters for same-sounding characters.

    tone: ``exact`` | ``toneless`` | ``fuzzy`` (see ``cloak.pinyin``); word: try whole words first;
    share: the share of a word's characters swapped at character level (at least one);
    common_share: the share of cloaked words whose substitutes are common characters (1: always); the
    others get same-sounding characters no filter knows, from ``rare``: the rest of ``gb2312`` or ``cjk``.
    """

    name = "homophone"
    tone: str = "toneless"
    word: bool = True
    share: float = 0.5
    common_share: float = 1.0
    rare: str = "gb2312"
    _parameter_constraints = {"tone": Options(*TONES), "share": SHARE, "common_share": SHARE,
                              "rare": Options("gb2312", "cjk")}
    examples = (("", "白人"), ("", "河南人"), ("word=false", "白人"), ("tone=fuzzy", "死"),
                ("common_share=0", "白人"), ("common_share=0:rare=cjk", "黑鬼"))
    whole_term = {"share": 1.0}
    # 嗨了铯 for 黑乐色: a poster dodging a filter reaches past the IME's first choices
    poster_style = {"common_share": 0.8}

    def __post_init__(self) -> None:
        super().__post_init__()
        self._memo: dict[str, tuple] = {}
        self._char_memo: dict[tuple[str, str], Candidates | None] = {}  # bounded: syllables x characters
        self._rare_memo: dict[str, tuple[tuple[int, Candidates], ...]] = {}

    @classmethod
    def edit_styles(cls, edit: Edit) -> tuple[str, ...]:
        """``whole word`` (a same-sounding word for the word), else ``characters``, and ``rare characters``
        where a character became one outside the common ones (``common_share`` below 1)."""
        if len(edit.src) > 1:
            return ("whole word",)
        return ("characters", "rare characters") if is_han(edit.dst) and edit.dst not in common_chars() \
            else ("characters",)

    def prepare(self) -> None:
        load_readings()
        char_index(self.tone)
        if self.word:
            word_index(self.tone)
        if self.common_share < 1:
            rare_char_index(self.tone, self.rare)

    def options(self, word: str) -> tuple[Candidates | None, tuple[tuple[int, Candidates], ...]]:
        """(other same-sounding words, [(offset, other same-sounding characters)]) of a word."""
        reading = _reading(word)
        words = None
        if self.word and 2 <= len(word) <= MAX_WORD_LEN and None not in reading:
            words = _without(word_index(self.tone).get(reading_key(reading, self.tone)), word)
        chars = ((k, self._char_options(s, ch)) for k, (s, ch) in enumerate(zip(reading, word)) if s)
        return words, tuple((k, c) for k, c in chars if c is not None)

    def _char_options(self, syllable: str, ch: str) -> Candidates | None:
        """The other common characters read ``syllable``; each (syllable, character) worked out once."""
        found = self._char_memo.get((syllable, ch), False)
        if found is False:
            found = self._char_memo[syllable, ch] = _without(
                char_index(self.tone).get(syllable_key(syllable, self.tone)), ch)
        return found

    def _options(self, word: str) -> tuple[Candidates | None, tuple[tuple[int, Candidates], ...]]:
        return _memoised(self._memo, word, self.options)

    def rare_options(self, word: str) -> tuple[tuple[int, Candidates], ...]:
        """[(offset, same-sounding characters outside the common ones)] of a word."""
        return _memoised(self._rare_memo, word, self._rare_options)

    def _rare_options(self, word: str) -> tuple[tuple[int, Candidates], ...]:
        index = rare_char_index(self.tone, self.rare)
        return tuple((k, c) for k, (s, ch) in enumerate(zip(_reading(word), word))
                     if s and (c := _without(index.get(syllable_key(s, self.tone)), ch)) is not None)

    def candidates(self, text: str, start: int, end: int) -> list[Edit]:
        word = text[start:end]
        words, chars = self._options(word)
        whole = [Edit(self.name, start, end, word, w) for w in ranked_items(words) if w != word] if words else []
        found = whole + self.char_candidates(text, [(start + k, c) for k, c in chars])
        if self.common_share < 1:
            found += self.char_candidates(text, [(start + k, c) for k, c in self.rare_options(word)])
        return found

    def edit_span(self, text: str, start: int, end: int, rng: Rng) -> list[Edit]:
        word = text[start:end]
        # No draw at the default common_share of 1: the output stays what it was before the parameter.
        if self.common_share < 1 and rng.random() >= self.common_share and (rare := self.rare_options(word)):
            return self.swap_some(text, [(start + k, c) for k, c in rare], rng, self.share)
        words, chars = self._memo.get(word) or self._options(word)
        if words is not None and (new := pick(words, word, rng)) is not None:
            return [Edit(self.name, start, end, word, new)]
        return self.swap_some(text, [(start + k, c) for k, c in chars], rng, self.share)
