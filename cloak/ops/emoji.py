"""Emoji: 狗 -> 🐕, 猴子 -> 🐒, 日本 -> 🇯🇵, 走 -> 🚶, 几 -> 🐔, 麻烦 -> 🐴🍚 (ToxiCloakCN's emoji cloaking).

Three paths, tried in this order:

1. **A word by meaning.** A word of two or more characters that names an emoji becomes it (猴子 -> 🐒,
   屁股 -> 🍑); the word is replaced whole.
2. **A character by meaning.** A character becomes the emoji named by it alone (鬼 -> 👻) or by it plus
   子 / 头 / 儿 (猴 -> 🐒 猴子), or that the hand-written table gives it (走 -> 🚶, 表 -> ⌚), as long as few
   do. A name that merely ends or starts with the character is not its meaning: 烛台 🕎 (candlestick) is
   no 台, 人鱼 🧜 (merperson) no 人, 吉他 🎸 no 他 (the op wrote 台湾人 -> 🕎💊🧜); the few such characters
   that do stand alone for their picture are in the table (表 ⌚ of 手表, 蚁 🐜 of 蚂蚁).
3. **A character by sound.** A character with no emoji of its own becomes the emoji of a character that
   reads the same (toneless pinyin, as the word reads it) and has one by meaning, as posters write
   鸡 🐔 for 几, 马 🐴 for 麻 (麻烦 -> 🐴🍚, 饭 being 🍚) and 表 ⌚ for 婊. A one-character name or a
   hand-written meaning lends its sound first, else a name that is the character plus 子 / 头 / 儿 (猴子
   for 猴). A syllable keeps the emoji of its most closely tied characters only, the commoner characters
   first, at most ``MAX_SOUND`` of them, and none that means characters of different sounds (🐛 is 虫 and
   蛆 alike: it stands in for neither). The suffixes 子 / 头 / 儿 are left as they are (鬼子 -> 👻子).

Data: the Chinese names the ``emoji`` package carries (CLDR annotations, mostly nouns), and a small table
written for mmcloak, ``data/emoji_meanings.tsv``, of the verbs, body words, colours and insult-adjacent
words posters write as emoji (走 🚶, 哭 😭, 死 💀, 杀 🔪, 屁股 🍑, 滚 👉 ...). A word or character in that
table takes its emoji from there, in the table's order, in place of what the names give.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources

from ..common.cache import disk_cached
from ..edits import Edit
from ..hanzi import char_frequencies, is_han
from ..pinyin import char_readings, load_readings, syllable_key, word_reading
from ..rng import Rng
from .base import SHARE, Candidates, Op, register_op

MAX_AMBIGUITY = 3  # a character many names end (or start) with has no emoji by meaning
MAX_SOUND = 3  # emoji kept for one syllable
# 猴子, 舌头: a name that is its first character plus one of these means that character; the suffixes
# themselves mean nothing to cloak, so the sound path leaves them (鬼子 -> 👻子)
SUFFIXES = "子头儿"
MEANINGS = "data/emoji_meanings.tsv"

# How closely a character is tied to its emoji: 0 a one-character name or a hand-written meaning, 1 a
# name made of it plus a suffix. The closest tie of a syllable lends its sound.
DIRECT, NAMED = 0, 1


def _is_flag(e: str) -> bool:
    return "\U0001f1e6" <= e[0] <= "\U0001f1ff"


@functools.cache
def emoji_meanings() -> dict[str, tuple[str, ...]]:
    """The hand-written table (``data/emoji_meanings.tsv``): word -> emoji, the most usual first."""
    table: dict[str, tuple[str, ...]] = {}
    text = resources.files("cloak").joinpath(MEANINGS).read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    for line in lines[1:]:  # after the header
        word, _, emojis = line.partition("\t")
        table[word] = tuple(emojis.split(","))
    return table


@disk_cached
def emoji_tables() -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]],
                            dict[str, tuple[str, ...]]]:
    """(word -> emoji by meaning, character -> emoji by meaning, toneless syllable -> emoji by sound).

    Every emoji the op makes is among the first table's.
    """
    import emoji

    emoji.config.load_language("zh")
    names: dict[str, list[str]] = {}
    for e, data in emoji.EMOJI_DATA.items():
        name = data.get("zh", "").strip(":")
        if (name and data.get("status") == emoji.STATUS["fully_qualified"]
                and "skin_tone" not in data.get("en", "") and all(is_han(ch) for ch in name)):
            names.setdefault(name, []).append(e)

    by_char: dict[str, list[str]] = {}
    tie: dict[str, int] = {}
    not_flags = {n: es for n, es in names.items() if not _is_flag(es[0])}  # 智 is not 🇨🇱 (智利)
    # 鬼 👻 by its one-character name, else 猴 🐒 by 猴子 (the character and a suffix): what names it
    for level, names_it in ((DIRECT, lambda name: len(name) == 1),
                            (NAMED, lambda name: len(name) == 2 and name[1] in SUFFIXES)):
        found: dict[str, list[str]] = {}
        for name, emojis in not_flags.items():
            if names_it(name) and name[0] not in by_char:
                found.setdefault(name[0], []).extend(emojis)
        for ch, es in found.items():
            if len(es) <= MAX_AMBIGUITY:
                by_char[ch], tie[ch] = es, level

    meanings = emoji_meanings()
    for word, emojis in meanings.items():
        if len(word) == 1:
            by_char[word], tie[word] = list(emojis), DIRECT

    # by sound: the characters that mean their emoji, the closest tie of each syllable, commoner first
    freq = char_frequencies()
    syllable = {ch: syllable_key(char_readings(ch)[0]) for ch in tie if is_han(ch) and char_readings(ch)}
    read_as: dict[str, dict[int, set[str]]] = {}  # emoji -> tie -> syllables of the characters it means
    for ch, key in syllable.items():
        for e in by_char[ch]:
            read_as.setdefault(e, {}).setdefault(tie[ch], set()).add(key)

    def reads(e: str, key: str) -> bool:  # 🐛 means 虫 and 蛆 alike: it stands in for neither sound
        return read_as[e][min(read_as[e])] == {key}

    lenders: dict[str, list[tuple[int, int, str]]] = {}
    for ch, key in syllable.items():
        lenders.setdefault(key, []).append((tie[ch], -freq.get(ch, 0), ch))
    by_sound: dict[str, list[str]] = {}
    for key, chars in lenders.items():
        best = min(chars)[0]  # 打 👊 is 拳 too: 大 gets no emoji, rather than 🪯 (坎达) by a looser tie
        emojis = [e for level, _, ch in sorted(chars) if level == best for e in by_char[ch] if reads(e, key)]
        if emojis:
            by_sound[key] = list(dict.fromkeys(emojis))[:MAX_SOUND]

    words = {**names, **{w: list(es) for w, es in meanings.items()}}

    def freeze(d: dict[str, list[str]]) -> dict[str, tuple[str, ...]]:
        return {k: tuple(dict.fromkeys(v)) for k, v in d.items()}

    return freeze(words), freeze(by_char), freeze(by_sound)


@register_op
@dataclass
class Emoji(Op):
    """Replace a word, or some of its characters, by emoji: by meaning, else by sound.

    share: share of a word's characters replaced (at least one); sound: allow same-sound emoji.
    """

    name = "emoji"
    share: float = 0.5
    sound: bool = True
    _parameter_constraints = {"share": SHARE}
    examples = (("", "狗"), ("", "猴子"), ("", "走"), ("", "屁股"), ("", "几"), ("share=1", "麻烦"),
                ("share=1", "操你妈"))
    whole_term = {"share": 1.0}

    def prepare(self) -> None:
        emoji_tables()
        if self.sound:
            load_readings()

    def _options(self, text: str, start: int, end: int):
        _, by_char, by_sound = emoji_tables()
        span = text[start:end]
        # the reading in context (行 in 银行) for a word of Chinese characters
        reading = word_reading(span) if self.sound and all(is_han(ch) for ch in span) else None

        def options(i: int) -> Candidates | None:  # by meaning first, else by sound
            ch = text[i]
            found = by_char.get(ch)
            if found is None and self.sound and ch not in SUFFIXES and is_han(ch) and char_readings(ch):
                syllable = reading[i - start] if reading else char_readings(ch)[0]
                found = by_sound.get(syllable_key(syllable))
            return (found, None) if found else None

        return options

    def candidates(self, text: str, start: int, end: int) -> list[Edit]:
        words = emoji_tables()[0]
        word = text[start:end]
        if len(word) > 1 and word in words:
            return [Edit(self.name, start, end, word, e) for e in words[word]]
        return self.char_candidates(text, self.found_chars(text, start, end, self._options(text, start, end)))

    def edit_span(self, text: str, start: int, end: int, rng: Rng) -> list[Edit]:
        words = emoji_tables()[0]
        word = text[start:end]
        if len(word) > 1 and word in words:
            return [Edit(self.name, start, end, word, rng.choice(words[word]))]
        return self.replace_chars(text, start, end, rng, self._options(text, start, end), self.share)
