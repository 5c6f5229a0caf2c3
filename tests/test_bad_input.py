"""Bad input, for every command that reads records: each bad file ends in a one-line message naming
file, line and field, with exit code 1, no traceback and nothing half-written; input that is odd but
valid (a byte-order mark, CRLF, only emoji, a 1 MB post, a label the command does not read) works.

The commands run in this process (click's runner), so that torch loads once for all of them.
"""
from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from cloak.cli import main as cloak_main

BIG = "黑人都是垃圾，" * (1_000_000 // 7)  # a 1 MB post (of characters)
GOOD = {"id": "good", "text": "今天天气很好", "label": 1}

# case -> (the second line's record, or raw bytes for the whole file; the field named on failure)
CASES: dict[str, tuple[object, str | None]] = {
    "missing": (None, None),
    "empty": (b"", None),
    "invalid-utf8": (b'{"id": "good", "text": "ok", "label": 1}\n{"id": "x", "text": "' + "黑人".encode("gbk")
                     + b'", "label": 0}\n', None),
    "bom": (b"\xef\xbb\xbf" + json.dumps(GOOD).encode() + b'\n{"id": "b", "text": "\xe5\xa5\xbd", "label": 0}\n', None),
    "crlf": (json.dumps(GOOD).encode() + b'\r\n{"id": "b", "text": "\xe5\xa5\xbd", "label": 0}\r\n', None),
    "array": ([1, 2], None),
    "text-number": ({"id": "x", "text": 5, "label": 0}, "text"),
    "text-null": ({"id": "x", "text": None, "label": 0}, "text"),
    "text-empty": ({"id": "x", "text": "", "label": 0}, "text"),
    "text-whitespace": ({"id": "x", "text": " \t ", "label": 0}, "text"),
    "text-emoji": ({"id": "x", "text": "🐶🐷🐒", "label": 0}, None),
    "text-zero-width": ({"id": "x", "text": "\u200b\u200d\u2060", "label": 0}, "text"),
    "post-1mb": ({"id": "x", "text": BIG, "label": 0}, None),
    "label-yes": ({"id": "x", "text": "白人", "label": "yes"}, "label"),
    "label-minus-1": ({"id": "x", "text": "白人", "label": -1}, "label"),
    "label-inf": ({"id": "x", "text": "白人", "label": "inf"}, "label"),
    "label-0.7": ({"id": "x", "text": "白人", "label": 0.7}, "label"),
    "duplicate-id": ({"id": "good", "text": "白人", "label": 0}, "id"),
}
VALID = {"bom", "crlf", "text-emoji", "post-1mb"}
LABELS = {c for c in CASES if c.startswith("label-")}


def write_case(case: str, path) -> None:
    content, _ = CASES[case]
    if content is None:
        return
    if isinstance(content, bytes):
        path.write_bytes(content)
        return
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps(content, ensure_ascii=False) + "\n", encoding="utf-8")


def write_csv_case(case: str, path) -> bool:
    """The case as a CSV for `cloak convert --from csv`; False where CSV cannot say it (every cell
    is a string: no arrays, numbers or nulls; no ids)."""
    content, _ = CASES[case]
    if content is None:
        return True
    if case in ("array", "text-number", "text-null", "duplicate-id"):
        return False
    if isinstance(content, bytes):
        text = {"invalid-utf8": b"text,label\nok,1\n" + "黑人".encode("gbk") + b",0\n", "empty": b"",
                "bom": "\ufefftext,label\nok,1\n好,0\n".encode(), "crlf": b"text,label\r\nok,1\r\nb,0\r\n"}[case]
        path.write_bytes(text)
        return True
    label = {"label-inf": "inf", "label-yes": "yes"}.get(case, content["label"])
    path.write_text(f'text,label\nok,1\n"{content["text"]}",{label}\n', encoding="utf-8")
    return True


# Which commands read labels (attacks predict: where a record has one, checked against the victim's); which key
# their output by id.
READS_LABELS = {"mmbert train", "mmbert evaluate", "cloak convert", "attacks train", "attacks predict"}
KEYS_BY_ID = {"cloak render", "cloak speak", "cloak synth", "mmbert evaluate", "mmbert predict", "mmbert routing",
              "attacks predict"}


def expected_to_work(command: str, case: str) -> bool:
    if case in VALID:
        return True
    if case in LABELS:
        return command not in READS_LABELS
    if case == "duplicate-id":
        return command not in KEYS_BY_ID
    return False


def run(main, args) -> tuple[int, str, BaseException | None]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    unexpected = result.exception if not isinstance(result.exception, SystemExit) else None
    return result.exit_code, result.stderr, unexpected


@pytest.fixture(scope="module")
def mmbert_main():
    pytest.importorskip("torch")
    from mmbert.cli import main

    return main


@pytest.fixture(scope="module")
def fonts():
    from render import FontNotFoundError, find_cjk_font

    try:
        find_cjk_font()
    except FontNotFoundError:
        if os.environ.get("CI"):
            raise
        pytest.skip("no CJK font installed")


COMMANDS = ["cloak perturb", "cloak convert", "cloak render", "cloak speak", "cloak synth", "mmbert train",
            "mmbert evaluate", "mmbert predict", "mmbert routing", "attacks train", "attacks predict"]


@pytest.fixture(scope="module")
def min_df_1(tmp_path_factory):
    path = tmp_path_factory.mktemp("config") / "min_df_1.yaml"
    path.write_text("config: {min_df: 1}\n")
    return path


@pytest.fixture(scope="module")
def tfidf_victim(tmp_path_factory, sample_path):
    """A conventional victim trained on the bundled sample."""
    from attacks import make_victim
    from tests.conftest import read_jsonl

    folder = tmp_path_factory.mktemp("victim")
    make_victim("tfidf-lr").fit(read_jsonl(sample_path)).save(str(folder))
    return folder


def arguments(command: str, path, out, request) -> list:
    """The command line that reads ``path`` and writes under ``out``."""
    if command == "cloak perturb":
        return ["perturb", "--in", path, "--out", out / "out.jsonl", "--ops", "homophone,emoji"]
    if command == "cloak convert":
        return ["convert", "--from", "csv", "--in", path, "--out", out / "out.jsonl"]
    if command == "cloak render":
        request.getfixturevalue("fonts")
        return ["render", "--in", path, "--out", out / "glyphs", "--size", 16]
    if command == "cloak speak":
        return ["speak", "--in", path, "--out", out / "speech"]
    if command == "cloak synth":
        return ["synth", "--in", path, "--speech-out", out / "speech", "--whisper",
                request.getfixturevalue("tiny_whisper")]
    if command == "attacks train":  # two posts: every character n-gram counts (min_df 1)
        return ["train", "--model", "tfidf-lr", "--train", path, "--out", out / "victim", "--config",
                request.getfixturevalue("min_df_1")]
    if command == "attacks predict":
        return ["predict", "--victim", request.getfixturevalue("tfidf_victim"), "--in", path, "--out",
                out / "scored.jsonl"]
    data, stages = request.getfixturevalue("data"), request.getfixturevalue("stages")
    if command == "mmbert train":
        return ["train", "--stage", 1, "--config", "tiny", "--train", path, "--dev", data / "dev.jsonl", "--out",
                out / "s1", "--whisper", request.getfixturevalue("tiny_whisper"), "--speech-cache",
                out.parent / "speech", "-q"]
    if command == "mmbert evaluate":
        return ["evaluate", "--model", stages[3], "--data", path, "--out", out / "eval.json", "-q"]
    if command == "mmbert predict":
        return ["predict", "--model", stages[3], "--in", path, "--out", out / "scored.jsonl", "-q"]
    return ["routing", "--model", stages[3], "--data", path, "--out", out / "routing", "-q"]


@pytest.mark.parametrize("case", list(CASES))
# mmbert's commands need a trained tiny MMBERT (the `stages` fixture, or a stage trained in the test)
@pytest.mark.parametrize("command", [pytest.param(c, marks=pytest.mark.slow) if c.startswith("mmbert") else c
                                     for c in COMMANDS])
def test_bad_input(command, case, tmp_path, request):
    folder = tmp_path / "work"
    folder.mkdir()
    path = folder / ("in.csv" if command == "cloak convert" else "in.jsonl")
    if command == "cloak convert":
        if not write_csv_case(case, path):
            pytest.skip("CSV cells are strings: the case cannot be written as CSV")
    else:
        write_case(case, path)
    before = sorted(os.listdir(folder))
    if command.startswith("cloak"):
        main = cloak_main
    elif command.startswith("attacks"):
        from attacks.cli import main
    else:
        main = request.getfixturevalue("mmbert_main")
    code, stderr, unexpected = run(main, arguments(command, path, folder, request))
    assert unexpected is None, f"{command} raised {unexpected!r}"
    assert "Traceback" not in stderr
    if expected_to_work(command, case):
        assert code == 0, stderr
        return
    assert code == 1, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    message = lines[0]
    assert str(path) in message
    _, field = CASES[case]
    if case == "missing":
        assert "not found" in message
    elif case == "empty":
        assert "no records: the file is empty" in message
    else:
        line = 3 if command == "cloak convert" else 2  # a CSV's first line is its header
        assert f", line {line}" in message, message
        if field:
            assert f"field '{field}'" in message, message
    assert sorted(os.listdir(folder)) == before, "a failed run left output behind"
