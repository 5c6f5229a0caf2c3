import json

import pytest

from cloak.io import AtomicWriter, RecordError, SkipLog, count_lines, read_records, write_records


def write_lines(path, lines: list[bytes]):
    path.write_bytes(b"\n".join(lines) + b"\n")
    return str(path)


@pytest.mark.parametrize("line, message", [
    (b'{"text": "ok"', "line 2: invalid JSON"),
    (b'["text"]', "line 2: expected a JSON object, got list"),
    (b'{"id": 1}', "line 2: field 'text': missing"),
    (b'{"text": 5}', "line 2: field 'text': must be a string, got int"),
    (b'{"text": "  "}', "line 2: field 'text': is empty"),
    ('{"text": "黑人"}'.encode("gbk"), "line 2: invalid UTF-8 at byte"),
])
def test_bad_lines_name_file_line_and_field(tmp_path, line, message):
    path = write_lines(tmp_path / "in.jsonl", [b'{"text": "fine"}', line])
    with pytest.raises(RecordError) as info:
        list(read_records(path))
    assert str(info.value).startswith(path + ", line 2")
    assert message in str(info.value)
    assert info.value.line == 2


def test_skip_counts_what_it_skipped(tmp_path):
    path = write_lines(tmp_path / "in.jsonl", [b'{"text": "a"}', b"oops", b"", b'{"text": ""}',
                                               b'{"text": "b", "extra": [1]}'])
    skipped = SkipLog()
    got = list(read_records(path, on_error="skip", skipped=skipped))
    assert [(n, r["text"]) for n, r in got] == [(1, "a"), (5, "b")]
    assert got[1][1]["extra"] == [1]
    assert skipped.count == 2 and "line 2" in skipped.examples[0]


def test_line_ranges_and_counting(tmp_path):
    path = write_lines(tmp_path / "in.jsonl", [json.dumps({"text": str(i)}).encode() for i in range(10)])
    assert count_lines(path) == 10
    assert [n for n, _ in read_records(path, start=3, stop=6)] == [4, 5, 6]
    (tmp_path / "no_newline.jsonl").write_bytes(b'{"text": "a"}\n{"text": "b"}')
    assert count_lines(str(tmp_path / "no_newline.jsonl")) == 2


def test_missing_input_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="input file not found"):
        list(read_records(str(tmp_path / "nope.jsonl")))


def test_writer_is_atomic(tmp_path):
    out = tmp_path / "out.jsonl"
    with pytest.raises(KeyboardInterrupt):
        with AtomicWriter(str(out)) as w:
            w.write(b'{"text": "a"}\n')
            raise KeyboardInterrupt
    assert not out.exists()
    assert write_records(str(out), [{"text": "黑人"}]) == 1
    assert out.read_text(encoding="utf-8") == '{"text": "黑人"}\n'
    assert not (tmp_path / "out.jsonl.partial").exists()


def test_writer_resumes_from_its_checkpoint(tmp_path):
    out = str(tmp_path / "out.jsonl")
    with pytest.raises(KeyboardInterrupt):
        with AtomicWriter(out, fingerprint="f") as w:
            w.write(b"1\n")
            w.checkpoint({"line": 1})
            w.write(b"2-half")  # written after the checkpoint: dropped on resume
            raise KeyboardInterrupt
    with pytest.raises(ValueError, match="other options"):
        AtomicWriter(out, resume=True, fingerprint="g")
    with AtomicWriter(out, resume=True, fingerprint="f") as w:
        assert w.resumed_state == {"line": 1}
        w.write(b"2\n")
    assert open(out).read() == "1\n2\n"
