"""What each op does to the words posters cloak."""
import dataclasses
import subprocess
import sys
import textwrap

import pytest

from cloak import Edit, Lexicon, Op, Perturber, Rng, make_op, parse_ops, register_op
from cloak.hanzi import common_chars, gb2312_chars, is_han
from cloak.pinyin import char_readings, syllable_key, word_reading


def cloak_word(op: str, word: str, seed: int = 0) -> tuple[str, list[Edit]]:
    out = make_op(op).apply(f"说{word}了", Rng(seed), [(1, 1 + len(word))])
    text = "说" + word + "了"
    for e in sorted(out, key=lambda e: e.start, reverse=True):
        assert 1 <= e.start <= e.end <= 1 + len(word), "edits stay inside the target span"
        text = text[:e.start] + e.dst + text[e.end:]
    return text[1:-1], out


def toneless(ch: str) -> set[str]:
    return {r.rstrip("012345") for r in char_readings(ch)}


@pytest.mark.parametrize("word", ["白人", "黑人", "同性恋", "女权", "垃圾", "河南人", "狗"])
def test_homophone_sounds_the_same_and_uses_common_characters(word):
    for seed in range(20):
        new, edits = cloak_word("homophone", word, seed)
        assert new != word and edits
        reading = word_reading(word)
        for e in edits:
            for k, (_, b) in enumerate(zip(e.src, e.dst)):
                assert reading[e.start - 1 + k].rstrip("012345") in toneless(b), (word, e)
                assert b in common_chars()


def test_homophone_rarer_characters_on_request():
    """common_share=0: every substitute sounds the same and is one no common-character filter knows."""
    gb2312 = set(gb2312_chars())
    for rare, pool in (("gb2312", gb2312), ("cjk", None)):
        made = set()
        for seed in range(30):
            new, edits = cloak_word(f"homophone:common_share=0:rare={rare}", "白人", seed)
            for e in edits:
                assert len(e.src) == len(e.dst) == 1 and e.dst not in common_chars()
                assert word_reading("白人")[e.start - 1].rstrip("012345") in toneless(e.dst)
                assert pool is None or e.dst in pool
                made.add(e.dst)
        assert len(made) > 3
        if pool is None:
            assert made - gb2312, "rare=cjk reaches past GB2312"
    mixed = {cloak_word("homophone:common_share=0.5", "白人", s)[0] for s in range(40)}
    assert "白刃" in mixed and any(ch not in common_chars() for w in mixed for ch in w)
    # the default draws nothing more than before the parameter existed
    assert all(cloak_word("homophone", "黑人", s) == cloak_word("homophone:common_share=1", "黑人", s)
               for s in range(20))


def test_word_readings_are_pypinyins_in_context():
    """The fast phrase path reads polyphone words exactly as pypinyin's lazy_pinyin does."""
    from pypinyin import Style, lazy_pinyin

    from cloak.hanzi import word_frequencies

    words = [w for w in list(word_frequencies())[::40] if 2 <= len(w) <= 6
             and all(char_readings(c) for c in w) and any(len(char_readings(c)) > 1 for c in w)]
    assert len(words) > 5000
    for w in words:
        assert word_reading(w) == tuple(lazy_pinyin(w, style=Style.TONE3, neutral_tone_with_five=False)), w


def test_homophone_prefers_a_dictionary_word():
    assert {cloak_word("homophone", "白人", s)[0] for s in range(10)} == {"白刃"}


def test_homophone_tone_modes():
    assert syllable_key("bai2", "exact") == "bai2"
    assert syllable_key("bai2", "toneless") == "bai"
    assert [syllable_key(s, "fuzzy") for s in ("shi4", "zhang1", "nan2", "ling2", "neng2")] == \
        ["si", "zan", "lan", "lin", "len"]
    for seed in range(10):
        new, edits = cloak_word("homophone:tone=exact:word=false", "黑", seed)
        assert char_readings(new)[0] == "hei1"
    fuzzy = {cloak_word("homophone:tone=fuzzy:word=false", "是", s)[0] for s in range(40)}
    assert any(syllable_key(char_readings(c)[0], "toneless") == "si" for c in fuzzy)


def test_split_gives_recognisable_components():
    assert cloak_word("split:share=1", "好")[0] == "女子"
    assert cloak_word("split:share=1", "默")[0] == "黑犬"
    assert cloak_word("split:share=1", "狗")[0] == "犭句"  # the side form, not 犬句
    assert cloak_word("split:share=1", "人")[1] == []  # 丿乀 is strokes, not a split


def test_abbrev_and_pinyin():
    plain_abbrev, plain_pinyin = "spacing=joined:lookalike=0", "spacing=joined:case=lower:tones=none:lookalike=0"
    assert cloak_word(f"abbrev:case=lower:{plain_abbrev}", "同性恋")[0] == "txl"
    assert cloak_word(f"abbrev:case=upper:{plain_abbrev}", "智障")[0] == "ZZ"
    assert cloak_word("abbrev", "狗")[1] == []
    assert cloak_word(f"pinyin:mode=word:{plain_pinyin}", "黑人")[0] == "heiren"
    assert cloak_word(f"pinyin:mode=word:{plain_pinyin}", "银行")[0] == "yinhang"  # polyphone read in context
    new = cloak_word(f"pinyin:mode=char:{plain_pinyin}", "黑人")[0]
    assert new in ("hei人", "黑ren")


def test_english_and_emoji():
    assert cloak_word("english", "同性恋")[0] in ("gay", "homo", "homosexual")
    assert cloak_word("english", "越南猴子")[0].startswith("越南")
    assert cloak_word("english", "天气不错")[1] == []  # no table word inside: left to another op
    assert cloak_word("emoji", "狗")[0] in ("🐕", "🐶")
    assert cloak_word("emoji", "猴子")[0] == "🐒"
    new, edits = cloak_word("emoji", "几")  # no emoji means 几: one that sounds like it (鸡)
    assert new == "🐔"


def test_scripts():
    assert cloak_word("traditional", "说话")[0] == "說話"
    assert cloak_word("traditional", "皇后")[1] == []
    assert cloak_word("variant:share=1", "说")[0] == "説"
    assert cloak_word("traditional", "白人")[1] == []


def test_typography():
    assert cloak_word("shuffle", "歧视")[0] == "视歧"
    new, edits = cloak_word("noise:symbols=*", "黑人")
    assert new == "黑*人" and edits == [Edit("noise", 2, 2, "", "*")]
    assert cloak_word("zerowidth", "黑人鬼")[0].replace("\u200b", "").replace("\u200c", "") \
        .replace("\u200d", "").replace("\u2060", "") == "黑人鬼"
    assert cloak_word("fullwidth", "nmsl")[0] == "ｎｍｓｌ"
    assert cloak_word("fullwidth", "黑人")[1] == []


def test_op_specs():
    op = make_op("homophone:tone=fuzzy:share=0.25:word=no")
    assert (op.tone, op.share, op.word) == ("fuzzy", 0.25, False)
    assert op.spec() == "homophone:tone=fuzzy:word=False:share=0.25"
    assert [o.name for o in parse_ops("homophone, emoji,split")] == ["homophone", "emoji", "split"]
    with pytest.raises(ValueError, match="unknown op 'homofone'"):
        make_op("homofone")
    with pytest.raises(ValueError, match="op homophone: unknown parameter 'colour'; known: common_share, rare, "
                                         "share, tone, word"):
        make_op("homophone:colour=red")
    with pytest.raises(ValueError, match="'share' must be a number, got 'lots'"):
        make_op("homophone:share=lots")
    with pytest.raises(ValueError, match="'tone' must be one of 'exact', 'toneless', 'fuzzy', got 'loud'"):
        make_op("homophone:tone=loud")


@pytest.mark.parametrize("spec, message", [
    ("split:share=7", "op split: 'share' must be a number in [0, 1], got 7.0"),
    ("noise:share=2", "op noise: 'share' must be a number in [0, 1], got 2.0"),
    ("split:shar=0.3", "op split: unknown parameter 'shar'; did you mean 'share'?"),
    ("similar:top=0", "op similar: 'top' must be an integer >= 1, got 0"),
    ("noise:symbols=", "op noise: 'symbols' must be a non-empty string, got ''"),
    ("abbrev:case=Upper", "op abbrev: 'case' must be one of 'lower', 'upper', 'mix', got 'Upper'"),
    ("traditional:share=1", "op traditional: takes no parameters, got 'share'"),
    ("radical:reach=far", "op radical: 'reach' must be one of 'common', 'gb2312', 'cjk', got 'far'"),
    ("radical:sound=loud", "op radical: 'sound' must be one of 'toneless', 'exact', 'any', got 'loud'"),
    ("radical:share=2", "op radical: 'share' must be a number in [0, 1], got 2.0"),
    ("radical:raech=gb2312", "op radical: unknown parameter 'raech'; did you mean 'reach'?"),
    ("pinyin:case=sideways", "op pinyin: 'case' must be one of 'lower', 'capital', 'upper', 'mix', got 'sideways'"),
    ("pinyin:spacing=wide", "op pinyin: 'spacing' must be one of 'joined', 'spaced', 'mix', got 'wide'"),
    ("pinyin:tones=loud", "op pinyin: 'tones' must be one of 'none', 'marks', 'numbers', 'mix', got 'loud'"),
    ("pinyin:lookalike=2", "op pinyin: 'lookalike' must be a number in [0, 1], got 2.0"),
    ("pinyin:lookalike=lots", "op pinyin: 'lookalike' must be a number, got 'lots'"),
    ("abbrev:case=capital", "op abbrev: 'case' must be one of 'lower', 'upper', 'mix', got 'capital'"),
    ("abbrev:spacing=wide", "op abbrev: 'spacing' must be one of 'joined', 'spaced', 'mix', got 'wide'"),
    ("abbrev:lookalike=-0.1", "op abbrev: 'lookalike' must be a number in [0, 1], got -0.1"),
    ("homophone:common_share=1.5", "op homophone: 'common_share' must be a number in [0, 1], got 1.5"),
    ("homophone:rare=everything", "op homophone: 'rare' must be one of 'gb2312', 'cjk', got 'everything'"),
])
def test_op_parameters_out_of_range_are_refused(spec, message):
    with pytest.raises(ValueError) as info:
        make_op(spec)
    assert str(info.value) == message


def test_ops_made_in_python_are_checked_too():
    from cloak.ops import Emoji, Split

    with pytest.raises(ValueError, match=r"op split: 'share' must be a number in \[0, 1\], got -0.1"):
        Split(share=-0.1)
    with pytest.raises(ValueError, match="'sound' must be true or false, got 'no'"):
        Emoji(sound="no")
    assert Split(share=1).share == 1.0 and isinstance(Split(share=1).share, float)


def test_prepare_loads_every_table_an_op_reads():
    """After prepare(), cloaking imports nothing more: an op's tables (pypinyin's among them, 1 s) load
    up front, before workers fork and outside a timed search, not at the first word it reads."""
    script = textwrap.dedent("""
        import sys
        from cloak import Rng, available_ops, make_op
        ops = [make_op(name) for name in available_ops()]
        for op in ops:
            op.prepare()
        before = set(sys.modules)
        for op in ops:
            for text in ("他们白人都是垃圾", "银行的同性恋女权婊", "黑鬼滚出中国", "hello 你好"):
                for start in range(len(text)):
                    for end in range(start + 1, min(start + 4, len(text)) + 1):
                        op.candidates(text, start, end)
                        op.edit_span(text, start, end, Rng(0))
        print(sorted(set(sys.modules) - before))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_register_your_own_op(monkeypatch):
    from cloak.ops import base

    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))  # the op is gone for the tests after this one

    @register_op
    @dataclasses.dataclass
    class Reverse(Op):
        name = "test-reverse"

        def edit_span(self, text, start, end, rng):
            return [Edit(self.name, start, end, text[start:end], text[start:end][::-1])]

    out = Perturber(ops="test-reverse", targets=Lexicon(["同性恋"]))("他是同性恋")
    assert out.text == "他是恋性同"
    with pytest.raises(TypeError, match="dataclass"):
        register_op(type("Plain", (Op,), {"name": "plain"}))


def test_every_substitute_of_char_swapping_ops_is_readable(sample_texts):
    """homophone brings only common characters; other ops bring no control characters."""
    p = Perturber(ops="homophone", seed=3)
    for text in sample_texts:
        for e in p(text).edits:
            assert all(ch in common_chars() for ch in e.dst if is_han(ch))
