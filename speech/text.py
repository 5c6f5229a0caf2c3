"""What a Mandarin speaker would say for a cloaked post: the text every TTS backend speaks.

Cloaked posts mix Chinese with Latin letters, digits and emoji, and a Mandarin G2P (misaki's, which
Kokoro uses) passes those through unchanged — they are not Kokoro phonemes. So before synthesis:

- a Latin run that is pinyin (``heiren``, ``laji``) is read as pinyin: each syllable becomes the most
  common character with that sound (hei -> 黑), so a pinyin cloak sounds like what it hides, which is
  the point of hearing a post;
- any other Latin run (``txl``, ``gay``, ``nmsl``) is spelled out letter by letter, as Chinese speakers
  name letters (t -> 踢, x -> 艾克斯);
- digits are read one by one (520 -> 五二零); emoji are read by their Chinese name (🐶 -> 狗脸);
- Weibo emoticon codes (``[机智]``, ``[酷]``) are dropped: a reader sees a picture, not the words;
- zero-width and other invisible characters are dropped, and so are symbols and punctuation a reader
  does not say (``黑~人``, ``垃|圾``, ``女/性``: what posters insert to break a word), which eSpeak NG
  would otherwise name in English ("tilde"); the marks of a pause or a sentence's end stay.

Only a post's first ``MAX_CHARS`` characters are spoken (``TTSBackend.max_chars``): Whisper encodes 30
seconds of speech at most, about 130 Mandarin syllables, and MMBERT reads at most its ``max_length``
tokens (128 in MMBERT's setting, Xue et al. 2025), so speaking more would cost time and memory for nothing.
"""
from __future__ import annotations

import functools
import re
import unicodedata

from cloak.hanzi import char_frequencies, is_han
from cloak.pinyin import char_readings

LETTER_NAMES = {
    "a": "诶", "b": "比", "c": "西", "d": "迪", "e": "伊", "f": "艾弗", "g": "吉", "h": "艾尺",
    "i": "艾", "j": "杰", "k": "开", "l": "艾勒", "m": "艾马", "n": "艾娜", "o": "欧", "p": "屁",
    "q": "吉吾", "r": "艾儿", "s": "艾斯", "t": "踢", "u": "优", "v": "维", "w": "达布溜",
    "x": "艾克斯", "y": "歪", "z": "贼德",
}
DIGITS = dict(zip("0123456789", "零一二三四五六七八九"))
MAX_CHARS = 500
SENTENCE_END = re.compile(r"(?<=[。！？!?；;…\n])")

_LATIN = re.compile(r"[A-Za-z]+")
_INVISIBLE = re.compile("[\u200b-\u200f\u2060-\u2064\ufeff\ufe00-\ufe0f]")
_EMOTICON = re.compile(r"\[[^\[\]\s]{1,8}\]")
PAUSES = set("，。！？；：、…,.!?;:\n")


@functools.cache
def _syllable_chars() -> dict[str, str]:
    """Toneless pinyin syllable -> the most frequent character read that way."""
    table: dict[str, str] = {}
    for ch in char_frequencies():  # most frequent first
        readings = char_readings(ch)
        if readings:
            table.setdefault(readings[0].rstrip("012345"), ch)
    return table


def pinyin_syllables(word: str) -> list[str] | None:
    """Split a Latin word into toneless pinyin syllables (fewest syllables), or None if it is not pinyin.

    Dynamic programming over prefixes with a back-pointer each, so the time is linear in the word's
    length (a syllable has at most 6 letters)."""
    word = word.lower().replace("ü", "v")
    syllables = _syllable_chars()
    fewest: list[int | None] = [0] + [None] * len(word)  # syllables in the best split of word[:end]
    back = [0] * (len(word) + 1)  # where the best split's last syllable starts
    for end in range(1, len(word) + 1):
        for start in range(max(0, end - 6), end):
            before = fewest[start]
            if before is not None and (fewest[end] is None or before + 1 < fewest[end]) \
                    and word[start:end] in syllables:
                fewest[end], back[end] = before + 1, start
    if fewest[-1] is None:
        return None
    split, end = [], len(word)
    while end:
        split.append(word[back[end]:end])
        end = back[end]
    return split[::-1]


def _say_latin(word: str) -> str:
    syllables = pinyin_syllables(word) if len(word) > 1 else None
    # "txl" is not pinyin, but "ta" or "li" would be: an abbreviation's letters never make syllables
    # that use every letter unless the word has a vowel to carry them.
    if syllables and any(v in word.lower() for v in "aeiouv"):
        return "".join(_syllable_chars()[s] for s in syllables)
    return "".join(LETTER_NAMES.get(ch, "") for ch in word.lower())


def _say_emoji(match: str) -> str:
    import emoji

    name = emoji.demojize(match, language="zh", delimiters=("", ""))
    return "".join(ch for ch in name if is_han(ch))


def speakable(text: str) -> str:
    """The text as it would be read aloud in Mandarin (see the module docstring)."""
    import emoji

    text = emoji.replace_emoji(text, replace=lambda e, data: _say_emoji(e))
    text = _INVISIBLE.sub("", _EMOTICON.sub("", text))
    text = _LATIN.sub(lambda m: _say_latin(m.group()), text)
    return "".join(DIGITS.get(ch, ch) for ch in text if ch in PAUSES or unicodedata.category(ch)[0] not in "PS")


def sentences(text: str, max_chars: int = 100) -> list[str]:
    """Split at sentence punctuation, and cut what is still longer than ``max_chars``."""
    pieces = []
    for sentence in SENTENCE_END.split(text):
        sentence = sentence.strip()
        pieces.extend(sentence[i:i + max_chars] for i in range(0, len(sentence), max_chars))
    return pieces
