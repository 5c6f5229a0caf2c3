"""Pinyin readings and the sound keys that decide what counts as a homophone.

Three ways to compare sounds (``tone``):

- ``exact``: same syllable, same tone (白 bai2 ~ 拜 bai4 is *not* a match);
- ``toneless``: same syllable, any tone (白 ~ 拜);
- ``fuzzy``: also merges what many speakers and IMEs merge — zh/z, ch/c, sh/s, n/l, an/ang, en/eng,
  in/ing (是 shi ~ 四 si).

Readings come from pypinyin's tables; a word's reading in context uses pypinyin's phrase dictionary, so
polyphones such as 行 (xing / hang) are read as the word reads them.
"""
from __future__ import annotations

import functools
import re

TONES = ("exact", "toneless", "fuzzy")

_FUZZY_INITIALS = (("zh", "z"), ("ch", "c"), ("sh", "s"))
_FUZZY_FINAL = re.compile(r"(an|en|in)g$")


@functools.cache
def _tone3(marked: str) -> str:
    from pypinyin.contrib.tone_convert import to_tone3

    return to_tone3(marked)


@functools.lru_cache(maxsize=20_000)
def syllable_key(tone3: str, tone: str = "toneless") -> str:
    """The comparison key of one syllable written in TONE3 style (``bai2``)."""
    if tone == "exact":
        return tone3
    plain = tone3.rstrip("012345")
    if tone == "fuzzy":
        for long, short in _FUZZY_INITIALS:
            if plain.startswith(long):
                plain = short + plain[2:]
                break
        else:
            if plain.startswith("n") and plain != "n":
                plain = "l" + plain[1:]
        plain = _FUZZY_FINAL.sub(r"\1", plain)
    return plain


def load_readings() -> None:
    """Import pypinyin's character and phrase tables (about 1 s), for an op's ``prepare`` to pay for
    rather than the first word it reads (inside a timed search, or once in every worker)."""
    import pypinyin.constants  # noqa: F401  (the package loads both tables)


@functools.cache
def char_readings(ch: str) -> tuple[str, ...]:
    """All readings of a character in TONE3 style, the most common first; () if pypinyin has none."""
    from pypinyin.pinyin_dict import pinyin_dict

    marked = pinyin_dict.get(ord(ch))
    if not marked:
        return ()
    return tuple(dict.fromkeys(_tone3(r) for r in marked.split(",")))


@functools.lru_cache(maxsize=200_000)
def word_reading(word: str) -> tuple[str, ...]:
    """The reading of a word of Chinese characters, one TONE3 syllable per character, in context."""
    readings = [char_readings(ch) for ch in word]
    if all(len(r) == 1 for r in readings):  # no polyphone: context cannot change the reading
        return tuple(r[0] for r in readings)
    if all(readings):
        return _phrase_reading(word)
    from pypinyin import Style, lazy_pinyin

    syllables = lazy_pinyin(word, style=Style.TONE3, neutral_tone_with_five=False)
    if len(syllables) != len(word):  # a character pypinyin cannot read
        return tuple(char_readings(ch)[0] if char_readings(ch) else ch for ch in word)
    return tuple(syllables)


def _phrase_reading(word: str) -> tuple[str, ...]:
    """What ``lazy_pinyin(word, style=TONE3)`` returns for a word whose characters all have readings,
    without its per-syllable style machinery (a sixth of the time; the cold cost of ``cloak perturb
    --targets all``): pypinyin's own segmenter, then each segment from its phrase dictionary, else each
    character's first reading. Identical on all 264,912 polyphone words of jieba's dictionary."""
    from pypinyin.constants import PHRASES_DICT
    from pypinyin.seg.simpleseg import seg

    whole = PHRASES_DICT.get(word)
    if whole is not None and len(whole) == len(word):  # the segmenter keeps a dictionary phrase whole
        return tuple(_tone3(s[0]) for s in whole)
    syllables: list[str] = []
    for part in seg(word):
        phrase = PHRASES_DICT.get(part)
        if phrase is not None and len(phrase) == len(part):
            syllables.extend(_tone3(s[0]) for s in phrase)
        else:
            syllables.extend(char_readings(ch)[0] for ch in part)
    return tuple(syllables)


def reading_key(syllables: tuple[str, ...] | list[str], tone: str = "toneless") -> str:
    """Key of a whole reading, e.g. ('bai2', 'ren2') -> 'bai ren' (toneless)."""
    return " ".join(syllable_key(s, tone) for s in syllables)
