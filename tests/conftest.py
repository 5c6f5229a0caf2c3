import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "cold" / "cold_test_300.jsonl"
DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def sample_path() -> Path:
    return SAMPLE


@pytest.fixture(scope="session")
def sample_texts() -> list[str]:
    with open(SAMPLE, encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


def read_jsonl(path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
