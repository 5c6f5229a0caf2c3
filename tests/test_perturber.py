import pytest

from cloak import Lexicon, Perturber, apply_edits, invert_edits
from cloak.targets import WordTargets, default_lexicon

# pinyin as the plain style only (the default mixes spaced, capitalised, toned and look-alike spellings)
PLAIN_PINYIN = "pinyin:mode=word:spacing=joined:case=lower:tones=none:lookalike=0"


def test_same_seed_same_output_other_seed_other_output(sample_texts):
    a = [Perturber(ops="homophone,emoji", seed=1)(t).text for t in sample_texts]
    b = [Perturber(ops="homophone,emoji", seed=1)(t).text for t in sample_texts]
    c = [Perturber(ops="homophone,emoji", seed=2)(t).text for t in sample_texts]
    assert a == b
    assert a != c


def test_variants_and_keys_differ():
    p = Perturber(ops="homophone,emoji,split,pinyin", seed=0)
    outs = {p("黑人和白人都是垃圾", variant=v).text for v in range(10)}
    assert len(outs) > 3
    assert p("黑人", key=1).text == p("黑人", key=1).text


def test_lexicon_targets_only_touch_terms():
    p = Perturber(ops="homophone", targets=Lexicon(["黑人"]))
    out = p("今天天气很好，黑人朋友来了")
    assert out.edits and all(e.start >= 7 and e.end <= 9 for e in out.edits)
    assert p("今天天气很好").edits == []


def test_lexicon_file(tmp_path):
    path = tmp_path / "terms.txt"
    path.write_text("天气\n朋友\n", encoding="utf-8")
    out = Perturber(ops=PLAIN_PINYIN, targets=f"lexicon:{path}")("今天天气很好，朋友")
    assert out.text == "今天tianqi很好，pengyou"
    tsv = tmp_path / "terms.tsv"
    tsv.write_text("term\tcategory\n天气\tweather\n", encoding="utf-8")
    assert Lexicon.from_file(tsv).categories == {"天气": "weather"}
    with pytest.raises(ValueError, match="lexicon file not found"):
        Perturber(targets=f"lexicon:{tmp_path}/missing.txt")


def test_targets_chosen_in_python_as_on_the_command_line(tmp_path, sample_path):
    """Perturber takes --targets, --lexicon and --mine-from as cloak perturb does: mined terms from labelled
    records or their file, a lexicon file instead of the default one."""
    from cloak.mining import build_targets

    from .conftest import read_jsonl

    posts = read_jsonl(sample_path)
    texts = [p["text"] for p in posts[:60]]
    built = Perturber(ops="homophone", targets=build_targets("lexicon+mined", labelled=posts), seed=2)
    for mine_from in (posts, sample_path, str(sample_path)):
        named = Perturber(ops="homophone", targets="lexicon+mined", mine_from=mine_from, seed=2, balance=False)
        assert named.targets.lexicon.terms == built.targets.lexicon.terms
        assert [named(t) for t in texts] == [built(t) for t in texts]
    mined = Perturber(targets="mined", mine_from=posts, balance=False).targets.lexicon
    assert set(mined.terms) < set(built.targets.lexicon.terms)
    assert "直男" in mined and "直男" not in default_lexicon()
    path = tmp_path / "terms.txt"
    path.write_text("天气\n", encoding="utf-8")
    assert Perturber(ops=PLAIN_PINYIN, lexicon=str(path))("今天天气很好").text == "今天tianqi很好"
    with pytest.raises(ValueError, match="mine_from="):
        Perturber(targets="mined")
    with pytest.raises(ValueError, match="go with targets named"):
        Perturber(targets=Lexicon(["天气"]), lexicon=str(path))


def test_default_lexicon_has_every_category():
    from cloak import default_lexicon

    lexicon = default_lexicon()
    assert {"race", "region", "gender", "lgbt", "insult"} <= set(lexicon.categories.values())
    assert "同性恋" in lexicon and "黑人" in lexicon and "的" not in lexicon


def test_all_words_at_a_rate(sample_texts):
    spans = WordTargets().spans("我们都是中国人abc123，好")
    assert (0, 2) in spans and (7, 13) in spans
    p_all = Perturber(ops="homophone", targets="all", rate=1.0)
    p_some = Perturber(ops="homophone", targets="all", rate=0.1)
    changed_all = sum(len(p_all(t).edits) for t in sample_texts[:50])
    changed_some = sum(len(p_some(t).edits) for t in sample_texts[:50])
    assert changed_all > 3 * changed_some > 0
    assert Perturber(targets="all", rate=0.0)(sample_texts[0]).edits == []


def test_protected_spans_are_never_touched():
    p = Perturber(ops=PLAIN_PINYIN, targets=Lexicon(["黑人", "垃圾"]))
    out = p("黑人@黑人 http://x.cn/黑人 #黑人# [垃圾] 黑人")
    assert out.text == "heiren@黑人 http://x.cn/黑人 #黑人# [垃圾] heiren"
    assert p("黑人黑人", protected=[(0, 2)]).text == "黑人heiren"
    assert Perturber(ops=PLAIN_PINYIN, targets=Lexicon(["黑人"]), protect=None)("@黑人").text == "@heiren"


def test_every_op_falls_back_when_it_has_nothing():
    p = Perturber(ops="fullwidth,homophone", targets=Lexicon(["黑人"]))
    out = p("黑人")
    assert out.ops == ["homophone"]


def test_edits_replay_and_invert_on_real_posts(sample_texts):
    p = Perturber(ops="homophone,emoji,split,abbrev,pinyin,english,traditional,variant,shuffle,"
                      "noise,zerowidth,fullwidth", targets="all", rate=0.5, seed=7)
    for text in sample_texts:
        out = p(text)
        assert apply_edits(text, out.edits) == out.text
        assert invert_edits(out.text, out.edits) == text


def test_augment_for_a_training_loop():
    p = Perturber(ops="homophone,emoji", seed=0)
    batch = ["黑人都是垃圾", "今天天气不错"]
    first = p.augment(batch)
    assert len(first) == 2 and first[1] == "今天天气不错" and first[0] != batch[0]
    assert p.augment(batch, n=3) != p.augment(batch, n=3, epoch=1)
    assert len(p.augment(batch, n=3)) == 6


def test_bad_arguments():
    with pytest.raises(ValueError, match="rate"):
        Perturber(rate=1.5)
    with pytest.raises(ValueError, match="unknown targets 'everything'"):
        Perturber(targets="everything")
    with pytest.raises(TypeError, match="text must be str"):
        Perturber()(None)


def test_balanced_targets_cloak_each_label_as_often_and_as_heavily(sample_path):
    """--balance: the words that mark the non-offensive posts join the targets, as many as make those posts
    hold as many characters of targets on average as the offensive posts hold."""
    from cloak.mining import build_balanced_targets, build_targets

    from .conftest import read_jsonl

    posts = read_jsonl(sample_path)
    offensive, balanced = build_targets("lexicon+mined", labelled=posts), build_balanced_targets("lexicon+mined",
                                                                                                  labelled=posts)
    assert set(offensive.terms) < set(balanced.terms)

    def held(terms, label):
        texts = [p["text"] for p in posts if p["label"] == label]
        return sum(e - s for t in texts for s, e in terms.find(t)) / len(texts)

    assert held(offensive, 0) < held(offensive, 1) and held(balanced, 0) >= held(balanced, 1)
    assert Perturber(targets="lexicon+mined", mine_from=posts).targets.lexicon.terms == balanced.terms
    assert Perturber(targets="lexicon+mined", mine_from=posts, balance=False).targets.lexicon.terms == offensive.terms
    assert Perturber(targets="lexicon", mine_from=posts).targets.lexicon.terms == default_lexicon().terms


def test_cloak_perturb_balances_mined_targets_unless_told_not_to(tmp_path, sample_path):
    from click.testing import CliRunner

    from cloak.cli import main

    from .conftest import read_jsonl

    outputs = {}
    for flags in (["--balance"], ["--no-balance"], []):
        out = tmp_path / f"out{len(outputs)}.jsonl"
        result = CliRunner().invoke(main, ["perturb", "--in", str(sample_path), "--out", str(out), "--targets",
                                           "lexicon+mined", "--seed", "1", "-q", *flags])
        assert result.exit_code == 0, result.output
        outputs[" ".join(flags) or "default"] = read_jsonl(out)
    assert outputs["default"] == outputs["--balance"]
    edits = {flag: {label: sum(len(r["cloak"]["edits"]) for r in records if r["label"] == label)
                    / sum(r["label"] == label for r in records) for label in (0, 1)}
             for flag, records in outputs.items()}
    assert edits["--no-balance"][0] < 0.8 * edits["--no-balance"][1]  # the cloaks told the labels apart
    assert edits["--balance"][0] > 0.9 * edits["--balance"][1]
