"""The MMBERT claim under a committed protocol (bench.mmbert_claim, bench.claim_protocol, the verdict's
--protocol), run end to end on tiny models: the protocol checked and hashed, the validation split and the
fresh test disjoint from what came before, MMBERT and its twin masking the same positions and taking the
same updates, every arm trained, the test read only under a committed protocol and once, and the verdict
refusing a test made under another protocol."""
import argparse
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, read_jsonl, write_cold

pytest.importorskip("torch")
yaml = pytest.importorskip("yaml")

PROTOCOL = ROOT / "bench" / "protocols" / "mmbert_claim.yaml"
ADDENDUM = ROOT / "bench" / "protocols" / "mmbert_claim_unveil.yaml"


@pytest.fixture(scope="module")
def cold(tmp_path_factory, sample_path):
    """A tiny COLD folder cut from the bundled sample (the test split shares some texts with train)."""
    records = read_jsonl(sample_path)
    splits = {"train": records[:200], "dev": records[200:250], "test": records[100:]}
    return write_cold(tmp_path_factory.mktemp("cold"), splits)


def tiny_protocol(path: Path) -> Path:
    """The committed protocol cut to tiny sizes, the tone TTS, one seed, one router variant."""
    protocol = yaml.safe_load(PROTOCOL.read_text(encoding="utf-8"))
    protocol["data"].update(train_posts=20, dev_posts=8, validation_posts=20, earlier_test_posts=10)
    protocol["training"].update(tts="tone", backbone_layers=2, batch_size=8, augmented_bert_epochs=1, stage3_lr=1e-3,
                                epochs={"stage1": 1, "stage2": 2, "stage3": 1})
    protocol["seeds"] = [0]
    protocol["candidates"] = {"words": {"text_mask": 0.3}, "terms": {"text_mask": 0.3, "term_mask": 0.8}}
    protocol["router_variants"] = {"modality": {"feed_forward": "modality"}}
    protocol["bootstrap"]["resamples"] = 100
    path.write_text(yaml.safe_dump(protocol, allow_unicode=True), encoding="utf-8")
    return path


def tiny_addendum(path: Path, protocol) -> Path:
    """The committed addendum, extending ``protocol`` instead."""
    addendum = yaml.safe_load(ADDENDUM.read_text(encoding="utf-8"))
    addendum["extends"] = protocol.record
    path.write_text(yaml.safe_dump(addendum, allow_unicode=True), encoding="utf-8")
    return path


def test_the_protocol_is_checked_and_hashed(tmp_path):
    from bench.claim_protocol import committed, load_protocol, same_protocol

    protocol = load_protocol(PROTOCOL)
    assert protocol.sha256 == hashlib.sha256(PROTOCOL.read_bytes()).hexdigest()
    assert protocol.record == {"path": "bench/protocols/mmbert_claim.yaml", "sha256": protocol.sha256}
    assert set(protocol["candidates"]) and protocol["seeds"] == [0, 1, 2]
    bad = tmp_path / "bad.yaml"
    bad.write_text(PROTOCOL.read_text(encoding="utf-8").replace("train_posts:", "train_post:"), encoding="utf-8")
    with pytest.raises(SystemExit, match="train_post"):
        load_protocol(bad)
    bad.write_text(PROTOCOL.read_text(encoding="utf-8").replace("term_mask: 0.8", "term_mask: 1.8"), encoding="utf-8")
    with pytest.raises(SystemExit, match="term_mask"):
        load_protocol(bad)
    with pytest.raises(SystemExit, match="not committed"):
        committed(load_protocol(tiny_protocol(tmp_path / "p.yaml")))  # outside the history: never committed
    with pytest.raises(SystemExit, match="another protocol"):
        same_protocol({"sha256": "0" * 64}, protocol, "x")


def test_an_addendum_extends_the_protocol_as_it_stands(tmp_path):
    from bench.claim_protocol import load_addendum, load_protocol

    protocol = load_protocol(PROTOCOL)
    assert load_addendum(ADDENDUM, protocol)["extends"]["sha256"] == protocol.sha256  # the committed pair agree
    other = load_protocol(tiny_protocol(tmp_path / "p.yaml"))
    with pytest.raises(SystemExit, match="another protocol"):
        load_addendum(ADDENDUM, other)
    bad = tmp_path / "a.yaml"
    bad.write_text(tiny_addendum(bad, other).read_text(encoding="utf-8").replace(
        "unveil:targets=lexicon+mined", "unveil:treshold=3"), encoding="utf-8")
    with pytest.raises(SystemExit, match="did you mean 'threshold'"):
        load_addendum(bad, other)


def run_outputs(root: Path) -> dict[str, Path]:
    """bench.mmbert_claim's outputs as the tiny run writes them, in its own results folder."""
    import bench.mmbert_claim as claim

    return {k: root / "results" / v.name for k, v in claim.OUTPUTS.items()}


@pytest.fixture(scope="module")
def claim_run(cold, tiny_whisper, xlmr_backbones, tmp_path_factory):
    """Every step of bench.mmbert_claim on tiny models, in process, its outputs kept in a temporary folder;
    the twin's and MMBERT's stage-3 masks and every arm's training updates recorded on the way."""
    import bench.mmbert_claim as claim
    import mmbert.train as train_module
    from bench.claim_protocol import load_protocol

    root = tmp_path_factory.mktemp("claim")
    (root / "weights").mkdir()
    shutil.copy(tiny_whisper, root / "weights" / "whisper-base.pt")
    protocol = load_protocol(tiny_protocol(root / "protocol.yaml"))
    args = argparse.Namespace(cold=cold, work=root / "work", weights=root / "weights",
                              backbone=Path(xlmr_backbones["e5"]), speech_workers=1,
                              addendum=tiny_addendum(root / "addendum.yaml", protocol))
    seen = {"updates": {}, "masks": {}}
    stage_loss, masked_text = train_module.stage_loss, train_module.masked_text

    def counting(model, batch, epoch, stage, settings, tokenizer=None):
        config = model.config
        seen["arm"] = "twin" if config.modalities == ["text"] else config.feed_forward
        key = (seen["arm"], stage, json.dumps(settings["stage3"], sort_keys=True) if stage == 3 else None)
        seen["updates"][key] = seen["updates"].get(key, 0) + 1
        return stage_loss(model, batch, epoch, stage, settings, tokenizer)

    def masking(input_ids, attention_mask, share, mask_id, keep_ids, seeds, *rest):
        out = masked_text(input_ids, attention_mask, share, mask_id, keep_ids, seeds, *rest)
        for seed, row, mask in zip(seeds, (out == mask_id).tolist(), attention_mask.tolist()):
            seen["masks"].setdefault(seen["arm"], {})[seed] = row[:sum(mask)]
        return out

    patched = pytest.MonkeyPatch()
    patched.setattr(train_module, "stage_loss", counting)
    patched.setattr(train_module, "masked_text", masking)
    patched.setattr(claim, "OUTPUTS", run_outputs(root))
    patched.setattr(claim, "RESULTS", root / "results")
    patched.setattr(claim, "committed", lambda protocol: "c0ffee")  # the positive path: as if committed
    claim.same_work(protocol, args.work)
    steps = {}
    for step in ("data", "choose", "train", "router", "test-data", "test"):
        steps[step] = claim.STEPS[step](protocol, args)
    patched.undo()
    return {"root": root, "protocol": protocol, "args": args, "seen": seen, "steps": steps}


def test_validation_and_fresh_test_are_disjoint_from_what_came_before(claim_run, cold):
    from bench.mmbert_data import sample

    work = claim_run["args"].work / "data"
    train = {r["text"] for r in read_jsonl(work / "train.jsonl") if "cloak" not in r}
    validation, test = (read_jsonl(work / f"{split}_clean.jsonl") for split in ("validation", "test"))
    earlier = {r["id"] for r in sample(cold, "test", 10, 0)}
    assert len(validation) == 20 and not {r["text"] for r in validation} & train
    assert sorted(r["label"] for r in validation) == [0] * 10 + [1] * 10  # sampled as the test posts are
    assert test and not {r["id"] for r in test} & earlier and not {r["text"] for r in test} & (
        train | {r["text"] for r in validation})
    assert all(8 <= len(r["text"]) <= 32 for r in validation + test)
    about = json.loads((work / "test_sample.json").read_text())
    assert about["sample"]["kept"] == len(test) and about["protocol_commit"] == "c0ffee"
    overlap = claim_run["steps"]["test"]["test"]["term_overlap"]
    assert overlap["attacked_terms"] > 0 and 0 <= overlap["masked_in_training"] <= overlap["attacked_terms"]
    for name in ("heldout_homophone", "heldout_homophone_seen"):
        assert [r["source_text"] for r in read_jsonl(work / f"test_{name}.jsonl")] == [r["text"] for r in test]


def test_the_twin_masks_the_same_positions_and_takes_the_same_updates(claim_run):
    seen = claim_run["seen"]
    masks = seen["masks"]
    assert set(masks) >= {"experts", "twin"} and masks["twin"] == masks["experts"]
    assert any(any(row) for row in masks["twin"].values())
    updates = seen["updates"]
    for stage3 in {k[2] for k in updates if k[1] == 3 and k[0] == "twin"}:
        assert updates[("twin", 3, stage3)] == updates[("experts", 3, stage3)] > 0
    assert updates[("twin", 2, None)] == updates[("experts", 2, None)] == updates[("dense", 2, None)] > 0
    assert ("twin", 1, None) not in updates  # stage 1 trains the aligners, which the twin has not
    work = claim_run["args"].work / "seed0"
    rates = [json.loads((work / f"{arm}_stage2" / "log.json").read_text())[0]["lr"] for arm in ("mmbert", "twin")]
    assert {g: rates[0][g] for g in ("expert_text", "head")} == rates[1]  # the text path's own rates


def test_every_arm_is_trained_chosen_on_validation_and_tested_once(claim_run):
    import bench.mmbert_claim as claim

    steps, root = claim_run["steps"], claim_run["root"]
    choice = steps["choose"]
    assert choice["chosen"] in ("words", "terms") and set(choice["candidates"]) == {"words", "terms"}
    assert choice["candidates"][choice["chosen"]]["claim"]["parts_met"] == max(
        c["claim"]["parts_met"] for c in choice["candidates"].values())
    test = steps["test"]
    arms = {"mmbert", "twin", "fusion", "bert_augmented", "bert_unveil"} | (
        {"best_text_only"} if choice["best_text_only"] != choice["chosen"] else set())
    assert set(test["predictions"]) == arms
    assert all(len(test["predictions"][arm][0]["clean"]) == len(test["labels"]) for arm in arms)
    assert set(test["predictions"]["mmbert"][0]) == {"clean", "homophone", "emoji", "pinyin", "split",
                                                     "heldout_homophone", "heldout_homophone_seen"}
    fusion = claim_run["args"].work / "seed0" / choice["chosen"] / "fusion_stage3"
    assert json.loads((fusion / "config.json").read_text())["feed_forward"] == "dense"
    router = steps["router"]["models"]
    assert set(router) == {"mmbert", "fusion", "router_modality"} and "routing" in router["router_modality"]
    assert test["protocol"]["sha256"] == claim_run["protocol"].sha256 and test["protocol_commit"] == "c0ffee"
    assert test["addendum"]["commit"] == "c0ffee" and test["addendum"]["defence"] == "unveil:targets=lexicon+mined"
    scores = claim_run["args"].work / "scores" / "test"  # bert behind unveil scored apart from bert alone
    assert {"seed0_bert_augmented.json", "seed0_bert_augmented+unveil.json"} <= {p.name for p in scores.iterdir()}
    posts = claim_run["args"].work / "data" / "train_posts.jsonl"  # what unveil mined its terms from: no cloak
    assert read_jsonl(posts) and not any("cloak" in r for r in read_jsonl(posts))
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(claim, "OUTPUTS", run_outputs(root))
        patched.setattr(claim, "committed", lambda protocol: "c0ffee")
        with pytest.raises(SystemExit, match="read once"):
            claim.test(claim_run["protocol"], claim_run["args"])


def test_the_test_is_not_read_again_once_its_output_is_deleted(claim_run, tmp_path):
    import bench.mmbert_claim as claim

    root, args = claim_run["root"], claim_run["args"]
    written = root / "results" / "mmbert_claim_test.json"
    output = tmp_path / "mmbert_claim_test.json"  # the run's output deleted (a copy: the verdict's tests read it)

    def rerun() -> str:
        with pytest.MonkeyPatch.context() as patched:
            patched.setattr(claim, "OUTPUTS", {**run_outputs(root), "test": output})
            patched.setattr(claim, "RESULTS", tmp_path)
            patched.setattr(claim, "committed", lambda protocol: "c0ffee")
            with pytest.raises(SystemExit, match="read once") as refused:
                claim.test(claim_run["protocol"], args)
        return str(refused.value)

    said = rerun()
    made = json.loads((args.work / "scores" / "test_read.json").read_text())
    assert made["sha256"] == hashlib.sha256(written.read_bytes()).hexdigest()
    assert "seed0_bert_augmented+unveil.json" in made["scores"]
    assert "scores/test_read.json" in said and "is missing (restore it" in said and made["sha256"][:12] in said
    shutil.copy(written, output)  # restored: still read once
    assert "is there, unchanged" in rerun()
    output.write_text(written.read_text() + " ")
    assert "has changed since" in rerun()


def test_a_test_step_stopped_before_it_ends_resumes(claim_run, tmp_path):
    """Stopped before it wrote its output (the scores cached so far, no mark), the test step is not refused:
    it goes on from the cached scores, to the same predictions."""
    import bench.mmbert_claim as claim

    root, args = claim_run["root"], claim_run["args"]
    mark = args.work / "scores" / "test_read.json"
    kept = tmp_path / "test_read.json"
    mark.rename(kept)
    try:
        with pytest.MonkeyPatch.context() as patched:
            patched.setattr(claim, "OUTPUTS", {**run_outputs(root), "test": tmp_path / "mmbert_claim_test.json"})
            patched.setattr(claim, "RESULTS", tmp_path)
            patched.setattr(claim, "committed", lambda protocol: "c0ffee")
            again = claim.test(claim_run["protocol"], args)
        assert mark.exists()
    finally:
        kept.replace(mark)
    first = json.loads((root / "results" / "mmbert_claim_test.json").read_text())
    assert again["predictions"] == first["predictions"] and again["labels"] == first["labels"]


def test_the_verdict_judges_the_test_under_its_protocol_and_no_other(claim_run):
    root = claim_run["root"]
    out = root / "verdict.json"
    command = [sys.executable, "-m", "bench.mmbert_verdict", "--protocol", str(root / "protocol.yaml"),
               str(root / "results" / "mmbert_claim_test.json"), "--out", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    verdict = json.loads(out.read_text())
    assert verdict["protocol"]["sha256"] == claim_run["protocol"].sha256
    claim = verdict["claim"]
    assert set(claim) >= {"at_most_the_ratio", "interval_excludes_zero", "clean_within_margin", "holds", "ratio",
                          "ratio_interval", "baseline_drop_minus_drop"}
    assert claim["holds"] is all(claim[k] for k in ("at_most_the_ratio", "interval_excludes_zero",
                                                    "clean_within_margin"))
    mmbert = verdict["models"]["mmbert"]
    low, high = mmbert["macro_f1"]["clean"]["interval"]
    assert low <= high and set(mmbert["drop"]) >= {"homophone", "heldout_homophone"}
    assert set(mmbert["seeds"]["clean_macro_f1"]) == {"seeds", "sd"}
    assert {"mmbert_vs_twin", "mmbert_vs_fusion", "mmbert_vs_bert_augmented", "mmbert_vs_bert_unveil"} <= set(
        verdict["comparisons"])
    assert verdict["addendum"]["defence"] == "unveil:targets=lexicon+mined"
    assert verdict["term_overlap"]["attacked_terms"] > 0 and set(verdict["claim_by_seed"]) == {"0"}
    changed = root / "protocol.yaml"
    changed.write_text(changed.read_text(encoding="utf-8").replace("ratio_at_most: 0.5", "ratio_at_most: 0.6"),
                       encoding="utf-8")
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode != 0 and "another protocol" in done.stderr and "Traceback" not in done.stderr


def test_the_results_page_shows_the_router_and_the_verdict_once_they_are_run(claim_run, tmp_path):
    sys.path.insert(0, str(ROOT / "docs"))
    from results_tables import Pending, Results
    from results_tables.mmbert import claim_router, claim_verdict

    results = claim_run["root"] / "results"
    assert [type(t) for t in claim_verdict(Results(results, {}))] == [Pending]  # the test run, not judged yet
    protocol = tiny_protocol(tmp_path / "protocol.yaml")  # the run's, as another test may have changed its copy
    command = [sys.executable, "-m", "bench.mmbert_verdict", "--protocol", str(protocol),
               str(results / "mmbert_claim_test.json"), "--out", str(results / "mmbert_claim_verdict.json")]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    judged = Results(results, {})
    page = "\n".join(t.markdown(judged) for t in claim_router(judged) + claim_verdict(judged))
    assert "Not run yet" not in page
    assert "| MMBERT, each token to its modality's expert |" in page
    assert "| MMBERT |" in page and "| fusion, no experts |" in page
    assert "| bert + augmentation + unveil |" in page and "from its addendum" in page
    assert "MMBERT against text-only twin" in page and "the claim at seed 0" in page
    assert "held-out terms (drop [95%])" in page and "attacked terms" in page
    from results_tables.headline import protocol_result

    verdict = json.loads((results / "mmbert_claim_verdict.json").read_text())
    said = protocol_result(verdict)  # README's MMBERT row, once the test is judged
    assert f"the claim is **{'met' if verdict['claim']['holds'] else 'not met'}**" in said and "50 fresh posts" in said
    assert "with `cloak unveil` in front loses" in said


def test_a_ratio_of_drops_is_given_only_where_the_baselines_drop_is_above_zero_in_every_resample():
    sys.path.insert(0, str(ROOT / "docs"))
    from results_tables.mmbert import drop_share

    assert drop_share({"value": 0.5451, "interval": [0.2936, 0.8036], "resamples_without": 0}, 2000) == \
        "55% [29%, 80%]"
    # a baseline that loses about nothing (a defence) makes the ratio huge and its interval meaningless
    said = drop_share({"value": 12.46, "interval": [2.42, 157.96], "resamples_without": 524}, 2000)
    assert said == "none: the baseline loses nothing in 524 of 2,000 resamples"


def test_the_claims_pages_say_beside_its_figures_what_a_reviewer_needs():
    """On the committed results: a share's interval in percent, the clean part with what its interval allows,
    the unveil arm's caveat beside its row; and the study says what unveil read of the test before its addendum."""
    import re

    sys.path.insert(0, str(ROOT / "docs"))
    from results_tables import Results
    from results_tables.mmbert import claim_verdict, protocol_choice

    results = Results(ROOT / "bench" / "results", {})
    shares = [row[5] for row in protocol_choice(results)[0].rows]
    assert shares and all(re.fullmatch(r"\d+% \[\d+%, \d+%\]", s) for s in shares), shares
    note = claim_verdict(results)[0].note
    assert "MMBERT minus the twin -0.004 [-0.016, 0.009], within the 0.01 margin" in note
    assert "its interval allows a loss of up to 0.016, beyond the margin" in note
    assert "reads cloaks back with the very tables that make them" in note
    study = (ROOT / "docs" / "studies" / "mmbert.md").read_text(encoding="utf-8")
    test = study[study.index("## 2026-11-29: the protocol's one test"):study.index("## What is open")]
    assert "183 of the 950 test posts" in test and "37f8e28" in test and "read-back rates on the whole COLD test" in test
    assert "at no clean cost" not in study
