import json

import pytest

import os
import stat

from cloak.common.io import (AtomicWriter, RecordError, SkipLog, count_lines, parse_label, read_records, write_atomic,
                      write_records)


def write_lines(path, lines: list[bytes]):
    path.write_bytes(b"\n".join(lines) + b"\n")
    return str(path)


@pytest.mark.parametrize("line, message", [
    (b'{"text": "ok"', "line 2: invalid JSON"),
    (b'{"text": "unterminated}', "line 2: invalid JSON: Unterminated string starting at column 10"),  # not "at at"
    (b'["text"]', "line 2: expected a JSON object, got a list"),
    (b'{"id": 1}', "line 2: field 'text': missing"),
    (b'{"text": 5}', "line 2: field 'text': must be a string, got a number"),
    (b'{"text": null}', "line 2: field 'text': must be a string, got null"),
    (b'{"text": "  "}', "line 2: field 'text': is empty"),
    ('{"text": "\u200b\u200d\ufeff "}'.encode(), "line 2: field 'text': is empty: only invisible characters"),
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


def test_a_byte_order_mark_and_crlf_line_ends_are_read(tmp_path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"text": "\xe9\xbb\x91\xe4\xba\xba"}\r\n{"text": "b"}\r\n')
    assert [r["text"] for _, r in read_records(str(path))] == ["黑人", "b"]


@pytest.mark.parametrize("content", [b"", b"\n\n  \n", b"\xef\xbb\xbf\n"])
def test_a_file_with_no_records_is_an_error(tmp_path, content):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(content)
    with pytest.raises(RecordError, match=r"empty.jsonl: no records: the file is empty"):
        list(read_records(str(path)))
    assert list(read_records(str(path), start=0, stop=0)) == []  # an empty range of lines is not


@pytest.mark.parametrize("value, label", [(0, 0), (3, 3), (1.0, 1), ("1", 1), (" 2 ", 2), ("1.0", 1)])
def test_labels_that_are_non_negative_integers(value, label):
    assert parse_label(value) == label


@pytest.mark.parametrize("value", ["yes", -1, "-1", "inf", float("inf"), float("nan"), 0.7, "0.7", True, None, [1]])
def test_labels_that_are_not(value, tmp_path):
    with pytest.raises(ValueError, match="must be a non-negative integer"):
        parse_label(value)
    path = tmp_path / "labels.jsonl"
    path.write_text('{"text": "a", "label": 1}\n' + json.dumps({"text": "b", "label": value}) + "\n")
    with pytest.raises(RecordError, match="line 2: field 'label': must be a non-negative integer"):
        list(read_records(str(path), labels=True))


def test_duplicate_ids_are_refused_where_outputs_are_keyed_by_id(tmp_path):
    path = write_lines(tmp_path / "in.jsonl", [
        b'{"id": "a", "text": "x"}', b'{"id": "a", "text": "x2", "cloak": {"variant": 0}}',  # a clean post and its cloak
        b'{"id": "a", "text": "x3", "cloak": {"variant": 1}}', b'{"id": 1, "text": "y"}', b'{"id": "1", "text": "z"}',
        b'{"text": "no id"}', b'{"text": "no id either"}', b'{"id": "a", "text": "again"}'])
    assert len(list(read_records(path))) == 8  # not checked unless asked
    with pytest.raises(RecordError, match="line 8: field 'id': duplicate id 'a', first seen on line 1"):
        list(read_records(path, unique_ids=True))


def test_missing_input_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="input file not found"):
        list(read_records(str(tmp_path / "nope.jsonl")))


def test_a_write_that_fails_names_the_file_asked_for_not_its_temporary_file(tmp_path):
    """An error showed '…/terms.tsv.d7w4pbvw.tmp', a name the user never gave."""
    (tmp_path / "terms.tsv").mkdir()
    long_name = "t" * 250 + ".tsv"  # a name the file system takes, but not with a temporary suffix
    for target in (tmp_path / "terms.tsv", tmp_path / long_name):
        try:
            write_atomic(target, b"x\n")
        except OSError as e:
            assert ".tmp" not in str(e) and str(target) in str(e), e
    assert (tmp_path / long_name).read_bytes() == b"x\n"
    assert sorted(os.listdir(tmp_path)) == sorted(["terms.tsv", long_name])


def test_writer_is_atomic(tmp_path):
    out = tmp_path / "out.jsonl"
    with pytest.raises(KeyboardInterrupt):
        with AtomicWriter(str(out)) as w:
            w.write(b'{"text": "a"}\n')
            raise KeyboardInterrupt
    assert not out.exists() and not (tmp_path / "out.jsonl.partial").exists()  # nothing can resume it
    assert write_records(str(out), [{"text": "黑人"}]) == 1
    assert out.read_text(encoding="utf-8") == '{"text": "黑人"}\n'
    assert not (tmp_path / "out.jsonl.partial").exists()


def test_an_interrupted_run_is_not_thrown_away_unasked(tmp_path):
    """Rerunning an interrupted `cloak perturb` without --resume restarted from line 0 (a .partial of 68,353
    lines, 81 MB): now it says so and asks for --resume or --overwrite."""
    out = str(tmp_path / "out.jsonl")
    with pytest.raises(KeyboardInterrupt):
        with AtomicWriter(out, fingerprint="f", resumable=True) as w:
            w.write(b"1\n" * 3)
            w.checkpoint({"line": 3})
            w.write(b"2-half")  # after the checkpoint: not counted, as a resume drops it
            raise KeyboardInterrupt
    kept = (tmp_path / "out.jsonl.partial").read_bytes()
    with pytest.raises(ValueError, match=r"out.jsonl.partial holds 3 lines \(0.0 MB\) of an interrupted run: rerun "
                                         "with --resume to continue it, or --overwrite to start over"):
        AtomicWriter(out, fingerprint="other", resumable=True)
    assert (tmp_path / "out.jsonl.partial").read_bytes() == kept
    with AtomicWriter(out, fingerprint="f", resumable=True, overwrite=True) as w:
        w.write(b"9\n")
    assert os.listdir(tmp_path) == ["out.jsonl"] and (tmp_path / "out.jsonl").read_bytes() == b"9\n"


def test_writer_resumes_from_its_checkpoint(tmp_path):
    out = str(tmp_path / "out.jsonl")
    with pytest.raises(ValueError):  # a failure that is not an interruption leaves nothing to resume
        with AtomicWriter(out, fingerprint="f", resumable=True) as w:
            w.write(b"1\n")
            w.checkpoint({"line": 1})
            raise ValueError("bad line")
    assert os.listdir(tmp_path) == []
    with pytest.raises(KeyboardInterrupt):
        with AtomicWriter(out, fingerprint="f", resumable=True) as w:
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


def test_files_are_written_with_the_usual_permissions(tmp_path):
    """As any file the user creates (0644 under the usual umask), not private as mkstemp makes them."""
    (tmp_path / "plain").write_bytes(b"")
    write_atomic(tmp_path / "a.json", b"{}")
    write_records(str(tmp_path / "b.jsonl"), [{"text": "x"}])
    modes = {name: stat.S_IMODE(os.stat(tmp_path / name).st_mode) for name in ("plain", "a.json", "b.jsonl")}
    assert len(set(modes.values())) == 1 and modes["plain"] & 0o044, modes


def test_the_cache_key_follows_every_module_of_cloak(tmp_path, monkeypatch):
    """A table cached on disk is built again when any code of the cloak package changes (the sound classes of
    cloak.unveil.sound, say), not only cloak.common's: a stale table keyed by old classes read nothing back."""
    import shutil
    from pathlib import Path

    import cloak
    from cloak.common import cache

    copy = tmp_path / "cloak"
    shutil.copytree(Path(cloak.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__", "*.gz"))
    monkeypatch.setattr(cache, "__file__", str(copy / "common" / "cache.py"))
    key = cache._code_key.__wrapped__()
    (copy / "unveil" / "sound.py").write_text((copy / "unveil" / "sound.py").read_text() + "\n# changed\n")
    assert cache._code_key.__wrapped__() != key
