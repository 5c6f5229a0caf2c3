"""cloak unveil: each family's cloaks read back, clean text left alone, the engine's guarantees, bad input."""
from __future__ import annotations

import gzip
import json
import math

import pytest
from click.testing import CliRunner

from cloak import Perturber, apply_edits
from cloak.cli import main
from cloak.edits import Edit, compose_edits
from cloak.run import run_file
from cloak.unveil import CharNgramLM, Unveiler
from cloak.unveil.records import Unveiling
from cloak.unveil.sound import pinyin_readings, read_initials, read_pinyin, syllable_class

from .conftest import ROOT, interrupted_after, read_jsonl

POSTS = ["白人都是垃圾", "我讨厌黑人", "河南人偷井盖", "同性恋滚出去", "别跟我说什么种族歧视"]
CLEAN = ["今天天气很好，我们去公园散步吧", "这家店的面条味道不错，价格也公道", "他考完试就回家了",
         "我觉得这部电影拍得很用心", "明天早上八点在学校门口集合"]
# every family: the ops' styles that the unveiler reads back, cloaking whole terms as posters do
STYLES = ["homophone", "homophone:common_share=0", "homophone:common_share=0:rare=cjk", "radical",
          "pinyin", "pinyin:mode=word:spacing=spaced", "pinyin:mode=word:case=capital", "pinyin:mode=word:case=upper",
          "pinyin:mode=word:tones=marks", "pinyin:mode=word:tones=numbers", "pinyin:mode=word:lookalike=1",
          "abbrev", "abbrev:case=upper", "abbrev:spacing=spaced", "abbrev:lookalike=1", "split", "split:depth=2",
          "similar", "emoji", "traditional", "variant", "zerowidth", "noise", "shuffle"]


@pytest.fixture(scope="module")
def unveiler() -> Unveiler:
    """A lower bar than the default (which was chosen with a model fitted on all of COLD train): these
    tests read cloaks back with the small model mmcloak ships."""
    return Unveiler(threshold=2.0).prepare()


@pytest.mark.parametrize("style", STYLES)
def test_each_family_reads_its_cloaks_back(unveiler, style):
    cloaked = [c for t in POSTS for seed in range(2)
               if (c := Perturber(ops=style, strength="whole", seed=seed)(t)).edits]
    assert cloaked, style
    back = [unveiler(c.text) for c in cloaked]
    restored = sum(b.text == c.source for b, c in zip(back, cloaked))
    assert restored >= 0.8 * len(cloaked), [(c.text, b.text) for b, c in zip(back, cloaked) if b.text != c.source]
    for b in back:  # the edits replay: as written -> read back, and invert
        assert apply_edits(b.source, b.edits) == b.text
        assert all(e.op.startswith("unveil:") for e in b.edits)


def test_full_width_letters_and_real_cloaks_are_read_back(unveiler):
    out = unveiler("ｎｍｓｌ")  # full-width letters, and they are initials too
    assert out.text == "你妈死了" and out.edits == [Edit("unveil:abbrev", 0, 4, "ｎｍｓｌ", "你妈死了")]
    _, _, found = unveiler.candidates("地域嗨河南人")  # 嗨 for 黑: ei/ai, a confusion posters make
    assert [(c.dst, c.fuzzy) for c in found if c.start == 0] == [("地域黑", 1)]
    out = unveiler("女表子养的")
    assert out.text == "婊子养的" and out.edits == [Edit("unveil:split", 0, 2, "女表", "婊")]


def test_clean_text_stays_as_it_is(unveiler):
    for reader in (unveiler, Unveiler()):
        for text in CLEAN + POSTS:
            out = reader(text)
            assert out.text == text and out.edits == [], (text, out.edits)


def test_the_spec_round_trips_and_settings_are_checked():
    u = Unveiler(families="sound+shape", threshold=2.5, common=0)
    assert u.spec() == "unveil:families=sound+shape:common=0:threshold=2.5"
    again = Unveiler.from_spec(u.spec())
    assert again.spec() == u.spec() and again.settings() == u.settings()
    assert Unveiler.from_spec("unveil").spec() == "unveil"
    with pytest.raises(ValueError, match="unknown family 'sond'; did you mean 'sound'"):
        Unveiler(families="sond+shape")
    with pytest.raises(ValueError, match="unknown parameter 'treshold'; did you mean 'threshold'"):
        Unveiler.from_spec("unveil:treshold=2")
    with pytest.raises(ValueError, match="'threshold' must be a number"):
        Unveiler.from_spec("unveil:threshold=high")
    with pytest.raises(ValueError, match="unknown scorer 'ngam'; did you mean 'ngram'"):
        Unveiler(scorer="ngam")
    with pytest.raises(ValueError, match="common.*>= 0"):
        Unveiler(common=-1)


def test_a_family_left_out_is_not_read_back():
    assert Unveiler(families="shape").prepare()("女表子 hei人").text == "婊子 hei人"
    assert Unveiler(families="sound").prepare()("女表子 hei人").text == "女表子 黑人"


def test_batches_read_as_one_at_a_time(unveiler):
    texts = [Perturber(ops="homophone,split,pinyin", strength="whole", seed=3)(t).text for t in POSTS] + CLEAN
    fresh = Unveiler(threshold=2.0).prepare()
    assert [o.text for o in fresh.unveil_batch(texts)] == [unveiler(t).text for t in texts]


def test_pinyin_and_initials_are_read_as_posters_type_them():
    assert [s for s, _, _ in read_pinyin("HeiRen")] == ["hei", "ren"]
    assert [s for s, _, _ in read_pinyin("hēi rén")] == ["hei", "ren"]
    assert [s for s, _, _ in read_pinyin("nǚ quán")] == ["nv", "quan"]
    assert read_pinyin("hei1ren2") == (("hei", 0, 4), ("ren", 4, 8))  # a tone digit belongs to its syllable
    assert [s for s, _, _ in read_pinyin("la1i")] == ["la", "li"]
    assert [[s for s, _, _ in r] for r in pinyin_readings("GU1")] == [["gu"], ["gui"]]
    assert read_pinyin("xian") == (("xian", 0, 4),) and read_pinyin("ok") is None
    assert read_initials("t x l") == ("txl", [0, 2, 4]) and read_initials("nm$l")[0] == "nmsl"
    assert syllable_class("shei") == syllable_class("sai") == syllable_class("sei")
    assert syllable_class("nian") == syllable_class("liang") and syllable_class("zhi") != syllable_class("zi" + "i")


def test_a_run_read_more_ways_than_one_or_not_to_its_ends_still_gives_its_terms(unveiler):
    assert [[s for s, _, _ in r] for r in pinyin_readings("zhenexin")] == [["zhe", "ne", "xin"], ["zhen", "e", "xin"]]
    assert [s for s, _, _ in read_pinyin("ya4 yi4ok")] == ["ya", "yi"]  # an English word typed against it
    assert [s for s, _, _ in read_pinyin("2000zhongzu")] == ["zhong", "zu"]
    assert read_pinyin("discrimination") is None and read_pinyin("iPhone") is None  # never cut inside a word
    _, _, found = unveiler.candidates("真是zhenexin")  # the second reading, zhen e xin, lists 恶心
    assert ("exin", "恶心") in [("真是zhenexin"[c.start:c.end], c.dst) for c in found]
    assert unveiler("都是ya4 yi4ok").text == "都是亚裔ok"
    _, _, found = unveiler.candidates("就OKlima")  # a common word is what the run spells, not its ends
    assert [(c.start, c.end, c.dst) for c in found] == [(3, 7, "立马")]
    _, _, found = unveiler.candidates("求求你nǐ mā")  # nor one the run spells only through a confusion (立马)
    assert found == []


def test_edits_compose_across_what_was_read_character_by_character():
    source = "a\u200b黑\u200b人b說"
    first = [Edit("z", 1, 2, "\u200b", ""), Edit("z", 3, 4, "\u200b", ""), Edit("t", 6, 7, "說", "说")]
    then = [Edit("h", 1, 3, "黑人", "白人")]
    edits = compose_edits(source, first, then)
    assert edits == [Edit("z", 1, 2, "\u200b", ""), Edit("h", 2, 5, "黑\u200b人", "白人"), Edit("t", 6, 7, "說", "说")]
    assert apply_edits(source, edits) == "a白人b说"


def test_the_ngram_model_is_a_distribution_and_its_file_is_deterministic(tmp_path):
    texts = ["白人都是垃圾", "黑人都是好人", "白人黑人都是人", "我们都是中国人"]
    lm = CharNgramLM.fit(texts, order=3, min_count=1, words=[("垃圾", 2)])
    vocabulary = sorted({ch for t in texts for ch in t} | {"\x03"})
    for history in ("", "都", "白人", "是中"):
        total = sum(math.exp(lm.char_logprob(history, ch)) for ch in vocabulary)
        unseen = math.exp(lm.char_logprob(history, "龘"))
        assert total + unseen == pytest.approx(1.0, abs=1e-6), history
    four = CharNgramLM.fit(texts, order=4, min_count=1)
    assert four.char_logprob("白人", "都") == four.gram_logprob("白人都") != four.gram_logprob("人都")  # all it has
    assert four.char_logprob("中白人", "都") == four.gram_logprob("白人都")  # at most order - 1 characters
    a, b = tmp_path / "a.lm.gz", tmp_path / "b.lm.gz"
    lm.save(a)
    CharNgramLM.fit(texts, order=3, min_count=1, words=[("垃圾", 2)]).save(b)
    assert a.read_bytes() == b.read_bytes()
    loaded = CharNgramLM.load(a)
    assert loaded.logprob("白人都是人") == pytest.approx(lm.logprob("白人都是人"), abs=1e-3)
    (tmp_path / "bad.lm.gz").write_bytes(gzip.compress(b"not a model\n"))
    with pytest.raises(ValueError, match="not a language model"):
        CharNgramLM.load(tmp_path / "bad.lm.gz")


@pytest.fixture(scope="module")
def cloaked_file(tmp_path_factory, sample_path):
    out = tmp_path_factory.mktemp("cloaked") / "cloaked.jsonl"
    result = CliRunner().invoke(main, ["perturb", "--in", str(sample_path), "--out", str(out), "--ops",
                                       "homophone,split,emoji,pinyin", "--strength", "poster", "--seed", "2", "-q"])
    assert result.exit_code == 0, result.output
    return out


def test_the_command_writes_unveiled_records_that_show(cloaked_file, tmp_path):
    out = tmp_path / "unveiled.jsonl"
    result = CliRunner().invoke(main, ["unveil", "--in", str(cloaked_file), "--out", str(out), "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert "cloak unveil: read 300 records" in result.stderr
    records, inputs = read_jsonl(out), read_jsonl(cloaked_file)
    restored = 0
    for r, given in zip(records, inputs):
        assert r["unveiled_from"] == given["text"] and r["source_text"] == given["source_text"]
        assert apply_edits(r["unveiled_from"], r["unveil"]["edits"]) == r["text"]
        assert r["unveil"]["settings"] == "unveil"
        restored += r["text"] == r["source_text"]
    assert restored > 0.5 * sum(bool(r["cloak"]["edits"]) for r in inputs)
    shown = CliRunner().invoke(main, ["show", str(out), "--limit", "2"])
    lines = shown.output.splitlines()
    assert [line[:4] for line in lines[:4]] == [lines[0][:4], "  - ", "  + ", "  = "] and "unveil:" in lines[0]


def test_workers_shards_and_resume_give_the_same_bytes(cloaked_file, tmp_path, monkeypatch):
    import cloak.run as run

    unveiling = Unveiling(Unveiler())
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    run_file(str(cloaked_file), str(one), unveiling, workers=1, progress=False)
    run_file(str(cloaked_file), str(two), unveiling, workers=2, progress=False)
    assert one.read_bytes() == two.read_bytes()
    parts = []
    for i in range(3):
        part = tmp_path / f"part{i}.jsonl"
        run_file(str(cloaked_file), str(part), unveiling, shard=f"{i}/3", progress=False)
        parts.append(part.read_bytes())
    assert b"".join(parts) == one.read_bytes()
    monkeypatch.setattr(run, "CHUNK", 16)
    real = run._cloak_chunk
    resumed = tmp_path / "resumed.jsonl"
    monkeypatch.setattr(run, "_cloak_chunk", interrupted_after(5, real))
    with pytest.raises(KeyboardInterrupt):
        run_file(str(cloaked_file), str(resumed), unveiling, progress=False)
    assert not resumed.exists() and (tmp_path / "resumed.jsonl.partial").exists()
    monkeypatch.setattr(run, "_cloak_chunk", real)
    stats = run_file(str(cloaked_file), str(resumed), unveiling, resume=True, progress=False)
    assert stats.resumed_from_line == 64 and resumed.read_bytes() == one.read_bytes()


def test_settings_on_the_command_line_and_in_one_string_agree(cloaked_file, tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    runner = CliRunner()
    assert runner.invoke(main, ["unveil", "--in", str(cloaked_file), "--out", str(a), "--families", "sound+shape",
                                "--threshold", "3", "-q"]).exit_code == 0
    assert runner.invoke(main, ["unveil", "--in", str(cloaked_file), "--out", str(b), "--settings",
                                "unveil:families=sound+shape:threshold=3", "-q"]).exit_code == 0
    assert a.read_bytes() == b.read_bytes()
    assert read_jsonl(a)[0]["unveil"]["settings"] == "unveil:families=sound+shape:threshold=3.0"


def test_fit_lm_then_unveil_with_it(tmp_path, sample_path):
    model = tmp_path / "posts.lm.gz"
    result = CliRunner().invoke(main, ["fit-lm", "--train", str(sample_path), "--out", str(model), "--order", "3",
                                       "--dictionary", "0"])
    assert result.exit_code == 0, result.output
    assert "n-grams of up to 3 characters from 300 posts" in result.stderr
    assert Unveiler(model=str(model), threshold=2.0).prepare()("女表子").text == "婊子"


@pytest.mark.parametrize("args, message", [
    (["--families", "sond"], "unknown family 'sond'; did you mean 'sound'?"),
    (["--famlies", "sound"], "No such option '--famlies'. Did you mean '--families'?"),
    (["--scorer", "ngarm"], "unknown scorer 'ngarm'; did you mean 'ngram'?"),
    (["--model", "no/such.lm.gz"], "language model not found: no/such.lm.gz"),
    (["--targets", "mined"], "mines terms from labelled records: give them"),
    (["--targets", "all"], "'targets' must be lexicon[:FILE], mined or lexicon+mined"),
    (["--balance"], "targets lexicon mine none (give targets mined or lexicon+mined)"),
    (["--settings", "unveil:threshold"], "parameter 'threshold' needs a value"),
    # the spec's errors say where it was given, not a detector's defence
    (["--settings", "defence:x=1"], "unknown --settings 'defence'; known: unveil"),
    (["--settings", "unveil:thresh=3"], "--settings unveil: unknown parameter 'thresh'; did you mean 'threshold'?"),
    # records to mine that the targets would never read
    (["--mine-from", "SAMPLE"], "mine_from SAMPLE: only targets mined or lexicon+mined mine labelled records, and "
                                "targets lexicon mines none (add targets lexicon+mined, or leave mine_from out)"),
    (["--settings", "unveil:mine_from=SAMPLE"], "mine_from SAMPLE: only targets mined or lexicon+mined"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, sample_path, args, message):
    out = tmp_path / "out.jsonl"
    args, message = [a.replace("SAMPLE", str(sample_path)) for a in args], message.replace("SAMPLE", str(sample_path))
    result = CliRunner().invoke(main, ["unveil", "--in", str(sample_path), "--out", str(out), *args])
    assert result.exit_code != 0 and message in result.output + result.stderr
    assert not out.exists() and not (tmp_path / "out.jsonl.partial").exists()
    if "No such option" not in message:
        assert (result.stderr.strip().count("\n"), result.stderr.startswith("cloak: error: ")) == (0, True)


def test_a_bad_line_is_named(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"text": "黑人"}, ensure_ascii=False) + "\n{\"text\": 3}\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["unveil", "--in", str(bad), "--out", str(tmp_path / "o.jsonl")])
    assert result.exit_code == 1 and "bad.jsonl, line 2: field 'text': must be a string" in result.stderr


def test_a_masked_language_model_scores_through_the_entry_point_group(tmp_path, monkeypatch):
    """The mlm scorer that mmbert adds, found as cloak finds it (the entry point pyproject declares), on a
    tiny random BERT made here; no real weights."""
    import tomllib
    from importlib.metadata import EntryPoint
    from pathlib import Path

    pytest.importorskip("transformers")
    import torch
    from transformers import BertConfig, BertForMaskedLM

    from cloak.unveil import scorers
    from mmbert.tokenization import build_tokenizer

    declared = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    target = declared["project"]["entry-points"]["mmcloak.unveil_scorers"]["mlm"]
    monkeypatch.setattr(scorers, "_entry_points", lambda: {"mlm": EntryPoint("mlm", target, scorers.ENTRY_POINTS)})
    monkeypatch.delitem(scorers._SCORERS, "mlm", raising=False)
    torch.manual_seed(0)
    tokenizer = build_tokenizer()
    BertForMaskedLM(BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                               intermediate_size=64, max_position_embeddings=128)).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    unveiler = Unveiler(scorer="mlm", model=str(tmp_path), threshold=-1e9).prepare()
    assert "mlm" in scorers.available_scorers()
    out = unveiler.unveil_batch(["女表子养的", "今天天气很好"])
    assert out[0].text == "婊子养的" and out[1].text == "今天天气很好"  # any gain passes; clean text has no candidate
    view, _, found = unveiler.candidates("那些女表子")
    gains = unveiler._scorer.gains_batch([(view, found)])[0]
    assert len(gains) == len(found) and all(math.isfinite(g) for g in gains)
    assert unveiler._scorer.gains_batch([(view, found)])[0] == gains  # the same inputs, the same scores
    saved = tmp_path / "saved"  # as a defended victim keeps it: the model in its folder, read from there
    files = unveiler.save(str(saved))
    assert "mlm/config.json" in files and json.loads((saved / "unveiler.json").read_text())["spec"] == \
        "unveil:lexicon=terms.tsv:scorer=mlm:model=mlm:threshold=-1000000000.0"
    again = Unveiler.load(str(saved))
    assert again._scorer.gains_batch([(view, found)])[0] == pytest.approx(gains)
    with pytest.raises(ValueError, match="needs a masked language model"):
        Unveiler(scorer="mlm")


def test_balance_reads_back_the_non_offensive_posts_words_too():
    from cloak.mining import build_every_label_targets, build_targets

    train = str(ROOT / "samples" / "cold" / "cold_train_2000.jsonl")
    every, offensive = build_every_label_targets("mined", labelled=train), build_targets("mined", labelled=train)
    assert set(offensive.terms) < set(every.terms) and {"朋友", "辽宁"} <= set(every.terms) - set(offensive.terms)
    readers = {b: Unveiler(targets="mined", mine_from=train, balance=b, threshold=2.0) for b in (False, True)}
    assert readers[True].terms == every.terms and readers[False].terms == offensive.terms
    lister = Unveiler(targets="mined", mine_from=train, model="absent.lm.gz")
    assert lister.terms == offensive.terms  # listing the terms loads no scorer (this model file does not exist)
    assert ":balance=True" in readers[True].spec() and Unveiler.from_spec(readers[True].spec()).balance
    for op in ("split", "homophone"):
        cloaked = Perturber(ops=op, strength="whole", targets=every, seed=0)("我的男朋友是辽宁人")
        assert readers[True](cloaked.text).text == cloaked.source, op
        assert readers[False](cloaked.text).text != cloaked.source, op  # 朋友 and 辽宁 are no offensive terms


def test_balance_takes_its_own_default_threshold_and_a_given_one_wins():
    from cloak.unveil.unveiler import BALANCE_THRESHOLD, THRESHOLD

    train = str(ROOT / "samples" / "cold" / "cold_train_2000.jsonl")
    assert Unveiler().bar == THRESHOLD and Unveiler().threshold is None
    balanced = Unveiler(targets="mined", mine_from=train, balance=True)
    assert balanced.bar == BALANCE_THRESHOLD != THRESHOLD and "threshold" not in balanced.spec()
    given = Unveiler.from_spec(Unveiler(targets="mined", mine_from=train, balance=True, threshold=3.0).spec())
    assert given.threshold == given.bar == 3.0


def test_gains_are_what_the_unveiler_weighs_each_candidate_by():
    from cloak.unveil.unveiler import margin

    u = Unveiler(threshold=2.0)
    view, _, found = u.candidates("女表子")
    gains = u.gains(view, found)
    assert len(gains) == len(found)
    best = max(zip(found, gains), key=lambda cg: margin(cg[0], cg[1], u.bar))
    assert best[0].dst == "婊子" and margin(*best, u.bar) > 0 and u("女表子").text == "婊子"


def test_the_likeliest_reading_weighs_neighbouring_cloaks_together():
    from cloak.unveil.index import Candidate
    from cloak.unveil.lattice import best_reading, clusters
    from cloak.unveil.scorers import NgramScorer

    lm = CharNgramLM.fit(["黑人男友真好"] * 30 + ["我的男友", "黑人来了", "任务难做", "又来了"] * 5, order=3, min_count=1)
    scorer = NgramScorer()
    scorer.lm = lm
    text, pair = "黑任难又", [Candidate(1, 2, "人", "homophone"), Candidate(2, 4, "男友", "homophone")]
    gains = scorer.gains(text, pair)
    together = lm.logprob("黑人男友") - lm.logprob(text)
    costs = [g + 0.5 for g in gains]  # neither clears its cost alone
    assert together > sum(costs)
    assert best_reading(lm, text, pair, costs) == [0, 1]
    assert best_reading(lm, text, pair, [together, together]) == []
    for k in range(2):  # a lone candidate: read back exactly where its gain clears its cost
        assert best_reading(lm, text, pair[k:k + 1], [gains[k] - 0.01]) == [0]
        assert best_reading(lm, text, pair[k:k + 1], [gains[k] + 0.01]) == []
    # overlapping candidates: the likelier reading of them; candidates beyond the model's reach: read apart
    rival = Candidate(1, 4, "人难友", "homophone")
    assert best_reading(lm, text, [*pair, rival], [*costs, 0.0]) == [0, 1]
    assert best_reading(lm, text, [*pair, rival], [*costs, -together]) == [2]
    # two readings of the same text: the one covering more of it (a cloaked term read back as one)
    same = [Candidate(0, 2, "黑人", "homophone"), Candidate(0, 4, "黑人难又", "homophone")]
    assert best_reading(lm, text, same, [0.0, 0.0]) == [1] and best_reading(lm, text, same[::-1], [0.0, 0.0]) == [0]
    far = "黑任难又" + "。" * 5 + "黑任难又"
    apart = [*pair, Candidate(10, 11, "人", "homophone"), Candidate(11, 13, "男友", "homophone")]
    assert clusters(apart, reach=2) == [[0, 1], [2, 3]]
    assert best_reading(lm, far, apart, [*costs, 1e9, 1e9]) == [0, 1]
    assert scorer.best_reading(far, apart, [0.0] * 4) == [0, 1, 2, 3]
