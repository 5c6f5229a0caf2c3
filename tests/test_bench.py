"""The benchmarks' own code paths a long run relies on: any encoder folder as backbone, the MMBERT test
cloaks, its run settings and the modality ablation, and the verdict over seeds."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ROOT, read_jsonl, write_cold


@pytest.fixture(scope="module")
def cold(tmp_path_factory, sample_path):
    """A tiny COLD folder (train, dev, test CSVs as COLD writes them) cut from the bundled sample."""
    records = read_jsonl(sample_path)
    splits = {"train": records[:200], "dev": records[200:250], "test": records[250:]}
    return write_cold(tmp_path_factory.mktemp("cold"), splits)


def test_backbone_info_takes_an_encoder_without_a_pretraining_log(xlmr_backbones, tmp_path):
    from bench.common import backbone_info

    info = backbone_info(xlmr_backbones["e5"], layers=1)
    assert (info["model_type"], info["num_hidden_layers"], info["layers_used"]) == ("bert", 2, 1)
    assert "best_dev_mlm_loss" not in info
    with pytest.raises(SystemExit, match="config.json is missing"):
        backbone_info(tmp_path)


@pytest.mark.slow
def test_victims_trains_bert_on_any_encoder_folder(cold, xlmr_backbones, tmp_path):
    out = tmp_path / "victims.json"
    command = [sys.executable, "-m", "bench.victims", "--neural", "bert", "--backbone", xlmr_backbones["e5"],
               "--backbone-layers", "1", "--lr", "1e-3", "--max-length", "32", "--epochs", "1",
               "--limit-train", "60", "--limit-test", "20", "--no-curve", "--cold", str(cold),
               "--work", str(tmp_path / "work"), "--out", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    bert = result["victims"]["bert"]
    assert result["data"] == {"train": 60, "dev": 50, "test": 20}
    assert bert["n"] == 20 and bert["resumed"] is False and bert["epoch_seconds"] >= 0  # a tiny model: ~0 s
    assert bert["backbone"]["layers_used"] == 1 and bert["config"]["max_length"] == 32
    assert (tmp_path / "work" / "victims" / "bert" / "victim.json").exists()


def test_mmbert_test_cloaks_follow_attacks_evaluate(cold, tmp_path):
    from bench.mmbert_data import TEST_OPS, prepare

    paths = prepare(cold, tmp_path, n_train=20, n_dev=10, n_test=30)
    settings = json.loads(paths["test_cloaks"].read_text())
    assert settings["strength"] == "poster" and settings["targets"] == "lexicon+mined"
    assert set(TEST_OPS) == {"homophone", "emoji", "pinyin", "split"}
    clean = read_jsonl(paths["test_clean"])
    for op in TEST_OPS:
        cloaks = read_jsonl(paths[f"test_{op}"])
        assert [r["source_text"] for r in cloaks] == [r["text"] for r in clean]
        assert any(r["text"] != r["source_text"] for r in cloaks), op
        assert all(e["op"] == op for r in cloaks for e in r["cloak"]["edits"])


def test_held_out_terms_are_never_masked_in_any_form():
    from bench.mmbert_data import split_terms
    from cloak.targets import Lexicon
    from mmbert.train import held_out

    words = ["女", "女人", "中国女人", "白人", "黑人", "黑鬼", "娘炮", "绿茶婊", "直男癌", "地域黑", "南蛮"]
    terms = Lexicon(words, {w: "mined" if len(w) == 2 else "race" for w in words})
    held, masked = split_terms(terms, 0.5, None)
    assert held.terms and masked.terms
    assert held.categories == {t: terms.categories[t] for t in held.terms}  # what the figures count as mined
    assert {t for t in terms.terms if held_out(t, 0.5)} >= set(held.terms)  # the same hash as training's
    assert not set(masked.terms) & {t for t in terms.terms if held_out(t, 0.5)}
    assert not any(h in m or m in h for h in held.terms for m in masked.terms)
    with pytest.raises(SystemExit, match="held out 0.5"):
        split_terms(terms, 0.5, 0.3)
    assert split_terms(terms, 0.0, 0.3)[1].terms == [t for t in terms.terms if not held_out(t, 0.3)]


@pytest.mark.slow
def test_heldout_test_cloaks_held_out_and_masked_terms_apart(stages, run, data, tmp_path):
    from bench.mmbert_data import split_terms
    from mmbert.train import read_labelled, term_mask_targets, train_stage

    runs = tmp_path / "runs_24"
    shutil.copytree(stages[3], runs / "mmbert_stage3")
    twin = {**run, "model": {**run["model"], "modalities": ["text"]}}
    train_stage(3, twin, str(data / "train.jsonl"), str(data / "dev.jsonl"), str(runs / "text_only"), None,
                progress=False, allow_skip=True)
    test = [r for r in read_jsonl(data / "dev.jsonl") if "cloak" not in r]
    (tmp_path / "test_clean.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in test),
                                               encoding="utf-8")
    out = tmp_path / "heldout.json"
    done = subprocess.run([sys.executable, "-m", "bench.mmbert_heldout", "--work", str(tmp_path), "--runs", runs.name,
                           "--out", str(out)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    held, masked = split_terms(term_mask_targets(read_labelled(str(data / "train.jsonl"))), 0.0, 0.5)
    assert report["test_cloaks"]["held_out"]["terms"] == len(held)
    assert report["held_out_masked_in_training"] is False  # the tiny run masked no term
    for name, terms in (("homophone", held), ("homophone_seen", masked)):
        cloaked = read_jsonl(runs / f"heldout_{name}.jsonl")
        assert [r["source_text"] for r in cloaked] == [r["text"] for r in test]
        assert sum(r["text"] != r["source_text"] for r in cloaked) == report["test_cloaks"]["posts_cloaked"][
            f"heldout_{name}"] > 0
        for r in cloaked:  # each rewrites its own terms only
            spans = terms.find(r["source_text"])
            assert all(e["op"] == "homophone" and any(s <= e["start"] < e["end"] <= t for s, t in spans)
                       for e in r["cloak"]["edits"])
    assert {m: set(by_set) for m, by_set in report["results"].items()} == {
        m: {"clean", "homophone", "homophone_seen"} for m in ("mmbert", "text_only")}
    verdict = tmp_path / "verdict.json"
    done = subprocess.run([sys.executable, "-m", "bench.mmbert_verdict", str(out), "--out", str(verdict),
                           "--resamples", "50"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr  # the verdict pools held-out runs as it pools bench.mmbert_cold's
    assert json.loads(verdict.read_text())["test_posts"] == len(test)


@pytest.mark.slow
@pytest.mark.parametrize("modalities", [("text", "speech"), ("text", "vision")])
def test_ablation_trains_mmbert_on_two_modalities(run, data, tmp_path, modalities):
    from mmbert.loading import load_model
    from tests.conftest import train_stages

    run = {**run, "model": {**run["model"], "modalities": list(modalities)}}
    dirs = train_stages(run, data, tmp_path)
    model, featurizer = load_model(dirs[3])
    assert model.config.modalities == list(modalities) and model.config.num_experts == 2
    assert (featurizer.speech is not None) == ("speech" in modalities)
    names = {name.split(".")[1] for name, _ in model.named_parameters() if name.startswith("mmbert.")}
    assert {n for n in names if n.endswith("_aligner")} == {f"{m}_aligner" for m in modalities if m != "text"}


def _report(labels: np.ndarray, seed: int, mmbert_homophone: np.ndarray, twin_homophone: np.ndarray) -> dict:
    """A per-seed report of bench.mmbert_cold: both models right on every clean post."""
    from attacks.metrics import detection_metrics

    def f1(predictions):
        return detection_metrics(labels.tolist(), np.eye(2)[predictions])["f1"]

    predictions = {"mmbert": {"clean": labels, "homophone": mmbert_homophone},
                   "text_only": {"clean": labels, "homophone": twin_homophone}}
    results = {m: {"clean": {"all": {"f1": f1(p["clean"])}},
                   "homophone": {"drop_f1": round(f1(p["clean"]) - f1(p["homophone"]), 4)}}
               for m, p in predictions.items()}
    return {"seed": seed, "results": results,
            "predictions": {"labels": "".join(map(str, labels)),
                            **{m: {k: "".join(map(str, v)) for k, v in p.items()} for m, p in predictions.items()}}}


def test_verdict_says_whether_mmbert_holds_the_claim_over_seeds(tmp_path):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 400)
    flipped = [np.where(rng.random(400) < share, 1 - labels, labels) for share in (0.02, 0.3)]
    runs = {"holds": (flipped[0], flipped[1]), "fails": (flipped[1], flipped[0])}
    for name, (mmbert, twin) in runs.items():
        paths = []
        for seed in range(3):
            paths.append(tmp_path / f"{name}_seed{seed}.json")
            paths[-1].write_text(json.dumps(_report(labels, seed, mmbert, twin)))
        out = tmp_path / f"{name}_verdict.json"
        done = subprocess.run([sys.executable, "-m", "bench.mmbert_verdict", *map(str, paths), "--out", str(out),
                               "--resamples", "200"], cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        claim = json.loads(out.read_text())["claim"]
        assert claim["holds"] is (name == "holds")
        assert claim["interval_excludes_zero"] is (name == "holds")
        low, high = claim["twin_drop_minus_mmbert_drop_95"]
        assert (low > 0) if name == "holds" else (high < 0)


def test_verdict_refuses_seeds_tested_on_other_posts(tmp_path):
    labels = np.array([0, 1] * 20)
    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    paths[0].write_text(json.dumps(_report(labels, 0, labels, labels)))
    paths[1].write_text(json.dumps(_report(labels[::-1].copy(), 1, labels, labels)))
    done = subprocess.run([sys.executable, "-m", "bench.mmbert_verdict", *map(str, paths), "--out",
                           str(tmp_path / "v.json")], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode != 0 and "different posts" in done.stderr


def mmbert_cold_args(tmp_path, *options: str):
    """bench.mmbert_cold's arguments as its command line parses them, on an e5 folder in ``tmp_path``."""
    from bench.mmbert_cold import arguments

    return arguments().parse_args(["--cold", str(tmp_path), "--weights", str(tmp_path), "--tts", "espeak-ng",
                                   "--work", str(tmp_path), "--backbone", str(tmp_path / "e5"), *options])


def test_mmbert_run_config_honours_the_runs_settings(tmp_path):
    from bench.mmbert_cold import run_config, stage_epochs

    args = mmbert_cold_args(tmp_path, "--seed", "2", "--backbone-layers", "6", "--max-length", "48", "--stage3-lr",
                            "2e-5", "--epochs", "1,2,3", "--stage1-loss", "contrastive", "--stage3-text-mask", "0.15",
                            "--stage3-term-mask", "0.4")
    run = run_config(args, ("text", "vision"))
    assert run["train"]["stage1"]["loss"] == "contrastive" and run["train"]["stage3"]["text_mask"] == 0.15
    assert run["train"]["stage3"]["term_mask"] == 0.4
    assert {k: run_config(mmbert_cold_args(tmp_path))["train"]["stage3"][k] for k in ("text_mask", "term_mask")} \
        == {"text_mask": 0.0, "term_mask": 0.0}
    assert run["model"]["modalities"] == ["text", "vision"] and run["model"]["backbone_layers"] == 6
    assert (run["train"]["max_length"], run["train"]["stage3"]["lr"], run["train"]["seed"]) == (48, 2e-5, 2)
    assert [run["train"][s]["epochs"] for s in ("stage1", "stage2", "stage3")] == [1, 2, 3]
    assert stage_epochs("2") == [2, 2, 2]
    with pytest.raises(ValueError):
        stage_epochs("1,2")
    assert run["features"]["tts"] == {"name": "espeak-ng"}


def test_mmbert_stage2_takes_the_papers_rates_on_a_pretrained_encoder(tmp_path):
    """The small preset's stage-2 rates (experts and head at 1e-3) made multilingual-e5-small's speech and
    vision experts answer one label for every post; a pretrained --backbone gets Xue et al.'s."""
    from bench.mmbert_cold import DEFAULT_BACKBONE, run_config

    args = mmbert_cold_args(tmp_path)
    rates = {k: v for k, v in run_config(args)["train"]["stage2"].items() if k.startswith("lr_")}
    assert rates == {"lr_aligners": 1e-3, "lr_text_expert": 5e-6, "lr_experts": 5e-5, "lr_head": 5e-5}
    args.backbone = DEFAULT_BACKBONE
    small = run_config(args)["train"]["stage2"]
    assert (small["lr_text_expert"], small["lr_experts"], small["lr_head"]) == (1e-4, 1e-3, 1e-3)
    args.stage2_rates = "paper"
    assert run_config(args)["train"]["stage2"]["lr_experts"] == 5e-5


def test_mmbert_runs_folder_refuses_other_settings(tmp_path):
    from bench.mmbert_cold import checked_runs, run_config

    args = mmbert_cold_args(tmp_path, "--backbone-layers", "2", "--train-posts", "100", "--test", "50")
    backbone = {"path": "weights/e5"}
    runs = checked_runs(args, tmp_path, backbone, run_config(args))
    assert checked_runs(args, tmp_path, backbone, run_config(args)) == runs  # a rerun continues
    args.backbone_layers = 6
    with pytest.raises(SystemExit, match="other settings"):
        checked_runs(args, tmp_path, backbone, run_config(args))
    args.backbone_layers, args.stage3_text_mask = 2, 0.15
    with pytest.raises(SystemExit, match="other settings"):
        checked_runs(args, tmp_path, backbone, run_config(args))
    args.stage3_text_mask = 0.0
    saved = json.loads((runs / "settings.json").read_text())
    del saved["train"]["stage3"]["term_holdout"]  # a run begun before the setting existed trained without it
    (runs / "settings.json").write_text(json.dumps(saved))
    assert checked_runs(args, tmp_path, backbone, run_config(args)) == runs
    args.stage3_term_holdout = 0.5
    with pytest.raises(SystemExit, match="other settings"):
        checked_runs(args, tmp_path, backbone, run_config(args))


def test_nearness_scores_each_post_against_its_own_clean_text():
    from bench.mmbert_diagnose import nearness

    clean = np.random.default_rng(0).normal(size=(6, 8))
    assert nearness(clean, clean) == {"centred_cosine": 1.0, "retrieval_at_1": 1.0}
    shuffled = nearness(clean[::-1], clean)  # every post's encoding is another post's clean text
    assert shuffled["retrieval_at_1"] == 0.0 and shuffled["centred_cosine"] < 0.5


@pytest.mark.slow
def test_diagnosis_of_a_run_not_yet_trained_says_so(tmp_path):
    done = subprocess.run([sys.executable, "-m", "bench.mmbert_diagnose", "--work", str(tmp_path), "--runs",
                           "runs_100", "--out", str(tmp_path / "d.json")], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode != 0 and "no finished MMBERT stage 1" in done.stderr and "Traceback" not in done.stderr


def test_glyph_spread_tells_one_vector_for_every_glyph_from_distinct_glyphs():
    from bench.mmbert_diagnose import glyph_table_spread

    rng = np.random.default_rng(0)
    distinct = glyph_table_spread(rng.normal(size=(300, 16)))
    collapsed = glyph_table_spread(np.ones((300, 16)) + 0.01 * rng.normal(size=(300, 16)))
    assert distinct["varying_share"] > 0.9 and distinct["mean_abs_cosine_centred"] < 0.3
    assert collapsed["varying_share"] < 0.001
    padded = glyph_table_spread(np.vstack([rng.normal(size=(10, 4)), np.zeros((5, 4))]))
    assert padded["entries"] == 10  # the rows of ids no token uses are zero, and left out


def test_diagnosis_measures_each_modality_path_of_a_trained_mmbert(stages, run, data, tmp_path):
    from bench.mmbert_data import TEST_SETS
    from bench.mmbert_diagnose import macro_f1, model_figures, routing_shift, stage2_logs

    dev = read_jsonl(data / "dev.jsonl")
    clean, cloaked = [r for r in dev if "cloak" not in r], [r for r in dev if "cloak" in r]
    files = {"test_clean": data / "clean.jsonl", "test_homophone": data / "cloaked.jsonl"}
    files["test_clean"].write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in clean), encoding="utf-8")
    files["test_homophone"].write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in cloaked),
                                       encoding="utf-8")
    files.update({f"test_{name}": files["test_clean"] for name in TEST_SETS[2:]})
    figures = model_figures(stages[3], files, run["features"])
    assert 0 < figures.pop("glyph_table")["varying_share"] <= 1
    knocked = figures.pop("knockout")  # stage 3: each modality left out of the mixture's input in turn
    from mmbert.inference import infer
    from mmbert.loading import load_model

    model, featurizer = load_model(str(stages[3]), run["features"])
    whole = infer(model, featurizer, cloaked)["probs"].argmax(1)
    assert knocked["homophone"]["all"] == macro_f1([r["label"] for r in cloaked], whole)
    assert set(knocked["clean"]) == {"all", "without_text", "without_speech", "without_vision"}
    assert knocked["drop"]["homophone"]["without_speech"] == round(
        knocked["clean"]["without_speech"] - knocked["homophone"]["without_speech"], 4)
    assert set(figures) == set(TEST_SETS)
    assert all(set(by_modality) == {"text", "speech", "vision"} for by_modality in figures.values())
    assert figures["clean"]["text"]["retrieval_at_1"] == 1.0  # the clean text is nearest itself
    assert all(0 <= m["f1_alone"] <= 1 for by_modality in figures.values() for m in by_modality.values())

    (tmp_path / "runs_32" / "mmbert_stage2").mkdir(parents=True)
    (tmp_path / "runs_32" / "mmbert_stage2" / "log.json").write_text(Path(stages[2], "log.json").read_text())
    logs = stage2_logs(tmp_path, ["runs_32", "runs_missing"])
    assert list(logs) == ["runs_32"] and {"dev_f1_speech", "dev_f1_vision", "lr"} <= set(logs["runs_32"][0])

    table = {"experts": ["text", "speech"], "layers": 2,
             "groups": {"clean": {"n": 2, "weights": [[0.6, 0.4], [0.6, 0.4]]},
                        "homophone": {"n": 2, "weights": [[0.5, 0.5], [0.3, 0.7]]}}}
    (tmp_path / "routing.json").write_text(json.dumps(table))
    shift = routing_shift(tmp_path / "routing.json")
    assert shift["shift_from_clean"] == {"homophone": {"text": -0.2, "speech": 0.2}} and "edited_tokens" not in shift
    kinds = {"text": {"n": 2, "weights": [[0.8, 0.2], [0.8, 0.2]]}, "vision": {"n": 2, "weights": [[0.5, 0.5]] * 2},
             "text_edited": {"n": 0, "weights": None}}
    table["tokens"] = {"clean": kinds, "homophone": {**kinds, "text_edited": {"n": 2, "weights": [[0.6, 0.4]] * 2},
                                                     "vision_edited": {"n": 2, "weights": [[0.5, 0.5]] * 2}}}
    (tmp_path / "routing.json").write_text(json.dumps(table))
    edited = routing_shift(tmp_path / "routing.json")["edited_tokens"]["homophone"]
    assert edited["text"]["shift_from_clean"] == {"text": -0.2, "speech": 0.2} and edited["text"]["n"] == 2
    assert edited["vision"]["shift_from_clean"] == {"text": 0.0, "speech": 0.0}


def test_c2tus_homophone_graph_joins_same_and_confused_syllables_only(tmp_path):
    """bench.unveil_c2tu's graph, as C²TU's notebook builds it: 白 and 拜 (bai) are neighbours, 男 and 蓝
    through n/l, 黑 and 人 are not; its lexicon the Han terms."""
    from bench.restoration import read_back
    from bench.unveil_c2tu import homophone_graph

    folder = homophone_graph(tmp_path / "graph", ["拜仁", "蓝人", "喃"], ["白人", "男", "黑鬼", "abc"])
    a = np.load(folder / "homoGraphA.npy")
    ids = json.loads((folder / "char2id.json").read_text(encoding="utf-8"))
    assert a[ids["白"], ids["拜"]] and a[ids["男"], ids["喃"]] and a[ids["男"], ids["蓝"]] and a[ids["蓝"], ids["男"]]
    assert not a[ids["黑"], ids["人"]] and not a[ids["白"], ids["男"]]
    assert json.loads((folder / "lexicons.json").read_text(encoding="utf-8")) == ["白人", "男", "黑鬼"]
    assert read_back("白人都是", "白人都是", 0, 2) and not read_back("白人都是", "拜人都是", 0, 2)


def test_balanced_augmentation_pairs_each_cloaking_with_the_clean_posts():
    from bench.balanced_augmentation import rates

    def answers(offensive: list[float]) -> list[dict]:
        return [{"label": int(p > 0.5), "probs": [1 - p, p]} for p in offensive]

    labels = [0, 0, 0, 0, 1, 1]
    figures = rates(labels, {"clean": answers([0.9, 0.1, 0.2, 0.3, 0.8, 0.4]),
                             "cloaked": answers([0.6, 0.7, 0.2, 0.1, 0.8, 0.9])})
    assert figures["clean"]["fpr"]["share"] == 0.25 and figures["clean"]["recall"]["share"] == 0.5
    assert "fpr_change" not in figures["clean"]
    assert figures["cloaked"]["fpr"]["share"] == 0.5 and figures["cloaked"]["recall"]["share"] == 1.0
    assert figures["cloaked"]["fpr_change"]["difference"] == 0.25
    # clean ranks both offensive posts below the 0.9 (6 of the 8 pairs right); cloaked ranks them above all others
    assert figures["clean"]["auc"]["auc"] == 0.75 and figures["cloaked"]["auc"]["auc"] == 1.0


def test_auc_difference_pairs_the_draws_and_draws_whole_posts():
    from bench.common import auc_difference, auc_interval

    labels = [1, 0, 1, 0, 1, 0, 0, 1]
    good, bad = [0.9, 0.1, 0.8, 0.3, 0.7, 0.2, 0.4, 0.6], [0.5, 0.6, 0.4, 0.3, 0.7, 0.8, 0.1, 0.2]
    posts = ["a", "a", "b", "b", "c", "c", "d", "d"]
    assert auc_interval(labels, good, posts) == {"auc": 1.0, "interval": [1.0, 1.0]}
    assert auc_difference(labels, good, good, posts) == {"difference": 0.0, "interval": [0.0, 0.0]}
    better = auc_difference(labels, good, bad, posts)
    assert better["difference"] == 0.5 and better["interval"][0] <= 0.5 <= better["interval"][1]
    assert auc_interval([1, 1], [0.2, 0.3]) == {"auc": None, "interval": None}


def test_unveil_tuning_judges_a_setting_by_the_unveilers_own_reading():
    from bench.unveil_tuning import judge
    from cloak.unveil import CharNgramLM, Unveiler
    from cloak.unveil.index import Candidate
    from cloak.unveil.unveiler import FUZZY, PRIORS, SINGLE

    truth = {"今天天气很好，我们去公园散步吧": ("clean", set()), "黑任难又都是垃圾": ("homophone", {(0, 2, "黑人")}),
             "拜仁都是垃圾": ("homophone", {(0, 2, "白人")}), "我是女表子你呢": ("split", {(2, 5, "婊子")})}
    unveiler, lm = Unveiler().prepare(), CharNgramLM.load()
    posts = []
    for text, (name, right) in truth.items():
        view, _, found = unveiler.candidates(text)
        posts.append((name, right, len(right), list(zip(found, unveiler.gains(view, found))), text, view))
    setting = {"fuzzy": FUZZY, "single": SINGLE, "priors": dict(PRIORS)}
    for threshold, split in ((2.0, 1.0), (10.0, 0.0)):  # as the unveiler reads them at each threshold
        reads = {t: Unveiler(threshold=threshold)(t).text for t in truth}
        assert (reads["我是女表子你呢"] == "我是婊子你呢") == bool(split) and reads["拜仁都是垃圾"] == "白人都是垃圾"
        clean, shares = judge(posts, dict(setting, threshold=threshold), lm)
        assert clean == 1.0 and shares == {"homophone": 1.0, "split": split}
    posts[0][3].append((Candidate(0, 2, "天才", "homophone"), 0.0))
    clean, _ = judge(posts, dict(setting, threshold=-50.0), lm)  # any candidate clears a bar that low
    assert clean == 0.0


def test_unveil_lm_sets_each_model_against_the_default_on_the_same_posts():
    from bench.unveil_lm import DEFAULT, compared

    counts = {DEFAULT: [("clean", 0, 1), ("clean", 1, 1), ("homophone", 1, 2), ("homophone", 0, 1)],
              "more text": [("clean", 0, 1), ("clean", 0, 1), ("homophone", 2, 2), ("homophone", 1, 1)]}
    figures = compared(counts)
    assert figures[DEFAULT]["clean"]["share"] == 0.5 and figures["more text"]["clean"]["share"] == 1.0  # unchanged
    assert figures["more text"]["clean"]["against_default"]["difference"] == 0.5
    assert figures[DEFAULT]["homophone"]["share"] == round(1 / 3, 4) and figures["more text"]["homophone"]["share"] == 1
    assert figures["more text"]["homophone"]["against_default"]["difference"] == round(2 / 3, 4)  # of 3 terms, not 2 posts
    assert figures[DEFAULT]["homophone"]["against_default"] == {"difference": 0.0, "interval": [0.0, 0.0]}


def test_unveil_judge_reads_each_judge_at_its_own_scores():
    import numpy as np

    from bench.unveil_judge import OWN, POST, at_threshold, features, figures
    from cloak.unveil.index import Candidate

    found = [(Candidate(0, 2, "白人", "homophone"), 9.0), (Candidate(1, 3, "人都", "homophone"), 8.0),
             (Candidate(5, 6, "男", "pinyin"), 1.0)]
    margins = np.asarray([3.5, 2.5, -6.5])  # at the unveiler's bar, 5.5; 男 loses two more as one character
    rows = features(found, margins, ["homophone", "pinyin"], post_level=True)
    assert rows.shape == (3, len(OWN) + 2 + len(POST))
    assert features([], np.empty(0), ["homophone"], True).shape == (0, len(OWN) + 3)
    assert rows[0, OWN.index("gain over the best rival")] == 1.0 and rows[2, OWN.index("gain over the best rival")] == 30.0
    assert list(rows[:, -2]) == [1, 1, 2]  # 白人 and 人都 clear the bar (5.5): each has the other, 男 both
    posts = [("clean", set(), 0, found[2:], "a"), ("homophone", {(0, 2, "白人")}, 2, found[:2], "b")]
    tally = at_threshold(posts, [np.asarray([2.0]), np.asarray([3.0, 4.0])], 2.5)
    assert tally == {"clean": [1], "read": {"homophone": [0]}, "cloaked": {"homophone": [2]}}  # 人都 wins
    tally = at_threshold(posts, [np.asarray([2.0]), np.asarray([4.0, 3.0])], 1.5)
    assert tally == {"clean": [0], "read": {"homophone": [1]}, "cloaked": {"homophone": [2]}}
    sparse = [("homophone", {(0, 2, "白人")}, 1, found[:2], "b")]
    judged = figures(posts + sparse, [np.asarray([2.0]), np.asarray([4.0, 3.0]), np.asarray([4.0, 3.0])],
                     np.arange(1.0, 3.01, 0.5), sparse=1)
    assert judged["threshold"] == 2.0 and judged["clean_unchanged"]["share"] == 1.0  # the lowest keeping clean posts
    assert judged["read_back"]["homophone"]["share"] == 0.5 and judged["read_back_sparse"]["homophone"]["share"] == 1.0


def test_run_once_lists_a_step_an_earlier_run_made(tmp_path):
    from bench.common import run_once

    out = tmp_path / "made.txt"
    command = [sys.executable, "-c", f"open({str(out)!r}, 'w').write('x')"]
    first, again = {}, {}
    assert run_once("make", out, command, first) == out and out.read_text() == "x"
    out.write_text("kept")  # a rerun does not run the command again
    run_once("make", out, command, again)
    assert out.read_text() == "kept" and again == first and first["make"]["exit"] == 0


def test_run_once_says_when_it_reuses_what_another_commit_made(tmp_path, monkeypatch, capsys):
    import bench.common as common

    out = tmp_path / "made.txt"
    command = [sys.executable, "-c", f"open({str(out)!r}, 'w').write('x')"]
    monkeypatch.setattr(common, "_git_state", lambda: {"commit": "a" * 40})
    common.run_once("make", out, command, {})
    common.run_once("make", out, command, {})
    assert "reused" not in capsys.readouterr().out
    monkeypatch.setattr(common, "_git_state", lambda: {"commit": "b" * 40})
    steps: dict = {}
    common.run_once("make", out, command, steps)
    assert "made at commit aaaaaaa (now bbbbbbb)" in capsys.readouterr().out and steps["make"]["commit"] == "a" * 40


def test_unveil_misses_are_told_apart_by_what_else_the_cloak_may_be_read_as(tmp_path):
    from bench.unveil_scorers import misses
    from cloak.targets import Lexicon
    from cloak.unveil import Unveiler

    (tmp_path / "terms.txt").write_text("歧视\n黑人\n这帮\n资本\n", encoding="utf-8")
    lexicon = Lexicon.from_file(tmp_path / "terms.txt")
    edits = [{"op": "homophone", "start": 3, "end": 5, "src": "歧视", "dst": "其实"},  # a common word as written
             {"op": "homophone", "start": 5, "end": 7, "src": "黑人", "dst": "嘿任"},  # nothing else
             {"op": "abbrev", "start": 8, "end": 10, "src": "资本", "dst": "zb"}]  # initials of 这帮 too
    record = {"source_text": "他就是歧视黑人的资本家", "text": "他就是其实嘿任的zb家", "cloak": {"edits": edits}}
    unveiler = Unveiler(lexicon=str(tmp_path / "terms.txt"))
    found = misses(unveiler, lexicon, [record])
    by_cloak = found["read_back_by_cloak"]
    assert {kind: v["items"] for kind, v in by_cloak.items()} == {
        "a common word": 1, "other terms there": 1, "neither": 1}
    assert by_cloak["neither"]["share"] == 1.0  # 嘿任 reads as nothing but 黑人
    read = round(sum(v["share"] * v["items"] for v in by_cloak.values()))
    assert round(found["read_back"]["share"] * 3) == read
    assert sum(found["missed_by_cloak"].values()) == 3 - read == sum(n for v in found["missed"].values()
                                                                      for n in v.values())
