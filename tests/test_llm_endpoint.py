"""The ``llm`` victim against a real HTTP server in another process (tests/chat_server.py, an
OpenAI-compatible endpoint that answers by a fixed rule): trained, saved, attacked by `attacks
evaluate` with cloaks, its unanswered posts counted, every answer cached, and a server that goes away
reported clearly."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
