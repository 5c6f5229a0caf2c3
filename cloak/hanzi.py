"""Chinese characters and words: how common they are.

Frequency source: jieba's dictionary (``jieba/dict.txt``, 349k words with corpus frequencies). A
character's frequency is the sum of the frequencies of the words that contain it. The jieba dictionary
mixes in traditional forms and rare characters, so the ranking keeps only characters of GB2312 (the 6,763
simplified characters of the mainland standard); the 3,500 most frequent of them are "common" — the same
size as the first level of the 通用规范汉字表, which a poster can type from any IME's first page.
The tables are kept in the cache directory (``cloak.common.cache``): parsing the dictionary takes a second.
"""
from __future__ import annotations

import functools
import os
from collections import Counter

from .common.cache import disk_cached

COMMON_SIZE = 3500


def is_han(ch: str) -> bool:
    """True for a CJK unified ideograph (the basic block and extension A)."""
    return "\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf"


def _in_gb2312(ch: str) -> bool:
    try:
        return len(ch.encode("gb2312")) == 2 and is_han(ch)
    except UnicodeEncodeError:
        return False


@functools.cache
def gb2312_chars() -> tuple[str, ...]:
    """The 6,763 Chinese characters of GB2312, in code point order."""
    return tuple(chr(c) for c in range(0x4E00, 0xA000) if _in_gb2312(chr(c)))


def cjk_chars() -> list[str]:
    """Every character ``is_han`` accepts, by code point (taken from it, so the two ranges are written once)."""
    return [chr(c) for c in range(0x3400, 0xA000) if is_han(chr(c))]


@disk_cached
def word_frequencies() -> dict[str, int]:
    """jieba's dictionary as {word: frequency}."""
    import jieba

    path = os.path.join(os.path.dirname(jieba.__file__), "dict.txt")
    freqs: dict[str, int] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            word, freq, _ = line.split(" ", 2)
            freqs[word] = int(freq)
    return freqs


@disk_cached
def char_frequencies() -> dict[str, int]:
    """{character: frequency} over the GB2312 characters, from word frequencies."""
    counts: Counter[str] = Counter()
    for word, freq in word_frequencies().items():
        for ch in word:
            counts[ch] += freq
    return {ch: n for ch, n in counts.most_common() if _in_gb2312(ch)}


@disk_cached
def common_chars(size: int = COMMON_SIZE) -> frozenset[str]:
    """The ``size`` most frequent GB2312 characters."""
    return frozenset(list(char_frequencies())[:size])


@functools.cache
def common_words(size: int) -> tuple[str, ...]:
    """jieba's ``size`` most frequent words of 2-4 common characters, the commonest first (ties by the word)."""
    common = common_chars()
    words = sorted(((w, f) for w, f in word_frequencies().items()
                    if 2 <= len(w) <= 4 and all(ch in common for ch in w)), key=lambda wf: (-wf[1], wf[0]))
    return tuple(w for w, _ in words[:size])
