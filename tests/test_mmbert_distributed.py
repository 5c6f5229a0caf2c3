"""Two CPU processes (DDP over gloo) run the same trainer as one: what ``accelerate launch`` does on GPUs."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("accelerate")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(*args) -> subprocess.CompletedProcess:
    # torchrun starts the processes; Accelerate (told to use the CPU) then runs DDP over gloo.
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
               "--master_port", str(free_port()), "-m", "mmbert.cli", *map(str, args)]
    env = {**os.environ, "ACCELERATE_USE_CPU": "true"}  # what `accelerate launch --cpu` sets
    return subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)


@pytest.mark.slow
def test_two_processes_pretrain_and_train_every_stage(data, tiny_whisper, tmp_path):
    from mmbert import MMBertForSequenceClassification

    result = launch("pretrain", "--corpus", data / "train.jsonl", "--config", "tiny", "--out", tmp_path / "bert", "-q")
    assert result.returncode == 0, result.stderr[-3000:]
    common = ["--config", "tiny", "--train", data / "train.jsonl", "--dev", data / "dev.jsonl",
              "--whisper", tiny_whisper, "--speech-cache", tmp_path / "speech", "-q"]
    previous = ["--from", tmp_path / "bert"]
    for stage in (1, 2, 3):
        out = tmp_path / f"s{stage}"
        result = launch("train", "--stage", stage, *common, "--out", out, *previous)
        assert result.returncode == 0, result.stderr[-3000:]
        log = json.loads((out / "log.json").read_text())
        assert log and log[-1]["epoch"] >= 1
        assert not (out / "checkpoint").exists()
        assert json.loads((out / "training.json").read_text())["processes"] == 2
        previous = ["--from", out]
    model = MMBertForSequenceClassification.from_pretrained(tmp_path / "s3")
    assert model.config.stage == 3 and model.config.vision_encoder == "table"
