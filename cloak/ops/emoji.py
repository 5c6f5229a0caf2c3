"""Emoji: 狗 -> 🐶, 猴子 -> 🐒, 日本 -> 🇯🇵, 几 -> 🐔 (ToxiCloakCN's emoji cloaking).

Semantic match first, on the Chinese names the ``emoji`` package carries (CLDR annotations): a word
that is an emoji's name becomes that emoji; a character becomes the emoji named by it alone (鬼 -> 👻),
else one whose two-character name ends in it (牛 -> 🐄 奶牛) or starts with it (猪 -> 🐷 猪头), as long
as few names do (人 ends 雪人 ⛄ and a dozen others: no single picture means 人). Where no
name fits, the emoji whose one-character name sounds the same (toneless pinyin) stands in, as posters
do with 鸡 / 几 -> 🐔.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..cache import disk_cached
from ..edits import Edit
from ..hanzi import is_han
from ..pinyin import char_readings, syllable_key
from ..rng import Rng
from .base import SHARE, Candidates, Op, register_op

MAX_AMBIGUITY = 3


def _is_flag(e: str) -> bool:
    return "\U0001f1e6" <= e[0] <= "\U0001f1ff"


@disk_cached
def emoji_tables() -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]],
                            dict[str, tuple[str, ...]]]:
    """(name -> emoji, character -> emoji by meaning, toneless syllable -> emoji by sound)."""
    import emoji

    emoji.config.load_language("zh")
    names: dict[str, list[str]] = {}
    for e, data in emoji.EMOJI_DATA.items():
        name = data.get("zh", "").strip(":")
        if (name and data.get("status") == emoji.STATUS["fully_qualified"]
                and "skin_tone" not in data.get("en", "") and all(is_han(ch) for ch in name)):
            names.setdefault(name, []).append(e)

    by_char: dict[str, list[str]] = {}
    not_flags = {n: es for n, es in names.items() if not _is_flag(es[0])}  # 智 is not 🇨🇱 (智利)
    for tier in (lambda n, ch: n == ch, lambda n, ch: n[-1] == ch, lambda n, ch: n[0] == ch):
        found: dict[str, list[str]] = {}
        for name, emojis in not_flags.items():
            if len(name) <= 2:
                for ch in set(name):
                    if ch not in by_char and tier(name, ch):
                        found.setdefault(ch, []).extend(emojis)
        by_char.update((ch, es) for ch, es in found.items() if len(es) <= MAX_AMBIGUITY)

    by_sound: dict[str, list[str]] = {}
    for name, emojis in names.items():
        if len(name) == 1 and char_readings(name):
            by_sound.setdefault(syllable_key(char_readings(name)[0]), []).extend(emojis)

    def freeze(d: dict[str, list[str]]) -> dict[str, tuple[str, ...]]:
        return {k: tuple(dict.fromkeys(v)) for k, v in d.items()}

    return freeze(names), freeze(by_char), freeze(by_sound)


@register_op
@dataclass
class Emoji(Op):
    """Replace a word, or some of its characters, by emoji.

    share: share of a word's characters replaced (at least one); sound: allow same-sound emoji.
    """

    name = "emoji"
    share: float = 0.5
    sound: bool = True
    _parameter_constraints = {"share": SHARE}

    def prepare(self) -> None:
        emoji_tables()

    def _options(self, text: str):
        _, by_char, by_sound = emoji_tables()

        def options(i: int) -> Candidates | None:  # by meaning first, else by sound
            ch = text[i]
            found = by_char.get(ch)
            if found is None and self.sound and is_han(ch) and char_readings(ch):
                found = by_sound.get(syllable_key(char_readings(ch)[0]))
            return (found, None) if found else None

        return options

    def candidates(self, text: str, start: int, end: int) -> list[Edit]:
        names = emoji_tables()[0]
        word = text[start:end]
        if len(word) > 1 and word in names:
            return [Edit(self.name, start, end, word, e) for e in names[word]]
        return self.char_candidates(text, self.found_chars(text, start, end, self._options(text)))

    def edit_span(self, text: str, start: int, end: int, rng: Rng) -> list[Edit]:
        names = emoji_tables()[0]
        word = text[start:end]
        if len(word) > 1 and word in names:
            return [Edit(self.name, start, end, word, rng.choice(names[word]))]
        return self.replace_chars(text, start, end, rng, self._options(text), self.share)
