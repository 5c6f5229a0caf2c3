"""Targets mined from labelled posts, and cloaks of whole terms: what makes the attacks' figures true to
real cloaking."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from cloak import Perturber
from cloak.mining import build_targets, candidate_terms, describe_targets, mine_terms, score_terms
from cloak.ops import available_ops, make_op
from cloak.ops.homophone import Homophone
from cloak.targets import Lexicon, default_lexicon

from .conftest import read_jsonl

# A hand-made corpus: 垃圾 and 恶心 say a post is offensive, 天气 and 的 say nothing.
CORPUS = ([{"text": "这些人都是垃圾", "label": 1}] * 6 + [{"text": "真恶心，垃圾", "label": 1}] * 4
          + [{"text": "恶心的天气", "label": 1}] * 2 + [{"text": "今天天气很好", "label": 0}] * 8
          + [{"text": "垃圾分类的天气", "label": 0}] * 2 + [{"text": "我们的人", "label": 0}] * 4)


def test_mined_terms_are_the_weighted_log_odds_ranking():
    """The z-score of Monroe et al. (2008), computed here by hand from the corpus's counts, ranks the terms
    as mine_terms does, and the threshold and minimum count are applied to it."""
    offensive, other = {}, {}
    for record in CORPUS:
        counts = offensive if record["label"] else other
        for term in candidate_terms(record["text"]):
            counts[term] = counts.get(term, 0) + 1
    n_o, n_c = sum(offensive.values()), sum(other.values())
    expected = {}
    for term in {*offensive, *other}:
        y_o, y_c = offensive.get(term, 0), other.get(term, 0)
        a = y_o + y_c
        delta = math.log((y_o + a) / (2 * n_o + n_c - y_o - a)) - math.log((y_c + a) / (n_o + 2 * n_c - y_c - a))
        expected[term] = delta / math.sqrt(1 / (y_o + a) + 1 / (y_c + a))
    from collections import Counter

    assert score_terms(Counter(offensive), Counter(other)) == pytest.approx(expected)
    mined = mine_terms(CORPUS, z=1.0, min_count=3)
    assert [m.z for m in mined] == sorted((m.z for m in mined), reverse=True)
    assert {m.term for m in mined} <= {t for t, z in expected.items() if z >= 1.0 and offensive.get(t, 0) >= 3}
    assert {"垃圾", "恶心"} <= {m.term for m in mined}
    assert not {"天气", "的", "我们"} & {m.term for m in mined}  # the other posts' words, and function words
    assert mine_terms(CORPUS, z=50.0) == []


def test_fragments_and_function_phrases_are_not_terms():
    posts = [{"text": "种族歧视真恶心", "label": 1}] * 12 + [{"text": "今天的天气", "label": 0}] * 12
    terms = {m.term for m in mine_terms(posts, z=1.0, min_count=3)}
    assert "种族歧视" in terms and "族歧" not in terms  # 族歧 only ever appears inside 种族歧视
    assert "的" not in terms and "真" not in terms or "真恶心" in terms


def test_targets_from_the_command_line_words():
    lexicon = build_targets("lexicon+mined", labelled=CORPUS, z=1.0, min_count=3)
    mined = {t for t, c in lexicon.categories.items() if c == "mined"}
    assert mined and set(default_lexicon().terms) <= set(lexicon.terms)
    described = describe_targets(lexicon)
    assert described["targets"] == "lexicon+mined" and described["mined"] == len(mined)
    assert describe_targets(build_targets("lexicon"))["targets"] == "lexicon"
    mined_only = set(build_targets("mined", labelled=CORPUS, z=1.0, min_count=3).terms)
    assert mined <= mined_only and mined_only - mined <= set(default_lexicon().terms)  # 垃圾: mined, and in both
    with pytest.raises(ValueError, match="mines terms from labelled records"):
        build_targets("mined")
    with pytest.raises(ValueError, match="did you mean 'mined'"):
        build_targets("mine", labelled=CORPUS)


def test_mine_terms_command_writes_a_lexicon_the_commands_read_back(tmp_path, sample_path):
    out = tmp_path / "terms.tsv"
    result = subprocess.run([sys.executable, "-m", "cloak.cli", "mine-terms", "--train", str(sample_path), "--out",
                             str(out)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith("cloak mine-terms: ") and "of the offensive posts (the lexicon alone" in result.stderr
    lexicon = Lexicon.from_file(out)
    assert set(default_lexicon().terms) <= set(lexicon.terms)
    header, first = out.read_text(encoding="utf-8").splitlines()[:2]
    assert header == "term\tcategory\tz\toffensive_posts\tother_posts" and first.split("\t")[1] == "mined"
    cloaked = tmp_path / "cloaked.jsonl"
    result = subprocess.run([sys.executable, "-m", "cloak.cli", "perturb", "--in", str(sample_path), "--out",
                             str(cloaked), "--lexicon", str(out), "--strength", "whole", "-q"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert sum(bool(r["cloak"]["edits"]) for r in read_jsonl(cloaked)) > 0


def test_the_mined_targets_reach_more_offensive_posts_than_the_lexicon(sample_path):
    """On the bundled COLD posts, terms mined from them reach more of the offensive posts than the lexicon."""
    posts = read_jsonl(sample_path)
    offensive = [p["text"] for p in posts if p["label"] == 1]

    def reach(lexicon):
        return sum(bool(lexicon.find(t)) for t in offensive)

    assert reach(build_targets("lexicon+mined", labelled=posts)) > reach(default_lexicon())


# ---- strength: whole terms, as posters cloak them ----

WHOLE = [name for name, cls in sorted(available_ops().items()) if cls.whole_term]


@pytest.mark.parametrize("name", WHOLE)
def test_a_whole_term_cloak_changes_every_character_the_op_can(name):
    """At strength "whole", every character of a term that the op has a candidate for is inside an edit
    (or the op cloaks the term as a unit)."""
    op = make_op(name).at_strength("whole")
    op.prepare()
    perturber = Perturber(ops=[op], seed=0)
    checked = 0
    for term in default_lexicon().terms[:200]:
        reachable = {i for e in op.candidates(term, 0, len(term)) for i in range(e.start, max(e.end, e.start + 1))}
        if not reachable:
            continue
        for variant in range(3):
            edits = perturber(term, variant=variant).edits
            covered = {i for e in edits for i in range(e.start, max(e.end, e.start + 1))}
            whole_unit = any(e.start == 0 and e.end == len(term) for e in edits)
            inserted_between = name == "noise" and len(edits) == len(term) - 1  # a symbol in every gap
            assert whole_unit or inserted_between or reachable <= covered, (term, edits)
            checked += 1
    assert checked > 50


@pytest.mark.parametrize("strength", ["whole", "poster"])
def test_every_term_of_a_post_is_cloaked_at_once(strength):
    """A post with five lexicon terms (two of them side by side) comes out with all five cloaked: each spelled out
    whole by pinyin; by homophone, every character of each at strength whole, and at poster at least one of
    each (a word given rarer same-sound characters keeps those that have none: 黑人 -> 黑仞)."""
    text = "这些黑人都是垃圾，同性恋恶心，河南人都是骗子"
    terms = default_lexicon().find(text)
    assert [text[s:e] for s, e in terms] == ["黑人", "垃圾", "同性恋", "恶心", "河南人"]
    for ops in ("homophone", "pinyin", "homophone,pinyin,emoji"):
        perturber = Perturber(ops=ops, seed=0, strength=strength)
        for variant in range(10):
            edits = perturber(text, variant=variant).edits
            covered = {i for e in edits for i in range(e.start, e.end)}
            assert covered <= {i for s, e in terms for i in range(s, e)}
            assert all(covered & set(range(s, e)) for s, e in terms), (ops, variant, edits)
            if ops == "pinyin" or (ops == "homophone" and strength == "whole"):
                assert covered == {i for s, e in terms for i in range(s, e)}, (ops, variant, edits)


def test_strength_keeps_what_was_asked_for_and_op_changes_nothing():
    assert make_op("homophone").at_strength("op") == make_op("homophone")
    assert make_op("split:share=0.3").at_strength("whole").share == 0.3  # explicit: kept
    poster = make_op("homophone").at_strength("poster")
    assert (poster.share, poster.common_share) == (1.0, 0.8)
    assert make_op("pinyin").at_strength("whole").mode == "word"
    # given explicitly at its default value: still kept
    assert make_op("split:share=0.5").at_strength("whole").share == 0.5
    assert make_op("homophone:common_share=1").at_strength("poster").common_share == 1.0
    assert make_op("pinyin:mode=mixed").at_strength("poster").mode == "mixed"
    assert Homophone(common_share=1.0, share=0.5).at_strength("poster") == Homophone()
    assert Perturber(ops="split:share=0.5", strength="whole").ops == [make_op("split")]
    text = "这些黑人都是垃圾，同性恋恶心"
    ops = "homophone,split,pinyin,emoji"
    assert [Perturber(ops=ops, seed=3, strength="op")(text, variant=k) for k in range(5)] == \
        [Perturber(ops=ops, seed=3)(text, variant=k) for k in range(5)]
    with pytest.raises(ValueError, match="strength"):
        Perturber(strength="strong")


def test_a_poster_strength_homophone_reaches_past_the_common_characters():
    from cloak.hanzi import common_chars

    common = common_chars()
    perturber = Perturber(ops="homophone", seed=0, strength="poster")
    new = "".join(e.dst for k in range(200) for e in perturber("白人都是垃圾", variant=k).edits)
    rare = sum(ch not in common for ch in new) / len(new)
    assert 0.02 < rare < 0.5, rare


def test_evaluate_records_what_it_cloaked_and_how_much_it_reached(sample_path, tmp_path):
    from click.testing import CliRunner

    from attacks.cli import main

    posts = read_jsonl(sample_path)
    train, test = tmp_path / "train.jsonl", tmp_path / "test.jsonl"
    for path, rows in ((train, posts[:200]), (test, posts[200:])):
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    runner = CliRunner()
    assert runner.invoke(main, ["train", "--model", "tfidf-lr", "--train", str(train), "--out",
                                str(tmp_path / "v")]).exit_code == 0
    result = runner.invoke(main, ["evaluate", "--victim", str(tmp_path / "v"), "--data", str(test), "--ops",
                                  "homophone,fullwidth", "--mine-from", str(sample_path), "--out", str(tmp_path / "e"),
                                  "-q"])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "e" / "summary.json").read_text())
    settings = summary["attacks"]["cloak:homophone"]
    assert settings["targets"] == "lexicon+mined" and settings["strength"] == "poster" and settings["mined"] > 0
    figures = summary["victims"]["v"]["attacks"]
    for attack in ("cloak:homophone", "cloak:fullwidth"):
        outcomes = read_jsonl(tmp_path / "e" / "v" / f"{attack.replace(':', '-')}.jsonl")
        changed = [o for o in outcomes if o["changed"]]
        coverage = figures[attack]["coverage"]
        assert coverage["changed"] == len(changed) and coverage["posts"] == len(outcomes)
        assert coverage["offensive_changed"] == sum(o["label"] == 1 for o in changed)
        assert coverage["offensive_posts"] == sum(o["label"] == 1 for o in outcomes)
    assert figures["cloak:fullwidth"]["barely_applied"] and not figures["cloak:homophone"]["barely_applied"]
    # the printed table carries the coverage: posts changed of all, and of the offensive
    printed = {line.split()[1]: line for line in result.stderr.splitlines() if line.startswith("v ")}
    for attack in ("cloak:homophone", "cloak:fullwidth"):
        c = figures[attack]["coverage"]
        assert (f"{c['changed']:,}/{c['posts']:,} ({c['share']:.1%}), "
                f"{c['offensive_changed']:,}/{c['offensive_posts']:,} ({c['offensive_share']:.1%})") in printed[attack]
    assert printed["cloak:fullwidth"].endswith(", barely applied") and "barely" not in printed["cloak:homophone"]
