"""Property tests: no op crashes on any Unicode; edits always replay and invert exactly."""
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cloak import Perturber, apply_edits, available_ops, invert_edits
from cloak.io import RecordError, dump_record, is_blank, parse_record

ALL_OPS = ",".join(sorted(available_ops()))
PERTURBERS = [Perturber(ops=op, targets="all", rate=0.7, seed=s)
              for s, op in enumerate([ALL_OPS, *sorted(available_ops())])]

# Any code point, surrogates included, weighted towards what posts contain.
chinese = st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF)
anything = st.characters(codec=None, categories=None)
pieces = st.sampled_from(["🐶", "👩‍👩‍👧", "🇨🇳", "❤️", "\u0301", "\u200b", "\ufeff", "\ud800", "\udfff",
                          "黑人", "同性恋", "nmsl", "[机智]", "http://t.cn/黑人"])
texts = st.lists(st.one_of(chinese, chinese, anything, pieces), min_size=1, max_size=60).map("".join)


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
        assert parse_record(line.rstrip(b"\n"), "f", 1) == record
    else:  # posts that show nothing are refused, clearly
        with pytest.raises(RecordError, match="line 1: field 'text': is empty"):
            parse_record(line.rstrip(b"\n"), "f", 1)


def test_surrogates_escaped_in_json_are_read_and_written_back():
    raw = json.dumps({"text": "黑人\ud800垃圾"}).encode()
    record = parse_record(raw, "f", 1)
    out = PERTURBERS[0](record["text"])
    assert invert_edits(out.text, out.edits) == record["text"]
    assert parse_record(dump_record({"text": out.text}).rstrip(), "f", 1)["text"] == out.text


def test_a_100k_character_post():
    text = ("黑人和白人都是垃圾，同性恋🐶abc " * 5000)[:100_000]
    for p in PERTURBERS:
        out = p(text)
        assert apply_edits(text, out.edits) == out.text
    assert len(out.edits) > 1000
