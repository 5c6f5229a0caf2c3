"""The victim contract: every detector trains on tiny data, saves, reloads and predicts the same;
differentiable ones give embeddings whose logits are the prediction's and whose gradient is usable;
a tampered victim folder does not load."""
from __future__ import annotations

import http.server
import json
import os
import threading

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.base import BaseEstimator, ClassifierMixin

from attacks import ConventionalVictim, VictimError, conventional_names, load_victim, make_victim
from attacks.curve import nested_samples

from .conftest import DATA, read_jsonl

VECTORS = str(DATA / "vectors_tiny.txt")


@pytest.fixture(scope="module")
def split(sample_path):
    rows = read_jsonl(sample_path)
    return rows[:160], rows[160:220], rows[220:]


def texts(rows):
    return [r["text"] for r in rows]


def records(path, rows) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


class Recorder(ClassifierMixin, BaseEstimator):
    """Remembers the labels it was fitted on."""

    def fit(self, X, y):
        self.seen_ = np.asarray(y)
        self.classes_ = np.unique(y)
        return self


# ---- conventional ----

# the forests and boosted trees take a few seconds each: test-all's
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n.endswith(("-rf", "-gbt")) else n
                                  for n in conventional_names()])
def test_every_conventional_victim_trains_saves_and_reloads(name, split, tmp_path):
    train, _, test = split
    victim = make_victim(name, {"vectors": VECTORS} if name.startswith("emb") else {}, {"seed": 1})
    victim.fit(train)
    probs = victim.predict_proba(texts(test))
    assert probs.shape == (len(test), 2) and np.allclose(probs.sum(1), 1)
    assert (victim.predict(texts(test)) == probs.argmax(1)).all()
    victim.save(str(tmp_path))
    again = load_victim(str(tmp_path))
    assert again.name == name
    np.testing.assert_array_equal(again.predict_proba(texts(test)), probs)


def test_the_grid_and_oversampling_follow_paper_001(split, tmp_path):
    train, _, test = split
    victim = make_victim("tfidf-svm", training={"grid": True, "oversample": True, "folds": 3})
    victim.fit(train, progress=False)
    results = victim.grid_results_
    assert [c["params"] for c in results["candidates"]] == [{"C": 0.1}, {"C": 1.0}, {"C": 10.0}]
    best = max(results["candidates"], key=lambda c: c["cv_macro_f1"])
    assert victim.params_ == results["best_params"] == best["params"]
    assert victim.config.params == {}  # fit leaves the params it was given (none: the defaults)
    victim.save(str(tmp_path))
    again = load_victim(str(tmp_path))  # victim.json records the chosen params, and the model has them
    assert again.params_ == again.config.params == again.facts["config"]["params"] == best["params"]
    from attacks.victims.conventional import Oversampled

    assert isinstance(victim.model_, Oversampled)
    model = Oversampled(Recorder(), 0.25, 0).fit(["x"] * 44, np.array([0] * 40 + [1] * 4))
    assert np.bincount(model.estimator_.seen_).tolist() == [40, 10]  # the minority raised to a quarter
    balanced = Oversampled(Recorder(), 0.25, 0).fit(["x"] * 20, np.array([0] * 12 + [1] * 8))
    assert np.bincount(balanced.estimator_.seen_).tolist() == [12, 8]  # nothing to raise


def test_settings_are_checked_by_name():
    with pytest.raises(ValueError, match="unknown victim 'tfidf-lrr'; did you mean 'tfidf-lr'"):
        make_victim("tfidf-lrr")
    with pytest.raises(ValueError, match="conventional training: unknown parameter 'gird'; did you mean 'grid'"):
        make_victim("tfidf-lr", training={"gird": True})
    with pytest.raises(ValueError, match="'C' must be a number > 0, got -1"):
        make_victim("tfidf-lr", {"params": {"C": -1}})
    with pytest.raises(ValueError, match="emb-nb: naive Bayes needs counts"):
        ConventionalVictim({"features": "emb", "classifier": "nb", "vectors": VECTORS})
    with pytest.raises(ValueError, match="need a word-vectors file"):
        make_victim("emb-lr")
    with pytest.raises(ValueError, match="bert training: 'lr' must be a number > 0"):
        make_victim("bert", {"backbone": "x"}, {"lr": 0})


def test_a_tampered_victim_does_not_load(split, tmp_path):
    import skops.io

    train, _, _ = split
    victim = make_victim("tfidf-lr").fit(train)
    victim.save(str(tmp_path))
    model = tmp_path / "model.skops"
    data = bytearray(model.read_bytes())
    data[len(data) // 2] ^= 1
    model.write_bytes(bytes(data))
    with pytest.raises(VictimError, match="changed after the victim was saved"):
        load_victim(str(tmp_path))
    # A file holding code to run, its hash updated to match: refused by the trusted-types list.
    skops.io.dump({"model": os.system}, str(model))
    meta = json.loads((tmp_path / "victim.json").read_text())
    from attacks.victims.base import sha256

    meta["files"]["model.skops"] = sha256(str(model))
    (tmp_path / "victim.json").write_text(json.dumps(meta))
    with pytest.raises(VictimError, match="not a conventional victim's: .*system"):
        load_victim(str(tmp_path))
    (tmp_path / "victim.json").write_text("{not json")
    with pytest.raises(VictimError, match="not valid JSON"):
        load_victim(str(tmp_path))
    with pytest.raises(VictimError, match="no victim.json"):
        load_victim(str(tmp_path / ".."))


# ---- torch victims ----

def torch_victim(name: str, backbone: str):
    extra = {"glyph_size": 16, "glyph_dim": 16, "pinyin_dim": 8} if name == "chinesebert" else {}
    return make_victim(name, {"backbone": backbone, "max_length": 48, **extra},
                       {"epochs": 2, "lr": 1e-3, "batch_size": 16, "patience": 2})


def check_differentiable(victim, some_texts):
    import torch

    embedded = victim.embed(some_texts)
    probs = torch.softmax(victim.logits(embedded), -1).detach().numpy()
    np.testing.assert_allclose(probs, victim.predict_proba(some_texts), atol=1e-6)  # what predict_proba uses
    embeds = embedded.embeds.detach().requires_grad_(True)
    logits = victim.logits(embedded.perturbed(embeds - embedded.embeds.detach()))
    torch.nn.functional.cross_entropy(logits, torch.ones(len(some_texts), dtype=torch.long)).backward()
    assert torch.isfinite(embeds.grad).all() and embeds.grad.abs().sum() > 0
    assert embeds.grad[0].abs().sum() > 0 and embeds.grad[1].abs().sum() > 0  # each example its own delta
    # the search's gradient importance: one span a model position, one value a character
    spans, saliency = victim.token_spans(some_texts), victim.saliency(some_texts, [1] * len(some_texts))
    assert [len(s) for s in spans] == embedded.mask.sum(1).tolist()
    for text, token_spans, chars in zip(some_texts, spans, saliency):
        covered = {i for span in token_spans if span for i in range(*span)}
        assert chars.shape == (len(text),) and {int(i) for i in np.flatnonzero(chars)} == covered


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bert", "chinesebert"])
def test_torch_victims_train_through_the_loop_save_reload_and_differentiate(name, split, backbone, tmp_path):
    train, dev, test = split
    victim = torch_victim(name, backbone)
    victim.fit(train, dev, out_dir=str(tmp_path), progress=False)
    log = json.loads((tmp_path / "log.json").read_text())
    assert len(log) == 2 and all("dev_f1" in e for e in log) and victim.log_["best_epoch"] in (1, 2)
    probs = victim.predict_proba(texts(test))
    assert probs.shape == (len(test), 2) and np.allclose(probs.sum(1), 1)
    again = load_victim(str(tmp_path))
    np.testing.assert_array_equal(again.predict_proba(texts(test)), probs)
    check_differentiable(again, texts(test)[:4])
    # batched by length, answered in the order asked: each post as it scores alone
    mixed = [texts(test)[0][:3], texts(test)[1] * 3, texts(test)[2], texts(test)[0][:3]]
    alone = np.concatenate([again.predict_proba([t]) for t in mixed])
    np.testing.assert_allclose(again.predict_proba(mixed), alone, atol=1e-6)
    long_post = "黑人都是垃圾，" * 150_000  # head and tail kept, the middle never tokenised
    assert again.predict_proba([long_post, "短"]).shape == (2, 2)
    weights = tmp_path / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 1  # one bit of one weight
    weights.write_bytes(bytes(data))
    with pytest.raises(VictimError, match="changed after the victim was saved"):
        load_victim(str(tmp_path))


def test_chinesebert_starts_from_the_encoders_own_embeddings():
    """The fusion of character, glyph and pinyin starts as the identity on the character embeddings: a random
    one threw away what a pretrained encoder knows (on e5, 2,000 posts: chinesebert 0.560 macro-F1, bert 0.757;
    bench/chinesebert_small.py)."""
    import torch
    from transformers import BertConfig, BertModel

    from attacks.victims.chinesebert import ChineseBertModel

    torch.manual_seed(0)
    bert = BertModel(BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=32))
    model = ChineseBertModel(bert, 2, glyph_size=8, glyph_dim=4, pinyin_dim=4)
    model.glyphs.random_(0, 256)  # glyphs and pinyin there: the fusion weighs them 0 to start with
    model.pinyin.random_(1, 30)
    ids = torch.tensor([[2, 7, 30, 3], [2, 9, 3, 0]])
    torch.testing.assert_close(model.fused_embeddings(ids), bert.get_input_embeddings()(ids))


def test_head_and_tail_are_kept():
    from attacks.victims.neural import head_tail

    assert head_tail(list(range(10)), 20, 0.25) == list(range(10))
    assert head_tail(list(range(1000)), 510, 128 / 510) == list(range(128)) + list(range(1000 - 382, 1000))


@pytest.mark.slow
def test_a_trained_mmbert_folder_is_a_victim(stages, data, tmp_path):
    victim = load_victim(stages[3])
    assert victim.kind == "mmbert" and victim.num_labels == 2
    rows = read_jsonl(data / "dev.jsonl")[:6]
    probs = victim.predict_proba(texts(rows))
    assert np.allclose(probs.sum(1), 1)
    from mmbert.inference import infer

    np.testing.assert_allclose(probs, infer(victim.model_, victim.featurizer_, rows)["probs"], atol=1e-6)
    check_differentiable(victim, texts(rows)[:4])
    victim.save(str(tmp_path))
    np.testing.assert_array_equal(load_victim(str(tmp_path)).predict_proba(texts(rows)), probs)


# ---- the LLM endpoint ----

class FakeChat(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint: hate for 垃圾, not hate for 天气, nonsense otherwise; the first
    request for 'retry' fails with 503."""

    requests: list = []

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        text = body["messages"][0]["content"].rsplit("输入: ", 1)[-1]
        FakeChat.requests.append({"text": text, "auth": self.headers.get("Authorization"), "model": body["model"]})
        if "retry" in text and sum("retry" in r["text"] for r in FakeChat.requests) == 1:
            self.send_response(503)
            self.end_headers()
            return
        answer = "仇恨言论" if "垃圾" in text else "非仇恨言论。" if "天气" in text else "我不确定"
        reply = json.dumps({"choices": [{"message": {"role": "assistant", "content": answer}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


@pytest.fixture
def endpoint():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeChat)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    FakeChat.requests = []
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_the_llm_victim_asks_retries_caches_and_never_guesses(endpoint, tmp_path, monkeypatch):
    monkeypatch.setenv("TEST_LLM_KEY", "sk-test")
    victim = make_victim("llm", {"endpoint": endpoint, "model": "fake-7b", "key_env": "TEST_LLM_KEY",
                                 "cache": str(tmp_path / "cache"), "retries": 2, "concurrency": 3})
    posts = ["黑人都是垃圾", "今天天气真好", "你好", "retry 垃圾", "黑人都是垃圾"]
    probs = victim.predict_proba(posts)
    np.testing.assert_array_equal(probs[[0, 1, 3, 4]], [[0, 1], [1, 0], [0, 1], [0, 1]])
    assert np.isnan(probs[2]).all() and victim.unparseable == 1
    assert victim.predict(posts).tolist() == [1, 0, -1, 1, 1]
    assert len(FakeChat.requests) == 5  # 4 distinct posts, one retried; the repeat is asked once
    assert {r["auth"] for r in FakeChat.requests} == {"Bearer sk-test"}
    victim.save(str(tmp_path / "v"))
    assert "sk-test" not in (tmp_path / "v" / "victim.json").read_text()
    again = load_victim(str(tmp_path / "v"))
    again.predict_proba(posts)
    assert len(FakeChat.requests) == 5  # every answer from the cache
    from attacks.victims.llm import parse_answer

    assert parse_answer("非仇恨言论", "zh") == 0 and parse_answer("`仇恨言论`", "zh") == 1
    assert parse_answer("仇恨言论或非仇恨言论", "zh") is None and parse_answer("Non-Hate Speech.", "en") == 0


def test_an_endpoint_that_refuses_fails_clearly(tmp_path):
    from attacks.victims.llm import EndpointError

    victim = make_victim("llm", {"endpoint": "http://127.0.0.1:9/v1", "cache": str(tmp_path), "retries": 0,
                                 "timeout": 2})
    with pytest.raises(EndpointError, match="failed 1 times"):
        victim.predict_proba(["你好"])


# ---- the command ----

def test_nested_samples_contain_the_smaller_ones():
    samples = nested_samples(100, [10, 30, 60], 3, seed=0)
    for r in range(3):
        assert set(samples[(10, r)]) < set(samples[(30, r)]) < set(samples[(60, r)])
    assert set(samples[(10, 0)]) != set(samples[(10, 1)])
    with pytest.raises(ValueError, match="more than the 100 training records"):
        nested_samples(100, [200], 1, 0)


def test_train_predict_and_curve_commands(sample_path, tmp_path):
    from attacks.cli import main

    rows = read_jsonl(sample_path)
    train, dev = tmp_path / "train.jsonl", tmp_path / "dev.jsonl"
    records(train, rows[:200])
    records(dev, rows[200:])
    runner = CliRunner()
    result = runner.invoke(main, ["train", "--model", "bow-lr", "--train", str(train), "--dev", str(dev), "--out",
                                  str(tmp_path / "v"), "--oversample", "--seed", "3"])
    assert result.exit_code == 0, result.output
    assert "bow-lr: trained on 200 posts" in result.stderr and "dev macro-F1" in result.stderr
    meta = json.loads((tmp_path / "v" / "victim.json").read_text())
    assert meta["training"]["oversample"] is True and meta["training"]["seed"] == 3
    result = runner.invoke(main, ["predict", "--victim", str(tmp_path / "v"), "--in", str(dev), "--out",
                                  str(tmp_path / "scored.jsonl")])
    assert result.exit_code == 0, result.output
    scored = read_jsonl(tmp_path / "scored.jsonl")
    assert len(scored) == 100 and scored[0]["victim"]["name"] == "bow-lr"
    (tmp_path / "bad.yaml").write_text("training: {gird: true}\n")
    result = runner.invoke(main, ["train", "--model", "bow-lr", "--train", str(train), "--out", str(tmp_path / "w"),
                                  "--config", str(tmp_path / "bad.yaml")])
    assert result.exit_code == 1 and "unknown parameter 'gird'; did you mean 'grid'?" in result.stderr
    out = tmp_path / "curve"
    args = ["curve", "--model", "tfidf-lr", "--train", str(train), "--test", str(dev), "--sizes", "50,100,200",
            "--repeats", "2", "--out", str(out)]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    curve = json.loads((out / "curve.json").read_text())
    assert [r["size"] for r in curve["by_size"]] == [50, 100, 200] and len(curve["runs"]) == 6
    assert (out / "curve.png").read_bytes()[:4] == b"\x89PNG"
    # A rerun trains nothing it has: runs.jsonl is the record of what is done.
    lines = (out / "runs.jsonl").read_text().splitlines()
    (out / "runs.jsonl").write_text("\n".join(lines[:4]) + "\n")
    result = runner.invoke(main, args)
    assert result.exit_code == 0 and result.stderr.count("repeat") == 2


@pytest.mark.slow
def test_mmbert_trains_as_a_victim_through_its_three_stages(run, data, tmp_path):
    victim = make_victim("mmbert", {"run": run})
    victim.fit(read_jsonl(data / "train.jsonl"), read_jsonl(data / "dev.jsonl"), out_dir=str(tmp_path), progress=False)
    assert victim.model_.config.stage == 3
    assert all((tmp_path / "stages" / f"s{s}" / "training.json").exists() for s in (1, 2, 3))
    victim.save(str(tmp_path / "victim"))
    rows = read_jsonl(data / "dev.jsonl")[:4]
    np.testing.assert_array_equal(load_victim(str(tmp_path / "victim")).predict_proba(texts(rows)),
                                  victim.predict_proba(texts(rows)))
