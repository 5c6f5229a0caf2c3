"""The README's Python examples run as written: none uses a name it does not define or import, and every one
that needs only the bundled samples and a trained detector runs, in turn, as a user runs them."""
from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from pyflakes.api import check
from pyflakes.reporter import Reporter

ROOT = Path(__file__).resolve().parent.parent
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
# What a test cannot give an example: real weights, a Ray cluster, a pre-trained backbone or stage folder,
# a HABERTOR pre-training (minutes). Those examples are checked for names only.
NEEDS = ("weights/", "HEAD:6379", "backbone/", "habertor-lm/", "s3/")


def _undefined(block: str, name: str) -> list[str]:
    out, err = io.StringIO(), io.StringIO()
    check(block, name, Reporter(out, err))
    return [line for line in out.getvalue().splitlines() + err.getvalue().splitlines()
            if "undefined name" in line or "syntax" in line.lower() or "invalid" in line.lower()]


def test_no_readme_example_uses_a_name_it_does_not_define():
    assert len(BLOCKS) >= 10
    problems = [p for i, block in enumerate(BLOCKS) for p in _undefined(block, f"README python block {i + 1}")]
    assert not problems, "\n".join(problems)


def test_the_check_sees_an_undefined_name():
    assert _undefined("texts = texts + ['a']\n", "block") != []


@pytest.fixture
def readme_folder(tmp_path, monkeypatch, backbone, sample_path):
    """The repository's samples, and victims/bert as `attacks train --model bert` saves one (a tiny one)."""
    from attacks import make_victim

    from .conftest import read_jsonl

    (tmp_path / "samples").symlink_to(ROOT / "samples")
    rows = read_jsonl(sample_path)
    make_victim("bert", {"backbone": backbone, "max_length": 48}, {"epochs": 1, "batch_size": 16}).fit(
        rows[:60], progress=False).save(str(tmp_path / "victims" / "bert"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # the glyph example caches under ~/.cache
    return tmp_path


def test_the_readme_examples_run_in_turn(readme_folder):
    runnable = [(i, b) for i, b in enumerate(BLOCKS) if not any(need in b for need in NEEDS)]
    assert len(runnable) >= 6
    for i, block in runnable:
        exec(compile(block, f"README python block {i + 1}", "exec"), {"__name__": "__readme__"})
    assert (readme_folder / "victims" / "tfidf-lr" / "victim.json").is_file()
    assert (readme_folder / "report" / "report.html").is_file()
