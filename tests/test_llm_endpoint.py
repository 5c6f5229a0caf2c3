"""The ``llm`` victim against a real HTTP server in another process (tests/chat_server.py, an
OpenAI-compatible endpoint that answers by a fixed rule): trained, saved, attacked by `attacks
evaluate` with cloaks, its unanswered posts counted, every answer cached, and a server that goes away
reported clearly."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from .conftest import read_jsonl

SERVER = Path(__file__).resolve().parent / "chat_server.py"


def rule(post: str) -> list[float] | None:
    """What tests/chat_server.py answers, as the victim's probabilities (None: no label)."""
    return None if "？？？" in post else [0.0, 1.0] if "垃圾" in post else [1.0, 0.0]


@pytest.fixture
def server(tmp_path):
    """(endpoint, log of the posts asked, process) of a chat server started for the test."""
    log = tmp_path / "asked.txt"
    process = subprocess.Popen([sys.executable, str(SERVER), "--port", "0", "--log", str(log)],
                               stdout=subprocess.PIPE, text=True)
    try:
        port = int(process.stdout.readline())  # printed once it listens
        yield f"http://127.0.0.1:{port}/v1", log, process
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_llm_victim_is_attacked_through_a_server_process(server, sample_path, tmp_path):
    from attacks.cli import main

    endpoint, log, process = server
    posts = ["黑人都是垃圾", "这些男人就是垃圾，滚回去", "女司机开车就是垃圾", "今天天气真好", "什么？？？",
             "？？？黑人都是垃圾"]
    rows = [{"id": f"p{i}", "text": t, "label": int("垃圾" in t)} for i, t in enumerate(posts)]
    rows += [{**r, "id": f"s{i}"} for i, r in enumerate(read_jsonl(sample_path)[:14])]
    data = tmp_path / "posts.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    (tmp_path / "llm.yaml").write_text(json.dumps({"config": {
        "endpoint": endpoint, "model": "tiny-chat", "key_env": "", "cache": str(tmp_path / "answers"),
        "concurrency": 2, "retries": 1, "timeout": 20}}))
    runner = CliRunner()
    result = runner.invoke(main, ["train", "--model", "llm", "--config", str(tmp_path / "llm.yaml"), "--train",
                                  str(data), "--out", str(tmp_path / "victim"), "-q"])
    assert result.exit_code == 0, result.output
    evaluate = ["evaluate", "--victim", str(tmp_path / "victim"), "--data", str(data), "--attacks", "cloak",
                "--ops", "homophone,emoji", "--targets", "lexicon", "--out", str(tmp_path / "eval"), "-q"]
    result = runner.invoke(main, evaluate)
    assert result.exit_code == 0, result.output
    asked = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    by_id = {r["id"]: r["text"] for r in rows}
    outcomes = {name: read_jsonl(tmp_path / "eval" / "victim" / f"{name}.jsonl")
                for name in ("clean", "cloak-homophone", "cloak-emoji")}
    for lines in outcomes.values():  # every answer came from the server process, by its rule
        assert len(lines) == len(rows)
        for line in lines:
            text = line.get("text", by_id[line["id"]])
            assert line["probs"] == rule(text) and text in asked
    assert sorted(set(asked)) == sorted(asked)  # each distinct post asked once, whatever the attack
    figures = json.loads((tmp_path / "eval" / "summary.json").read_text())["victims"]["victim"]
    assert figures["clean"]["unanswered"] == 2  # the two posts with ？？？: wrong, and out of the ranking
    homophone = figures["attacks"]["cloak:homophone"]
    broken = [o for o in outcomes["cloak-homophone"] if o["id"].startswith("p") and o["changed"]
              and o["probs"] == [1.0, 0.0]]
    assert broken  # 垃圾 written with a homophone: the rule, so the victim, no longer sees hate
    assert homophone["all"]["unanswered"] == 2 and homophone["drop"]["f1"] > 0
    # A rerun asks the server nothing: every answer is cached by (model, prompt, text).
    result = runner.invoke(main, [*evaluate[:-3], "--out", str(tmp_path / "eval-again"), "-q"])
    assert result.exit_code == 0, result.output
    assert len(log.read_text(encoding="utf-8").splitlines()) == len(asked)
    # The server gone, a post never asked fails with what went wrong, not a traceback.
    process.terminate()
    process.wait(timeout=30)
    data.write_text(json.dumps({"id": "new", "text": "从没问过的帖子", "label": 0}, ensure_ascii=False) + "\n")
    result = runner.invoke(main, [*evaluate[:-3], "--out", str(tmp_path / "eval-gone"), "-q"])
    assert result.exit_code == 1 and "failed 2 times" in result.stderr


def test_label_probabilities_read_the_first_label_token_even_in_pieces():
    import math

    from attacks.victims.llm import label_probabilities

    def token(piece: bytes, p: float) -> dict:
        return {"token": piece.decode("utf-8", "replace"), "bytes": list(piece), "logprob": math.log(p)}

    hate, benign = "仇".encode(), "非".encode()
    tokens = [{**token(b" `", 0.9), "top_logprobs": [token(b" `", 0.9)]},
              {**token(hate[:2], 0.7), "top_logprobs": [token(hate[:2], 0.7), token(benign, 0.2), token("我".encode(), 0.1)]}]
    assert label_probabilities(tokens, "zh") == pytest.approx((0.2, 0.7))
    english = [{**token(b"Non", 0.6), "top_logprobs": [token(b"Non", 0.6), token(b" Hate", 0.3), token(b"The", 0.1)]}]
    assert label_probabilities(english, "en") == pytest.approx((0.6, 0.3))
    assert label_probabilities([], "zh") == (0.0, 0.0)


def test_logprob_scoring_takes_its_threshold_from_validation_and_the_pinyin_prompt_reads_sound(server, tmp_path):
    from attacks import load_victim
    from attacks.victims.llm import LLMVictim

    endpoint, log, _ = server
    config = {"endpoint": endpoint, "model": "tiny-chat", "key_env": "", "cache": str(tmp_path / "answers"),
              "scoring": "logprob", "concurrency": 2, "retries": 1, "timeout": 20}
    validation = [{"id": str(i), "text": t, "label": y} for i, (t, y) in enumerate(
        [("黑人都是垃圾", 1), ("那些黑人滚出去", 1), ("黑人又来了", 1), ("今天天气真好", 0), ("我们去吃饭吧", 0)])]
    victim = LLMVictim(config).fit(validation)
    assert 0.1 < victim.threshold_ < 0.4  # 黑人 alone scores 0.4: hateful on this split, where 0.5 would miss it
    posts = ["黑人真多", "天气不错", "什么？？？"]
    proba = victim.predict_proba(posts)
    assert proba[0, 1] > 0.5 > proba[1, 1] and np.isnan(proba[2]).all()
    assert victim.predict(posts).tolist() == [1, 0, -1]
    assert LLMVictim({**config, "threshold": 0.5}).predict(posts).tolist() == [0, 0, -1]
    victim.save(str(tmp_path / "victim"))
    again = load_victim(str(tmp_path / "victim"))
    assert again.threshold_ == victim.threshold_ and again.predict(posts).tolist() == [1, 0, -1]
    # 拉机 sounds as 垃圾 (lā jī): the post alone reads benign, with its pinyin hateful
    homophone = ["黑人都是拉机"]
    plain, pinyin = (LLMVictim({**config, "prompt": prompt, "threshold": 0.5}) for prompt in ("appendix-b", "pinyin"))
    assert plain.predict(homophone).tolist() == [0] and pinyin.predict(homophone).tolist() == [1]
    asked = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert asked.count("黑人都是拉机") == 2  # once a prompt, each cached apart; the post itself, not its pinyin
    assert LLMVictim({**config, "threshold": 0.5}).scores(["黑人真多"]).tolist() == [pytest.approx(0.4)]
    assert len(log.read_text(encoding="utf-8").splitlines()) == len(asked)  # from the cache


def test_the_llm_detector_chooses_on_validation_and_reads_the_test_once(server, tmp_path, monkeypatch):
    import argparse
    import contextlib

    import bench.llm_detector as detector
    from bench.claim_protocol import load_protocol
    from bench.mmbert_data import TEST_SETS

    endpoint, _, _ = server
    posts = [("黑人都是垃圾", 1), ("黑人又来了", 1), ("那些黑人", 1), ("今天天气真好", 0), ("我们去吃饭吧", 0), ("他们都是拉机", 1)]
    (tmp_path / "data").mkdir()
    for split in ("validation", "test"):
        for name in TEST_SETS:
            rows = [{"id": str(i), "text": t, "label": y} for i, (t, y) in enumerate(posts)]
            (tmp_path / "data" / f"{split}_{name}.jsonl").write_text(
                "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    monkeypatch.setattr(detector, "serving", lambda *args: contextlib.nullcontext((endpoint, 0.0)))
    monkeypatch.setattr(detector, "ALIAS", "tiny-chat")  # the model the test server serves
    monkeypatch.setattr(detector, "OUTPUTS", {k: tmp_path / v.name for k, v in detector.OUTPUTS.items()})
    protocol = load_protocol(detector.REPO / "bench" / "protocols" / "mmbert_claim.yaml")
    args = argparse.Namespace(work=tmp_path, gguf=tmp_path / "x.gguf", port=0, threads=1)
    choice = detector.choose(protocol, args)
    assert set(choice["prompts"]) == {"appendix-b", "pinyin"}
    assert choice["chosen"] == "pinyin"  # it reads 拉机 as 垃圾: every validation post right
    assert choice["prompts"]["pinyin"]["pooled_macro_f1"] == 1.0 > choice["prompts"]["appendix-b"]["pooled_macro_f1"]
    (tmp_path / "llm_detector_validation.json").write_text(json.dumps(choice))
    monkeypatch.setattr(detector, "committed", lambda protocol: "c0ffee")
    result = detector.test(protocol, args)
    assert result["prompt"] == "pinyin" and result["macro_f1"]["clean"]["value"] == 1.0
    assert set(result["drop"]) == set(TEST_SETS) - {"clean"}
    (tmp_path / "llm_detector_test.json").write_text(json.dumps(result))
    with pytest.raises(SystemExit, match="read once"):
        detector.test(protocol, args)
