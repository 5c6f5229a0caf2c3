"""Emoji cloaks as posters write them: a character or word replaced by an emoji by meaning (猪 -> 🐷,
走 -> 🚶, 女 -> 👩) or by sound (婊 -> ⌚ biao, 麻烦 -> 🐴🍚, 友 -> 🈶), never by neither: the op wrote
台湾人 -> 🕎💊🧜, an emoji whose name 烛台 (candlestick) merely ends in 台, one (药丸, pill) that shares a
syllable of its name with 湾, one (人鱼, merperson) whose name starts with 人."""
from __future__ import annotations

import emoji as emoji_package
import pytest

from cloak.ops.emoji import SUFFIXES, Emoji, emoji_meanings, emoji_tables
from cloak.pinyin import char_readings, syllable_key


@pytest.fixture(scope="module")
def names() -> dict[str, set[str]]:
    """Each emoji's CLDR Chinese names (those of its fully-qualified and unqualified forms)."""
    emoji_package.config.load_language("zh")
    found: dict[str, set[str]] = {}
    for e, data in emoji_package.EMOJI_DATA.items():
        if data.get("zh"):
            found.setdefault(e, set()).add(data["zh"].strip(":"))
    return found


def test_every_mapping_follows_meaning_or_sound(names):
    hand = emoji_meanings()

    def means(text: str, e: str) -> bool:
        """The emoji is named by the text (or the character plus 子 / 头 / 儿: 猴子), or the hand-written
        table says Chinese readers take it for the text (走 🚶)."""
        return e in hand.get(text, ()) or any(n in (text, *(text + s for s in SUFFIXES)) for n in names.get(e, ()))

    words, by_char, by_sound = emoji_tables()
    wrong = [(w, e) for table in (words, by_char) for w, es in table.items() for e in es if not means(w, e)]
    assert not wrong, f"{len(wrong)} mappings by neither meaning nor sound, e.g. {wrong[:10]}"
    meant_by: dict[str, set[str]] = {}
    for ch, es in by_char.items():
        for e in es:
            meant_by.setdefault(e, set()).add(ch)
    for syllable, es in by_sound.items():
        for e in es:
            sounds = {syllable_key(r) for ch in meant_by.get(e, ()) for r in char_readings(ch)}
            assert syllable in sounds, (syllable, e, meant_by.get(e))


def cloaks(text: str) -> set[str]:
    return {edit.dst for edit in Emoji().candidates(text, 0, len(text))}


def test_what_posters_write_is_made_and_what_they_do_not_is_not():
    assert not cloaks("台湾人") & {"🕎", "💊", "🧜"}
    for text, wanted in (("婊", "⌚"), ("麻", "🐴"), ("烦", "🍚"), ("猪", "🐷"), ("友", "🈶"), ("走", "🚶"),
                         ("女", "👩"), ("几", "🐔"), ("狗", "🐕"), ("猴子", "🐒")):
        assert wanted in cloaks(text), (text, cloaks(text))
