"""Property tests: no op crashes on any Unicode; edits always replay and invert exactly; every edit an op
makes is one of its candidates."""
import functools
import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cloak import Perturber, Rng, apply_edits, available_ops, invert_edits, make_op
from cloak.hanzi import is_han
from cloak.common.io import RecordError, dump_record, is_blank, parse_record
from cloak.ops import example_specs

from .conftest import SAMPLE, read_jsonl

ALL_OPS = ",".join(sorted(available_ops()))
# every op at its defaults, and every style its examples show (pinyin:tones=marks, split:depth=2, ...)
STYLES = sorted(spec for spec in example_specs() if ":" in spec)
PERTURBERS = [Perturber(ops=op, targets="all", rate=0.7, seed=s)
              for s, op in enumerate([ALL_OPS, *sorted(available_ops()), *STYLES])]

# Any code point, surrogates included, weighted towards what posts contain.
chinese = st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF)
anything = st.characters(codec=None, categories=None)
pieces = st.sampled_from(["🐶", "👩‍👩‍👧", "🇨🇳", "❤️", "\u0301", "\u200b", "\ufeff", "\ud800", "\udfff",
                          "黑人", "同性恋", "nmsl", "[机智]", "http://t.cn/黑人"])
texts = st.lists(st.one_of(chinese, chinese, anything, pieces), min_size=1, max_size=60).map("".join)
SAMPLE_POSTS = [r["text"] for r in read_jsonl(SAMPLE)]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, which=st.integers(0, len(PERTURBERS) - 1), variant=st.integers(0, 3))
def test_ops_never_crash_and_edits_replay_and_invert(text, which, variant):
    out = PERTURBERS[which](text, variant=variant)
    assert out.source == text
    assert apply_edits(text, out.edits) == out.text
    assert invert_edits(out.text, out.edits) == text


@settings(max_examples=100, deadline=None)
@given(text=texts)
def test_records_with_any_text_survive_a_round_trip(text):
    record = {"id": "x", "text": text}
    line = dump_record(record)
    line.decode("utf-8")  # always valid UTF-8, surrogates or not
    if not is_blank(text):
        # a high and a low surrogate side by side are one character once written, as JSON reads "\ud800\udc00"
        paired = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
        assert parse_record(line.rstrip(b"\n"), "f", 1) == {**record, "text": paired}
    else:  # posts that show nothing are refused, clearly
        with pytest.raises(RecordError, match="line 1: field 'text': is empty"):
            parse_record(line.rstrip(b"\n"), "f", 1)


def test_surrogates_escaped_in_json_are_read_and_written_back():
    raw = json.dumps({"text": "黑人\ud800垃圾"}).encode()
    record = parse_record(raw, "f", 1)
    out = PERTURBERS[0](record["text"])
    assert invert_edits(out.text, out.edits) == record["text"]
    assert parse_record(dump_record({"text": out.text}).rstrip(), "f", 1)["text"] == out.text


@pytest.mark.slow
def test_a_100k_character_post():
    text = ("黑人和白人都是垃圾，同性恋🐶abc " * 5000)[:100_000]
    for p in PERTURBERS:
        out = p(text)
        assert apply_edits(text, out.edits) == out.text
    assert len(out.edits) > 1000


OPS = [make_op(spec) for spec in [*sorted(available_ops()), *STYLES, "pinyin:mode=word", "pinyin:mode=char",
                                  "homophone:word=false", "emoji:sound=false", "similar:top=1"]]


WORDS = Perturber(targets="all")  # jieba's words of a text: the spans the ops are given


def key(edit):
    return (edit.start, edit.end, edit.src, edit.dst)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(texts, st.sampled_from(SAMPLE_POSTS)), which=st.integers(0, len(OPS) - 1),
       seed=st.integers(0, 2**32))
def test_every_edit_an_op_makes_is_one_of_its_candidates(text, which, seed):
    """What the search attack tries (candidates) and what cloaking draws (edit_span) are one source."""
    op = OPS[which]
    for start, end in WORDS.targets.spans(text):
        candidates = op.candidates(text, start, end)
        assert len({key(c) for c in candidates}) == len(candidates)  # no candidate twice
        for c in candidates:
            assert start <= c.start <= c.end <= end and c.src == text[c.start:c.end] and c.dst != c.src
        assert op.candidates(text, start, end) == candidates  # a fixed order
        made = op.edit_span(text, start, end, Rng(seed))
        assert {key(e) for e in made} <= {key(c) for c in candidates}
        assert bool(made) == bool(candidates)  # an op with options always makes an edit, and only then


@functools.cache
def _words_only_matcher():
    import ahocorasick_rs

    from cloak.targets import segment_words

    return ahocorasick_rs.AhoCorasick(segment_words(), matchkind=ahocorasick_rs.MatchKind.LeftmostLongest)


def reference_word_spans(text: str) -> list[tuple[int, int]]:
    """What --targets all means: dictionary words leftmost-longest, and in the gaps between them each Han
    character alone and each run of Latin letters and digits (WordTargets finds these in one pass)."""
    safe = re.sub("[\ud800-\udfff]", "\ufffd", text)
    spans, pos = [], 0
    for _, start, end in [*_words_only_matcher().find_matches_as_indexes(safe), (None, len(text), None)]:
        i = pos
        while i < start:
            if is_han(text[i]):
                spans.append((i, i + 1))
                i += 1
            elif m := re.compile("[A-Za-z0-9]+").match(text, i, start):
                spans.append(m.span())
                i = m.end()
            else:
                i += 1
        if end is not None:
            spans.append((start, end))
            pos = end
    return spans


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(texts, st.sampled_from(SAMPLE_POSTS)))
def test_all_words_targets_are_words_then_characters_and_latin_runs(text):
    assert WORDS.targets.spans(text) == reference_word_spans(text)


@settings(max_examples=200, deadline=None)
@given(text=texts, which=st.integers(0, len(PERTURBERS) - 1),
       extra=st.sampled_from([{}, {"cloak": 1}, {"x": "\ud800"}]))
def test_cloaked_lines_are_the_records_json(text, which, extra):
    """cloak perturb writes each line straight from the edits; it must be json.dumps of the record."""
    from cloak.run import cloak_record

    record = {"id": "x", "text": text, **extra}
    p = PERTURBERS[which]
    (line,), _, _ = cloak_record(p, 7, record, 1)
    out = p(text, key=7)
    expected = {**record, "source_text": text, "text": out.text,
                "cloak": {"ops": out.ops, "seed": p.seed, "variant": 0, "edits": [e.to_dict() for e in out.edits]}}
    assert line == dump_record(expected)
