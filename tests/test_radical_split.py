"""The radical op (keep the phonetic, swap the radical) and split's depth."""
import pytest

from cloak import Perturber, Rng, apply_edits, make_op
from cloak.hanzi import char_frequencies, common_chars, gb2312_chars, is_han
from cloak.ops.radical import radical_table
from cloak.ops.split import deep_split_table, is_clean_part, split_table
from cloak.pinyin import char_readings, syllable_key


def substitutes(spec: str, ch: str) -> list[str]:
    return [e.dst for e in make_op(spec).candidates(ch, 0, 1)]


def main_key(ch: str, tone: str = "toneless") -> str:
    return syllable_key(char_readings(ch)[0], tone)


def cloak(spec: str, word: str, seed: int = 0) -> str:
    return apply_edits(word, make_op(spec).edit_span(word, 0, len(word), Rng(seed)))


# -- radical ------------------------------------------------------------------------------------------

def test_radical_the_issues_examples():
    assert "嘿" in substitutes("radical", "黑")  # 黑 inside 嘿 = 口 + 黑
    assert "吗" in substitutes("radical", "妈")  # 妈 = 女 + 马, 吗 = 口 + 马
    assert "马" in substitutes("radical", "妈")  # the radical dropped: 你马
    assert "汲" not in substitutes("radical", "级")  # 汲 is not one of the 3,500 common characters ...
    assert "汲" in substitutes("radical:reach=gb2312", "级")  # ... but is in GB2312: 级 = 纟 + 及, 汲 = 氵 + 及
    assert "汲" in substitutes("radical:reach=cjk", "级")
    assert "岨" in substitutes("radical:reach=cjk", "蛆")  # 岨 is outside GB2312: 蛆 = 虫 + 且, 岨 = 山 + 且
    assert {cloak("radical", "黑", s) for s in range(5)} == {"嘿"}


def test_radical_never_shares_only_the_radical():
    assert "纪" not in substitutes("radical:reach=cjk", "级")  # 纪 shares 纟 (and 丝) with 级, not 及


def test_radical_substitutes_read_like_the_character():
    for ch, (items, _) in radical_table("toneless", "common").items():
        assert ch not in items
        assert {main_key(d) for d in items} == {main_key(ch)}, ch


def test_radical_exact_keeps_the_tone():
    table = radical_table("exact", "gb2312")
    for ch, (items, _) in table.items():
        assert {main_key(d, "exact") for d in items} == {main_key(ch, "exact")}, ch
    assert "汲" in substitutes("radical:reach=gb2312:sound=exact", "级")  # ji2 both
    assert "芨" not in substitutes("radical:reach=gb2312:sound=exact", "级")  # ji1
    assert "芨" in substitutes("radical:reach=gb2312", "级")


def test_radical_reach():
    common, gb2312 = common_chars(), frozenset(gb2312_chars())
    assert all(d in common for items, _ in radical_table("toneless", "common").values() for d in items)
    assert all(d in gb2312 for items, _ in radical_table("toneless", "gb2312").values() for d in items)
    assert len(radical_table("toneless", "common")) < len(radical_table("toneless", "gb2312"))


def test_radical_lists_frequent_characters_first():
    freqs = char_frequencies()
    for spec in ("radical", "radical:reach=gb2312"):
        for ch in "级妈同生工方巴":
            found = substitutes(spec, ch)
            assert found, (spec, ch)
            counts = [freqs.get(d, 0) for d in found]
            assert counts == sorted(counts, reverse=True), (spec, ch, found)
            if spec == "radical:reach=gb2312":
                assert [d in common_chars() for d in found] == sorted((d in common_chars() for d in found),
                                                                     reverse=True)


def test_radical_share():
    word = "台巴子"  # every character has a substitute
    assert all(len(make_op("radical:share=1").edit_span(word, 0, 3, Rng(s))) == 3 for s in range(10))
    assert all(len(make_op("radical:share=0").edit_span(word, 0, 3, Rng(s))) == 1 for s in range(10))
    assert len(make_op("radical:share=1").edit_span("同性恋", 0, 3, Rng(0))) == 2  # 恋: no such character
    assert make_op("radical").edit_span("死", 0, 1, Rng(0)) == []  # nothing shares its sound and a part


def test_radical_edits_are_among_its_candidates_on_real_posts(sample_texts):
    words = Perturber(targets="all").targets
    for spec in ("radical", "radical:reach=gb2312:sound=exact:share=0.3"):
        op = make_op(spec)
        for text in sample_texts[:120]:
            for start, end in words.spans(text):
                candidates = {(c.start, c.end, c.src, c.dst) for c in op.candidates(text, start, end)}
                for seed in range(5):
                    made = op.edit_span(text, start, end, Rng(seed))
                    assert {(e.start, e.end, e.src, e.dst) for e in made} <= candidates
                    assert bool(made) == bool(candidates)
                    assert all(is_han(e.dst) and len(e.dst) == 1 for e in made)


def test_radical_and_split_examples_cloak_their_words():
    for spec in ("radical", "split"):
        cls = type(make_op(spec))
        assert cls.examples
        for params, word in cls.examples:
            op = make_op(":".join(filter(None, [spec, params])))
            assert op.edit_span(word, 0, len(word), Rng(0)), (spec, params, word)


# -- split --------------------------------------------------------------------------------------------

TEXT = "你个婊子，默认黑人都是垃圾，好狗不挡道，同性恋滚出去"
SPANS = [(0, 1), (1, 2), (2, 4), (5, 7), (7, 9), (9, 10), (10, 11), (11, 13), (14, 15), (15, 16), (16, 18),
         (18, 19), (20, 23), (23, 26)]


def test_split_depth_1_is_the_split_of_before():
    for word, split in [("默", "黑犬"), ("好", "女子"), ("狗", "犭句"), ("婊", "女表"), ("级", "丝及"), ("花", "草化")]:
        assert cloak("split:share=1", word) == split
        assert cloak("split:share=1:depth=1", word) == split
    op = make_op("split")
    assert op.spec() == "split" and make_op("split:depth=1").spec() == "split"
    assert [apply_edits(TEXT, op.apply(TEXT, Rng(seed), SPANS)) for seed in range(4)] == [
        "亻尔个女表子，默讠人黑人者阝日疋垃土及，女子犭句不扌当辶首，同性亦心氵衮出去",
        "亻尔个女表子，黑犬讠人黑人者阝日疋垃土及，女子犭句不扌当辶首，同忄生恋滚山山去",
        "亻尔个女表子，黑犬认黑人者阝日疋垃土及，女子犭句不扌当辶首，同忄生恋氵衮山山土厶",
        "亻尔个女表子，默讠人黑人者阝日疋土立土及，女子犭句不扌当辶首，同忄生亦心滚出土厶",
    ]


def test_split_deeper():
    assert cloak("split:share=1:depth=2", "婊") == "女丰衣"  # 表 -> 丰衣 in turn
    assert len(cloak("split:share=1:depth=2", "婊")) > len(cloak("split:share=1", "婊"))
    assert cloak("split:share=1:depth=2", "花") == "艹亻匕"  # the radical as seen (艹, not 草 -> 艹早)
    assert cloak("split:share=1:depth=2", "级") == "纟及"
    assert cloak("split:share=1:depth=2", "蛆") == "虫且"  # 虫 -> 口厶 would not read as 虫
    assert cloak("split:share=1:depth=2", "默") == "黑犬"  # nothing to split further
    depth1, depth2, depth3 = split_table(), deep_split_table(2), deep_split_table(3)
    assert depth2.keys() == depth1.keys() == depth3.keys()
    assert sum(len(depth2[c]) > len(depth1[c]) for c in depth1) > 5000
    assert all(len(depth3[c]) >= len(depth2[c]) for c in depth1)
    with pytest.raises(ValueError, match=r"op split: 'depth' must be an integer >= 1, got 0"):
        make_op("split:depth=0")


def test_split_share_1_splits_every_character(sample_texts):
    assert cloak("split:share=1", "默认") == "黑犬讠人"
    op, table = make_op("split:share=1"), split_table()
    words = Perturber(targets="all").targets
    for text in sample_texts[:100]:
        for start, end in words.spans(text):
            made = op.edit_span(text, start, end, Rng(0))
            assert [e.start for e in made] == [i for i in range(start, end) if text[i] in table]


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_split_never_writes_a_stroke_or_a_private_use_part(depth, sample_texts):
    table = deep_split_table(depth)
    assert all(is_clean_part(p) for parts in table.values() for p in parts)
    assert not any("\ue000" <= p <= "\uf8ff" or "\u31c0" <= p <= "\u31ef" or p in "一丨丿丶乙□"
                   for parts in table.values() for p in parts)
    assert table["表"] == "丰衣" and "成" not in table  # 丰 + a private-use code point; 戊 + the stroke ㇆
    op = make_op(f"split:share=1:depth={depth}")
    for text in sample_texts[:50]:
        for e in op.apply(text, Rng(0), [(0, len(text))]):
            assert all(is_clean_part(p) for p in e.dst)
