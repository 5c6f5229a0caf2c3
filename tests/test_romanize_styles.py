"""Pinyin and abbreviations in the styles posters type them: spaced, capitalised, toned, look-alike."""
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cloak import Edit, Perturber, Rng, make_op
from cloak.hanzi import is_han
from cloak.ops.romanize import LOOKALIKES, MIX
from cloak.pinyin import word_reading

from .conftest import SAMPLE, read_jsonl
from .test_ops import cloak_word

POSTS = [r["text"] for r in read_jsonl(SAMPLE)]  # samples/cold/cold_test_300.jsonl
WORDS = Perturber(targets="all")  # jieba's words of a text: the spans the ops are given
PLAIN_PINYIN = "spacing=joined:case=lower:tones=none:lookalike=0"
PLAIN_ABBREV = "spacing=joined:lookalike=0"


def word(spec: str, text: str, seed: int = 0) -> str:
    return cloak_word(spec, text, seed)[0]


def outputs(spec: str, text: str, seeds: int = 200) -> Counter:
    return Counter(word(spec, text, s) for s in range(seeds))


# -- each style does what it says -------------------------------------------------------------------


@pytest.mark.parametrize("styles, text, expected", [
    ("", "白人", "bairen"),
    ("spacing=spaced", "白人", "bai ren"),
    ("case=capital", "白人", "BaiRen"),
    ("case=upper", "白人", "BAIREN"),
    ("spacing=spaced:case=capital", "同性恋", "Tong Xing Lian"),
    ("tones=marks", "白人", "báirén"),
    ("tones=marks:spacing=spaced", "白人", "bái rén"),
    ("tones=numbers", "白人", "bai2ren2"),
    ("tones=numbers:case=upper", "同性恋", "TONG2XING4LIAN4"),
    ("", "银行", "yinhang"),  # a polyphone read in context, not yinxing
    ("tones=numbers", "银行", "yin2hang2"),
    ("", "女权", "nvquan"),  # ü as posters type it without tones
    ("tones=numbers", "女权", "nv3quan2"),
    ("tones=marks", "女权", "nǚquán"),  # and as pypinyin marks it
    ("tones=marks:case=capital", "女权", "NǚQuán"),
    ("tones=numbers", "什么", "shen2me"),  # the neutral tone has no number
    ("tones=marks", "什么", "shénme"),
])
def test_each_pinyin_style(styles, text, expected):
    fixed = dict(p.split("=") for p in PLAIN_PINYIN.split(":"))
    fixed.update(dict(p.split("=") for p in styles.split(":") if p))
    spec = "pinyin:mode=word:" + ":".join(f"{k}={v}" for k, v in fixed.items())
    assert set(outputs(spec, text, 20)) == {expected}


def test_styles_of_one_character():
    spec = "pinyin:mode=char:spacing=spaced:case=capital:tones=marks:lookalike=0"
    assert set(outputs(spec, "黑人", 40)) == {"Hēi人", "黑Rén"}  # spacing needs two syllables
    assert set(outputs("pinyin:mode=char:case=upper:tones=none:lookalike=0", "垃圾", 40)) == {"LA圾", "垃JI"}


def test_lookalike_swaps_one_letter_or_all():
    seen = outputs(f"pinyin:mode=word:{PLAIN_PINYIN.replace('lookalike=0', 'lookalike=1')}", "垃圾", 300)
    assert set(seen) == {"1aji", "l@ji", "laj1", "1@j1"}  # l, a, i swapped one at a time, or all three
    assert set(outputs("pinyin:mode=word:case=upper:tones=none:lookalike=1", "垃圾", 300)) >= {"1AJI", "1@J1"}
    assert set(outputs(f"abbrev:{PLAIN_ABBREV.replace('lookalike=0', 'lookalike=1')}:case=lower",
                       "尼玛死了", 300)) == {"nm$l", "nms1", "nm$1"}
    assert set(outputs("abbrev:lookalike=1:case=lower:spacing=joined", "白人", 20)) == {"br"}  # nothing to swap
    assert set(outputs("pinyin:mode=word:tones=numbers:lookalike=1", "垃圾", 50)) <= {
        "la1ji1", "La1Ji1", "LA1JI1", "la1 ji1", "La1 Ji1", "LA1 JI1"}  # a digit would read as a tone
    assert set(LOOKALIKES) <= set("abcdefghijklmnopqrstuvwxyz")


def test_lookalike_probability():
    n = 1000
    swapped = sum(any(ch in "1$@03" for ch in word(f"pinyin:mode=word:{PLAIN_PINYIN[:-1]}0.3", "垃圾", s))
                  for s in range(n))
    assert 0.24 * n < swapped < 0.36 * n


@pytest.mark.parametrize("styles, text, expected", [
    ("case=lower:spacing=joined", "同性恋", "txl"),
    ("case=upper:spacing=joined", "同性恋", "TXL"),
    ("case=lower:spacing=spaced", "同性恋", "t x l"),
    ("case=upper:spacing=spaced", "同性恋", "T X L"),
    ("case=lower:spacing=joined:lookalike=1", "同性恋", "tx1"),
    ("case=upper:spacing=joined", "银行", "YH"),
    ("case=lower:spacing=joined", "女权", "nq"),
])
def test_each_abbrev_style(styles, text, expected):
    spec = f"abbrev:{styles}" + ("" if "lookalike" in styles else ":lookalike=0")
    assert set(outputs(spec, text, 20)) == {expected}


# -- the default mix ----------------------------------------------------------------------------------


def test_default_pinyin_mixes_styles_mostly_plain():
    seen = outputs("pinyin:mode=word", "白人", 1000)
    assert seen.most_common(1)[0][0] == "bairen"
    assert 0.3 < seen["bairen"] / 1000 < 0.65  # about 0.75 * 0.75 * 0.9 * 0.9
    for style in ("bai ren", "BAIREN", "BaiRen", "bai2ren2", "báirén"):
        assert seen[style] > 0, style
    assert any(ch in s for s in seen for ch in "1@3")  # look-alikes
    mixed = outputs("pinyin", "白人", 1000)
    assert mixed.most_common(1)[0][0] in ("bai人", "白ren", "bairen")
    assert {"bairen", "bai人", "白ren", "bai ren", "BAIREN"} <= set(mixed)


def test_default_abbrev_mixes_styles_mostly_plain():
    seen = outputs("abbrev", "同性恋", 1000)
    assert seen.most_common(1)[0][0] == "txl"
    assert 0.45 < seen["txl"] / 1000 < 0.75  # about 0.8 * 0.85 * 0.9
    assert {"txl", "TXL", "t x l", "tx1"} <= set(seen)


def test_mix_table_is_a_distribution_with_the_plain_style_first():
    for op, params in MIX.items():
        for param, styles in params.items():
            assert abs(sum(styles.values()) - 1) < 1e-9, (op, param)
            assert list(styles)[0] in ("joined", "lower", "none")
            assert max(styles, key=styles.get) == list(styles)[0]


def test_plain_joined_lowercase_is_the_first_candidate():
    assert make_op("pinyin").candidates("白人", 0, 2)[0].dst == "bairen"
    assert make_op("pinyin:mode=char").candidates("白人", 0, 2)[:2] == [
        Edit("pinyin", 0, 1, "白", "bai"), Edit("pinyin", 1, 2, "人", "ren")]
    assert make_op("abbrev").candidates("同性恋", 0, 3)[0].dst == "txl"
    assert make_op("abbrev:case=upper").candidates("同性恋", 0, 3)[0].dst == "TXL"
    assert [e.dst for e in make_op("abbrev:lookalike=0").candidates("同性恋", 0, 3)] == [
        "txl", "TXL", "t x l", "T X L"]  # 0.8 * 0.85, 0.2 * 0.85, 0.8 * 0.15, 0.2 * 0.15


# -- one fixed style is today's op, draw for draw ----------------------------------------------------


def old_pinyin(mode, text, start, end, rng):
    """The pinyin op before styles (toneless joined lowercase), for comparison."""
    if not all(is_han(ch) for ch in text[start:end]):
        return []
    syllables = [s.rstrip("012345") for s in word_reading(text[start:end])]
    if not all(s.isascii() and s.isalpha() for s in syllables):
        return []
    word = text[start:end]
    mode = mode if mode != "mixed" else ("word", "char")[rng.randrange(2)]
    if mode == "word" or len(word) == 1:
        return [Edit("pinyin", start, end, word, "".join(syllables))]
    i = rng.randrange(len(word))
    return [Edit("pinyin", start + i, start + i + 1, word[i], syllables[i])]


def old_abbrev(case, text, start, end, rng):
    """The abbrev op before styles, for comparison."""
    if end - start < 2 or not all(is_han(ch) for ch in text[start:end]):
        return []
    word = text[start:end]
    initials = "".join(s[0] for s in word_reading(word) if s[0].isalpha())
    if len(initials) != len(word):
        return []
    return [Edit("abbrev", start, end, word, initials.upper() if case == "upper" else initials)]


def test_known_outputs_of_the_plain_style():
    assert word(f"pinyin:mode=word:{PLAIN_PINYIN}", "黑人") == "heiren"
    assert {word(f"pinyin:mode=char:{PLAIN_PINYIN}", "黑人", s) for s in range(20)} == {"hei人", "黑ren"}
    assert word(f"abbrev:case=lower:{PLAIN_ABBREV}", "同性恋") == "txl"
    assert word(f"abbrev:case=upper:{PLAIN_ABBREV}", "同性恋") == "TXL"


@pytest.mark.parametrize("mode", ["word", "char", "mixed"])
def test_a_fixed_plain_pinyin_style_is_byte_for_byte_the_old_op(mode):
    op = make_op(f"pinyin:mode={mode}:{PLAIN_PINYIN}")
    for n, text in enumerate(POSTS):
        for start, end in WORDS.targets.spans(text):
            for seed in (n, n + 1000):
                new_rng, old_rng = Rng(seed), Rng(seed)
                assert op.edit_span(text, start, end, new_rng) == old_pinyin(mode, text, start, end, old_rng)
                assert new_rng.random() == old_rng.random()  # the same draws, no extra


@pytest.mark.parametrize("case", ["lower", "upper"])
def test_a_fixed_plain_abbrev_style_is_byte_for_byte_the_old_op(case):
    op = make_op(f"abbrev:case={case}:{PLAIN_ABBREV}")
    for n, text in enumerate(POSTS):
        for start, end in WORDS.targets.spans(text):
            rng = Rng(n)
            assert op.edit_span(text, start, end, rng) == old_abbrev(case, text, start, end, None)
            assert rng.random() == Rng(n).random()  # abbrev drew nothing before and draws nothing now
            assert op.candidates(text, start, end) == old_abbrev(case, text, start, end, None)


# -- every edit is a candidate ------------------------------------------------------------------------

SPECS = ["pinyin", "pinyin:mode=word", "pinyin:mode=char", "pinyin:lookalike=1", "pinyin:lookalike=0.5:tones=marks",
         "pinyin:tones=numbers:lookalike=1", "pinyin:case=capital:spacing=spaced", "abbrev", "abbrev:lookalike=1",
         "abbrev:case=upper:spacing=spaced:lookalike=0.5", f"pinyin:{PLAIN_PINYIN}", f"abbrev:{PLAIN_ABBREV}"]


def key(edit):
    return (edit.start, edit.end, edit.src, edit.dst)


@pytest.mark.parametrize("spec", SPECS)
def test_every_edit_is_a_candidate_on_real_posts(spec):
    op = make_op(spec)
    made = Counter()
    for n, text in enumerate(POSTS):
        for start, end in WORDS.targets.spans(text):
            candidates = op.candidates(text, start, end)
            keys = [key(c) for c in candidates]
            assert len(set(keys)) == len(keys)
            for c in candidates:
                assert start <= c.start <= c.end <= end and c.src == text[c.start:c.end] != c.dst
            for seed in range(3 if candidates else 1):
                edits = op.edit_span(text, start, end, Rng(seed * 7919 + n))
                assert bool(edits) == bool(candidates)
                assert {key(e) for e in edits} <= set(keys), (spec, text[start:end], edits)
                made.update(e.dst for e in edits)
    assert made


@pytest.mark.parametrize("spec", ["pinyin", "pinyin:mode=word", "abbrev"])
def test_every_candidate_of_a_word_is_made_by_some_seed(spec):
    """The candidates are exactly what the op makes: none listed that it never makes."""
    op = make_op(spec + ":lookalike=0.5")
    for text in ("白人", "垃圾", "女权"):
        candidates = {key(c) for c in op.candidates(text, 0, len(text))}
        made = {key(e) for s in range(20_000) for e in op.edit_span(text, 0, len(text), Rng(s))}
        assert made == candidates, text


chinese = st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF)
anything = st.characters(codec=None, categories=None)
pieces = st.sampled_from(["\ud800", "\udfff", "嗯", "呣", "欸", "女", "什么", "的", "👩‍👩‍👧", "\u0301", "𠀀"])
texts = st.lists(st.one_of(chinese, anything, pieces), min_size=1, max_size=12).map("".join)
OPS = [make_op(s) for s in SPECS]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, which=st.integers(0, len(OPS) - 1), seed=st.integers(0, 2**32))
def test_any_unicode_span(text, which, seed):
    op = OPS[which]
    for start in range(len(text)):
        for end in range(start + 1, min(len(text), start + 4) + 1):
            candidates = {key(c) for c in op.candidates(text, start, end)}
            edits = op.edit_span(text, start, end, Rng(seed))
            assert {key(e) for e in edits} <= candidates
            assert bool(edits) == bool(candidates)


# -- examples and parameters --------------------------------------------------------------------------


@pytest.mark.parametrize("spec", ["pinyin", "abbrev"])
def test_examples_show_each_style(spec):
    cls = type(make_op(spec))
    assert len(cls.examples) >= 4
    for params, text in cls.examples:
        op = make_op(f"{spec}:{params}" if params else spec)
        edits = op.apply(text, Rng(0), [(0, len(text))])
        assert edits and {key(e) for e in edits} <= {key(c) for c in op.candidates(text, 0, len(text))}


def test_spec_names_only_what_differs_from_the_defaults():
    assert make_op("pinyin").spec() == "pinyin"
    assert make_op("pinyin:case=upper:lookalike=0").spec() == "pinyin:case=upper:lookalike=0.0"
    assert make_op("abbrev:spacing=spaced").spec() == "abbrev:spacing=spaced"
