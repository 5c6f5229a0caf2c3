"""A detector behind cloak unveil (attacks.victims.defended): what it predicts, how it is saved, trained and
evaluated, and the report's defences view."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from attacks import load_victim, make_victim
from attacks.cli import main
from attacks.victims.base import VictimError
from attacks.victims.defended import defend
from cloak import Perturber, Unveiler

from .conftest import SAMPLE, read_jsonl

CLOAKED = "你们这些拜仁都是垃圾"  # 白人 read back by the homophone reader


@pytest.fixture(scope="module")
def posts():
    return read_jsonl(SAMPLE)


@pytest.fixture(scope="module")
def detector(posts):
    return make_victim("tfidf-lr").fit(posts[:200], progress=False)


def invoke(*args) -> str:
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 0, (args, result.output, result.exception)
    return result.output


def test_the_detector_reads_the_posts_with_their_cloaks_read_back(detector):
    defended = defend(detector)
    read = Unveiler()(CLOAKED).text
    assert read != CLOAKED and "白人" in read
    np.testing.assert_array_equal(defended.predict_proba([CLOAKED, "今天天气很好"]),
                                  detector.predict_proba([read, "今天天气很好"]))
    assert defended.name == "tfidf-lr+unveil" and defended.num_labels == 2
    assert defended.facts["defence"] == "unveil" and defended.facts["settings"] == "unveil in front"


def test_fit_trains_the_detector_on_the_training_posts_read_back(posts):
    cloaked = [{**r, "text": r["text"].replace("白人", "拜仁")} for r in posts[:200]]
    assert sum("拜仁" in r["text"] for r in cloaked) >= 3
    inner, seen = make_victim("tfidf-lr"), []
    fit = inner.fit
    inner.fit = lambda train, dev=None, **options: (seen.append(train), fit(train, dev, **options))[1]
    defended = defend(inner).fit(cloaked, progress=False)
    assert not any("拜仁" in r["text"] for r in seen[0]) and [r["id"] for r in seen[0]] == [r["id"] for r in cloaked]
    assert defended.num_labels == 2 and defended.predict(["今天天气很好"]).shape == (1,)


def test_a_defended_detector_is_saved_with_its_defence_and_refused_once_tampered(detector, tmp_path):
    defended = defend(detector, "unveil:threshold=4")
    defended.save(str(tmp_path / "d"))
    meta = json.loads((tmp_path / "d" / "victim.json").read_text())
    assert meta["kind"] == "defended" and meta["config"] == {"defence": "unveil:threshold=4.0"}
    again = load_victim(str(tmp_path / "d"))
    assert again.config.defence == "unveil:threshold=4.0" and again.unveiler.threshold == 4.0
    np.testing.assert_array_equal(again.predict_proba([CLOAKED]), defended.predict_proba([CLOAKED]))
    with open(tmp_path / "d" / "detector" / "victim.json", "a", encoding="utf-8") as f:
        f.write(" ")
    with pytest.raises(VictimError, match="changed after the victim was saved"):
        load_victim(str(tmp_path / "d"))


def test_a_saved_detector_and_the_defence_make_another_fingerprint(detector, tmp_path):
    detector.save(str(tmp_path / "v"))
    loaded = load_victim(str(tmp_path / "v"))
    assert defend(loaded).fingerprint not in (None, loaded.fingerprint)
    assert defend(loaded).fingerprint != defend(loaded, "unveil:threshold=4").fingerprint


def test_a_misspelt_defence_is_refused_by_name(detector):
    with pytest.raises(ValueError, match="threshhold"):
        defend(detector, "unveil:threshhold=4")


def test_train_and_evaluate_with_the_defence_and_the_report_compares_them(tmp_path):
    train = tmp_path / "train.jsonl"
    test = tmp_path / "test.jsonl"
    lines = SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)
    train.write_text("".join(lines[:220]), encoding="utf-8")
    test.write_text("".join(lines[220:280]), encoding="utf-8")
    invoke("train", "--model", "tfidf-lr", "--train", train, "--out", tmp_path / "plain", "-q")
    invoke("train", "--model", "tfidf-lr", "--train", train, "--out", tmp_path / "trained", "--defence", "unveil", "-q")
    assert json.loads((tmp_path / "trained" / "victim.json").read_text())["kind"] == "defended"
    invoke("evaluate", "--victim", tmp_path / "plain", "--victim", tmp_path / "trained", "--data", test,
           "--attacks", "cloak,fgm", "--ops", "homophone,emoji,split,zhuyin", "--defence", "unveil", "--out",
           tmp_path / "ev", "-q")
    summary = json.loads((tmp_path / "ev" / "summary.json").read_text())
    assert list(summary["victims"]) == ["plain", "trained", "plain+unveil"]  # one defended already: not twice
    assert "not differentiable" in summary["victims"]["plain+unveil"]["attacks"]["fgm@0.5"]["skipped"]
    invoke("report", tmp_path / "ev", "--out", tmp_path / "rep")
    view = json.loads((tmp_path / "rep" / "report.json").read_text())["defences"]
    rows = {e["row"]: e for e in view["rows"]}
    assert [rows[r]["defence"] for r in ("plain", "trained", "plain+unveil")] == ["none", "unveil", "unveil"]
    against = rows["plain+unveil"]["against"]
    assert against["row"] == "plain" and "against" not in rows["plain"]
    assert against["clean_interval"][0] <= against["clean_change"] <= against["clean_interval"][1]
    # every row judged by the one attack from other sources than the defence's tables
    assert view["attacks"] == ["cloak:zhuyin"]
    assert against["drop_change"] == pytest.approx(rows["plain+unveil"]["mean_drop"] - rows["plain"]["mean_drop"])
    assert "## Defences" in (tmp_path / "rep" / "report.md").read_text()
    assert 'id="defences"' in (tmp_path / "rep" / "report.html").read_text()


def test_no_defences_view_without_a_defended_victim(tmp_path):
    from attacks.report.defences import defence_rows

    assert defence_rows([], [{"facts": {}}], []) is None


def test_an_mmbert_folder_is_evaluated_behind_the_defence(stages, data, tmp_path):
    """`mmbert train`'s folder (MMBERT, or its text-only twin) is a victim like any other: with unveil in front
    it reads the posts as read back, speech and glyphs made from the text read back."""
    out = tmp_path / "eval"
    invoke("evaluate", "--victim", stages[3], "--data", data / "dev.jsonl", "--out", out, "--attacks", "cloak",
           "--ops", "homophone", "--limit", "8", "--defence", "unveil:families=sound", "-q")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert set(summary["victims"]) == {"s3", "s3+unveil"}
    facts = summary["victims"]["s3+unveil"]["facts"]
    assert facts["defence"] == "unveil:families=sound" and facts["detector"]["kind"] == "mmbert"
    assert len(read_jsonl(out / "s3+unveil" / "clean.jsonl")) == 8


# -- a saved defended victim holds all it predicts with (DESIGN.md 9c(4)); a defence is refused before the work --


@pytest.fixture(scope="module")
def mined(tmp_path_factory):
    """A folder where a detector was trained behind an unveiler whose terms were mined from mine.jsonl (named
    relative to the folder), cloaked posts, and what the saved victim scored them as (scored.jsonl)."""
    work = tmp_path_factory.mktemp("mined")
    records = read_jsonl(SAMPLE)
    lines = SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)
    (work / "train.jsonl").write_text("".join(lines[:220]), encoding="utf-8")
    (work / "mine.jsonl").write_text("".join(lines), encoding="utf-8")
    cloak = Perturber(ops="homophone,pinyin", targets="lexicon+mined", mine_from=records, strength="whole", seed=0)
    (work / "cloaked.jsonl").write_text("".join(
        json.dumps({"id": r["id"], "text": cloak(r["text"], key=i).text, "label": r["label"]}, ensure_ascii=False)
        + "\n" for i, r in enumerate(records[220:])), encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        invoke("train", "--model", "tfidf-lr", "--train", "train.jsonl", "--out", "V", "-q",
               "--defence", "unveil:targets=lexicon+mined:mine_from=mine.jsonl")
        invoke("predict", "--victim", "V", "--in", "cloaked.jsonl", "--out", "scored.jsonl")
    return work


def flipped(path) -> None:
    """Rewrite a labelled file with every label flipped: its mined terms are the other posts' words."""
    posts = read_jsonl(path)
    path.write_text("".join(json.dumps({**r, "label": 1 - r["label"]}, ensure_ascii=False) + "\n" for r in posts),
                    encoding="utf-8")


def test_a_saved_defended_victim_keeps_its_terms_and_model_in_its_folder(mined):
    meta = json.loads((mined / "V" / "victim.json").read_text(encoding="utf-8"))
    assert {"defence/unveiler.json", "defence/terms.tsv", "defence/ngram.lm.gz"} <= set(meta["files"])
    assert meta["config"]["defence"] == "unveil:targets=lexicon+mined:mine_from=mine.jsonl"  # as given, for reports
    saved = json.loads((mined / "V" / "defence" / "unveiler.json").read_text(encoding="utf-8"))
    assert saved["spec"] == "unveil:lexicon=terms.tsv:model=ngram.lm.gz:threshold=5.5"
    terms = (mined / "V" / "defence" / "terms.tsv").read_text(encoding="utf-8").splitlines()
    assert terms[0] == "term\tcategory" and any(t.endswith("\tmined") for t in terms)
    assert Unveiler.load(str(mined / "V" / "defence")).terms == \
        Unveiler.from_spec("unveil:targets=lexicon+mined:mine_from=" + str(mined / "mine.jsonl")).terms


def test_a_defended_victim_copied_elsewhere_predicts_the_same_from_another_folder(mined, tmp_path, monkeypatch):
    shutil.copytree(mined / "V", tmp_path / "copy")
    shutil.copy(mined / "cloaked.jsonl", tmp_path / "cloaked.jsonl")
    monkeypatch.chdir(tmp_path)  # mine.jsonl is not here: the victim reads its own terms
    invoke("predict", "--victim", "copy", "--in", "cloaked.jsonl", "--out", "scored.jsonl")
    assert (tmp_path / "scored.jsonl").read_bytes() == (mined / "scored.jsonl").read_bytes()


def test_the_file_its_terms_were_mined_from_changing_after_training_changes_no_prediction(mined, monkeypatch):
    original = (mined / "mine.jsonl").read_bytes()
    monkeypatch.chdir(mined)
    try:
        flipped(mined / "mine.jsonl")
        invoke("predict", "--victim", "V", "--in", "cloaked.jsonl", "--out", "again.jsonl")
    finally:
        (mined / "mine.jsonl").write_bytes(original)
    assert (mined / "again.jsonl").read_bytes() == (mined / "scored.jsonl").read_bytes()


@pytest.mark.parametrize("name", ["terms.tsv", "ngram.lm.gz", "unveiler.json"])
def test_a_file_of_the_saved_defence_changed_is_refused(mined, tmp_path, name):
    shutil.copytree(mined / "V", tmp_path / "V")
    with open(tmp_path / "V" / "defence" / name, "ab") as f:
        f.write(b"\n")
    with pytest.raises(VictimError, match=f"defence/{name} changed after the victim was saved"):
        load_victim(str(tmp_path / "V"))


def test_evaluate_refuses_to_resume_behind_terms_mined_from_a_changed_file(mined, tmp_path):
    mine = tmp_path / "mine.jsonl"
    shutil.copy(mined / "mine.jsonl", mine)
    command = ["evaluate", "--victim", mined / "V" / "detector", "--data", mined / "cloaked.jsonl", "--limit", "6",
               "--attacks", "cloak", "--ops", "homophone", "--out", tmp_path / "ev", "-q",
               "--defence", f"unveil:targets=lexicon+mined:mine_from={mine}"]
    invoke(*command)
    flipped(mine)
    result = CliRunner().invoke(main, [str(a) for a in command])
    assert result.exit_code != 0 and "holds outcomes of another victim named detector+unveil" in result.output


@pytest.mark.parametrize("options, error", [
    (["--defence", "unveil:targets=mined:mine_from=nope.jsonl"], "input file not found: nope.jsonl"),
    (["--defence", "unveil:targets=mined"], "--targets mined mines terms from labelled records: give them"),
    (["--defence", "unveil:model=nope.lm.gz"], "language model not found: nope.lm.gz"),
    (["--attacks", "search", "--goal", "targeted:label=5"],
     "search:homophone@targeted:label=5 cannot attack victim detector: goal targeted:label=5: tfidf-lr knows labels"),
])
def test_evaluate_refuses_a_bad_spec_before_it_writes_anything(mined, tmp_path, options, error):
    result = CliRunner().invoke(main, ["evaluate", "--victim", str(mined / "V" / "detector"),
                                       "--data", str(mined / "cloaked.jsonl"),
                                       "--limit", "4", "--ops", "homophone", "--out", str(tmp_path / "ev"), "-q",
                                       *options])
    assert result.exit_code != 0 and error in result.output and len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "ev").exists()


def test_train_refuses_a_defence_it_cannot_build_before_it_touches_the_victim_it_would_replace(mined, tmp_path):
    shutil.copytree(mined / "V" / "detector", tmp_path / "V")
    kept = (tmp_path / "V" / "victim.json").read_bytes()
    result = CliRunner().invoke(main, ["train", "--model", "tfidf-lr", "--train", str(mined / "train.jsonl"), "--out",
                                       str(tmp_path / "V"), "--overwrite", "-q",
                                       "--defence", f"unveil:targets=mined:mine_from={tmp_path / 'nope.jsonl'}"])
    assert result.exit_code != 0 and "input file not found" in result.output
    assert (tmp_path / "V" / "victim.json").read_bytes() == kept


def test_a_defended_victim_saved_without_its_defence_is_refused_before_evaluate_writes(mined, tmp_path):
    """As an older mmcloak saved one: the terms were mined again, wherever it was loaded, from the spec's file."""
    shutil.copytree(mined / "V", tmp_path / "old")
    meta = json.loads((tmp_path / "old" / "victim.json").read_text(encoding="utf-8"))
    meta["files"] = {name: digest for name, digest in meta["files"].items() if not name.startswith("defence/")}
    (tmp_path / "old" / "victim.json").write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(VictimError, match="saved by an older mmcloak, whose defended victims kept no defence/"):
        load_victim(str(tmp_path / "old"))
    result = CliRunner().invoke(main, ["evaluate", "--victim", str(tmp_path / "old"), "--data",
                                       str(mined / "cloaked.jsonl"), "--limit", "4", "--ops", "homophone",
                                       "--out", str(tmp_path / "ev"), "-q"])
    assert result.exit_code != 0 and "train it again with attacks train --defence" in result.output
    assert not (tmp_path / "ev").exists()
