"""The emoji op's three paths: words and characters by meaning (CLDR names and data/emoji_meanings.tsv),
characters by sound; what it makes of the words posters cloak, and that its tables stay consistent."""
import csv
from importlib import resources

import emoji
import pytest

from cloak import Perturber, Rng, make_op
from cloak.hanzi import is_han
from cloak.ops.emoji import MAX_SOUND, SUFFIXES, Emoji, emoji_meanings, emoji_tables
from cloak.pinyin import char_readings, syllable_key, word_reading

from .conftest import SAMPLE, read_jsonl

POSTS = [r["text"] for r in read_jsonl(SAMPLE)]
WORDS = Perturber(targets="all")  # jieba's words of a text: the spans the ops are given
LEXICON = [row["term"] for row in csv.DictReader(
    resources.files("cloak").joinpath("data/lexicon.tsv").open(encoding="utf-8"), delimiter="\t")]


def cloak_word(op: str, word: str, seed: int = 0) -> str:
    text = f"说{word}了"
    for e in sorted(make_op(op).apply(text, Rng(seed), [(1, 1 + len(word))]), key=lambda e: -e.start):
        text = text[:e.start] + e.dst + text[e.end:]
    return text[1:-1]


def lenders(syllable: str) -> set[str]:
    """The emoji of the characters that have one by meaning and read ``syllable``."""
    by_char = emoji_tables()[1]
    return {e for ch, es in by_char.items()
            if char_readings(ch) and syllable_key(char_readings(ch)[0]) == syllable for e in es}


def test_mafan_becomes_horse_rice_by_sound():
    """麻 ma -> 马 🐴, 烦 fan -> 饭 🍚: the most direct emoji of each syllable come first."""
    op = Emoji(share=1)
    candidates = op.candidates("麻烦", 0, 2)
    assert [(c.src, c.dst) for c in candidates[:2]] == [("麻", "🐴"), ("烦", "🍚")]
    made = {cloak_word("emoji:share=1", "麻烦", seed) for seed in range(40)}
    assert "🐴🍚" in made
    assert all(len(m) == 2 and not any(is_han(ch) for ch in m) for m in made)  # both characters, always


@pytest.mark.parametrize("word, expected", [
    ("走", {"🚶"}), ("跑", {"🏃"}), ("死", {"💀", "☠️"}), ("滚", {"👉"}), ("屁股", {"🍑"}),
    ("几", {"🐔"}), ("猴子", {"🐒"}), ("狗", {"🐕", "🐶"}), ("日本", {"🇯🇵"}), ("蝗虫", {"🦗"}),
])
def test_meanings_and_sounds_of_single_words(word, expected):
    assert {cloak_word("emoji", word, seed) for seed in range(20)} == expected


def test_the_meanings_table_wins_over_names_and_sound_and_keeps_its_order():
    op = Emoji(share=1)
    for word, emojis in emoji_meanings().items():
        assert [c.dst for c in op.candidates(word, 0, len(word))] == list(emojis), word
    # 吃 had 😋 (好吃) by name; the table keeps it first and adds 🍴
    assert [c.dst for c in op.candidates("吃", 0, 1)] == ["😋", "🍴"]


def test_suffixes_are_left_as_they_are():
    assert {cloak_word("emoji:share=1", "鬼子", s) for s in range(10)} == {"👻子"}


def test_meanings_table_is_clean():
    text = resources.files("cloak").joinpath("data/emoji_meanings.tsv").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0].startswith("# ") and "mmcloak" in lines[0]
    assert lines[1] == "word\temoji"
    rows = [line.split("\t") for line in lines[2:]]
    assert all(len(r) == 2 and r[0] == r[0].strip() and r[1] == r[1].strip() for r in rows)
    words = [w for w, _ in rows]
    assert words == sorted(words) and len(set(words)) == len(words)
    assert 60 <= len(rows) <= 120
    assert len(emoji_meanings()) == len(rows)
    for word, emojis in emoji_meanings().items():
        assert word and all(is_han(ch) for ch in word), word
        assert emojis and len(set(emojis)) == len(emojis), word
        for e in emojis:
            assert emoji.is_emoji(e), (word, e)
            assert emoji.EMOJI_DATA[e]["status"] == emoji.STATUS["fully_qualified"], (word, e)


def test_sound_table_only_holds_emoji_of_characters_that_read_the_same():
    _, by_char, by_sound = emoji_tables()
    assert {"ji", "ma", "fan"} <= set(by_sound)
    for syllable, emojis in by_sound.items():
        assert 1 <= len(emojis) <= MAX_SOUND
        assert set(emojis) <= lenders(syllable), syllable


def test_an_emoji_of_two_sounds_stands_in_for_neither():
    """🐛 means 虫 (chong) and 蛆 (qu), 👊 打 (da) and 拳 (quan): none of them is a sound's stand-in."""
    by_sound = emoji_tables()[2]
    assert not {"🐛", "🪱", "👊", "👂", "❤️"} & {e for es in by_sound.values() for e in es}
    assert {cloak_word("emoji:share=1", "去死", s) for s in range(10)} == {"去💀", "去☠️"}
    assert Emoji().candidates("大", 0, 1) == []  # not 🪯 (坎达) by a looser tie


@pytest.mark.slow
def test_sound_path_gives_emoji_of_a_character_read_the_same_in_context():
    _, by_char, _ = emoji_tables()
    op = Emoji(share=1)
    checked = 0
    for text in POSTS + LEXICON:
        for start, end in WORDS.targets.spans(text):
            span = text[start:end]
            reading = word_reading(span) if all(is_han(ch) for ch in span) else None
            for c in op.candidates(text, start, end):
                if c.end - c.start != 1 or c.src in by_char:
                    continue  # a word or a character by meaning
                assert c.src not in SUFFIXES and is_han(c.src), c
                syllable = syllable_key(reading[c.start - start] if reading else char_readings(c.src)[0])
                assert c.dst in lenders(syllable), (text, c)
                checked += 1
    assert checked > 500


def test_every_emoji_made_is_in_the_word_table():
    """attacks/victims/habertor.py builds its alphabet from the first table: it must hold every emoji the op makes."""
    words, by_char, by_sound = emoji_tables()
    alphabet = {e for es in words.values() for e in es}
    assert {e for es in by_char.values() for e in es} <= alphabet
    assert {e for es in by_sound.values() for e in es} <= alphabet


@pytest.mark.parametrize("spec", ["emoji", "emoji:share=1", "emoji:share=0.2", "emoji:sound=false"])
def test_edits_are_among_the_candidates_on_real_posts(spec):
    op = make_op(spec)
    for text in POSTS:
        for start, end in WORDS.targets.spans(text):
            candidates = {(c.start, c.end, c.src, c.dst) for c in op.candidates(text, start, end)}
            for seed in range(5):
                made = op.edit_span(text, start, end, Rng(seed))
                assert {(e.start, e.end, e.src, e.dst) for e in made} <= candidates, (text, made)
                assert bool(made) == bool(candidates)


def test_lexicon_coverage():
    """With the meanings table and the sound path most lexicon terms have an emoji cloak: 478 of 553, 245 by
    meaning alone. (Before the names that merely end or start with a character were dropped as its meaning,
    烛台 🕎 for 台 and 人鱼 🧜 for 人, it was 95% and 440: cloaks by neither meaning nor sound.)"""
    op, by_meaning = Emoji(), Emoji(sound=False)
    covered = sum(bool(op.candidates(t, 0, len(t))) for t in LEXICON)
    assert covered >= 0.85 * len(LEXICON)
    assert sum(bool(by_meaning.candidates(t, 0, len(t))) for t in LEXICON) >= 240


def test_examples_are_set():
    assert ("share=1", "麻烦") in Emoji.examples and ("", "走") in Emoji.examples
    for params, word in Emoji.examples:
        assert make_op(f"emoji:{params}" if params else "emoji").candidates(word, 0, len(word)), word
