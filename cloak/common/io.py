"""Records in JSON Lines: streaming reader with validation, atomic and resumable writer.

A record is one JSON object a line, UTF-8 (a byte-order mark and CRLF line ends are accepted), with
at least a ``text`` that is a string with something visible in it; every other field is carried through
untouched. A ``label``, where one is needed, is a non-negative integer. Bad lines raise ``RecordError``
naming file, line and field — or, with ``on_error="skip"``, are counted and reported instead; a file
with no records at all is an error too.

Output goes to ``OUT.partial`` and is renamed to ``OUT`` only when complete, so a failed run never
leaves a half-written output. A resumable writer (``cloak perturb``) keeps the partial file after an
interruption, with a checkpoint beside it (``OUT.partial.ckpt``) from which ``--resume`` carries on;
after any other failure the partial file is removed.
"""
from __future__ import annotations

import codecs
import contextlib
import hashlib
import json
import math
import os
import sys
import tempfile
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO, TypeVar

T = TypeVar("T")

ON_ERROR = ("fail", "skip")
PARTIAL, CHECKPOINT = ".partial", ".ckpt"  # OUT is written as OUT.partial, its checkpoint OUT.partial.ckpt

# Files are created as the user's umask says (mkstemp alone would make them private).
_UMASK = os.umask(0)
os.umask(_UMASK)


class RecordError(ValueError):
    """A line that is not a valid record (or a file with none): says where and what. ``item``
    places it in a file that is one JSON list (ToxiCN's), where lines mean little."""

    def __init__(self, path: str, line: int | None, message: str, field: str | None = None,
                 item: int | None = None) -> None:
        self.path, self.line, self.field, self.message, self.item = path, line, field, message, item
        where = path + (f", line {line}" if line is not None else "") + (f", item {item}" if item is not None else "") \
            + (f": field '{field}'" if field else "")
        super().__init__(f"{where}: {message}")


def empty_input(path: str) -> RecordError:
    return RecordError(path, None, "no records: the file is empty")


_JSON_TYPES = {int: "a number", float: "a number", bool: "true/false", type(None): "null", list: "a list",
               dict: "an object"}


def json_type(value: object) -> str:
    """What a JSON value is, in JSON's words: ``null`` rather than ``NoneType``."""
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _invisible(ch: str) -> bool:
    return ch.isspace() or unicodedata.category(ch) in ("Cf", "Cc") or "\ufe00" <= ch <= "\ufe0f"


def is_blank(text: str) -> bool:
    """True for a text that shows nothing: only whitespace, control and format characters (zero-width
    spaces and joiners, bidi marks) and variation selectors."""
    return all(_invisible(ch) for ch in text)


def parse_label(value: object) -> int:
    """A label as an int: a non-negative integer, or a number or string that is one (``1``, ``1.0``,
    ``"1"``); anything else (``-1``, ``0.7``, ``inf``, ``"yes"``, true) is a ValueError."""
    number = value
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if (isinstance(number, (int, float)) and not isinstance(number, bool) and math.isfinite(number)
            and number >= 0 and number == int(number)):
        return int(number)
    raise ValueError(f"must be a non-negative integer (0, 1, ...), got {value!r}")


def known_labels(numbered: Iterable[tuple[int, dict]], num_labels: int, path: str,
                 who: str) -> Iterator[tuple[int, dict]]:
    """``(line, record)`` pairs, as :func:`read_records` yields them, passed on as they are read, but the first
    whose label ``who`` (a model of labels 0 .. ``num_labels`` - 1) does not know is a RecordError naming its
    line: no figure may count a class the model cannot answer. Records without a label pass."""
    for line, record in numbered:
        if "label" in record:
            try:
                label = parse_label(record["label"])
            except ValueError as e:
                raise RecordError(path, line, str(e), "label") from None
            if label >= num_labels:
                raise RecordError(path, line, f"{record['label']}, but {who} knows labels "
                                  + ", ".join(map(str, range(num_labels))), "label")
        yield line, record


# Every figure takes label 0 as the clean class: what labels 0 and 1 are called where no name is given.
DEFAULT_LABEL_NAMES = {0: "non-offensive", 1: "offensive"}


def label_name(label: int | str, names: dict | None = None) -> str:
    """What ``label`` is called in a message or report: ``names[label]`` (keys int or str), else
    non-offensive / offensive for 0 and 1, else "offensive (label k)"; never a bare "label 1"."""
    names = {str(k): v for k, v in (names or {}).items()}
    return names.get(str(label)) or DEFAULT_LABEL_NAMES.get(int(label), f"offensive (label {label})")


@dataclass
class SkipLog:
    """What ``on_error="skip"`` skipped."""

    count: int = 0
    examples: list[str] = field(default_factory=list)
    last_line: int = 0  # lines up to here are counted already (a resumed run reads them again)

    def add(self, error: RecordError) -> None:
        if error.line <= self.last_line:
            return
        self.last_line = error.line
        self.count += 1
        if len(self.examples) < 5:
            self.examples.append(str(error))


def _check_input(path: str) -> None:
    if not os.path.exists(path):
        raise FileNotFoundError(f"input file not found: {path}")
    if os.path.isdir(path):
        raise IsADirectoryError(f"input is a directory, not a JSONL file: {path}")


def check_files(inputs: Iterable[str] = (), outputs: Iterable[str] = ()) -> None:
    """Fail now, before slow work, if an input is missing or has no records, or an output cannot be written
    (:func:`check_output`). ``-`` is standard input / output and always fine."""
    inputs, outputs = [p for p in inputs if p != "-"], [p for p in outputs if p != "-"]
    for path in inputs:
        _check_input(path)
        if not has_records(path):
            raise empty_input(path)
    for path in outputs:
        check_output(path, inputs)


def check_output(path: str, inputs: Iterable[str] = (), folder: bool = False) -> None:
    """Fail if an output's folder does not exist, it is a folder (unless ``folder``: an output written as a
    folder), or it would replace one of the inputs however it is spelt (symlinks, ``./``): the output
    itself, or the partial file it is written through (``OUT.partial``, ``OUT.partial.ckpt``), which is
    emptied first and removed after a failure."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"output folder does not exist: {directory}")
    if not folder and os.path.isdir(path):
        raise IsADirectoryError(f"output is a folder, not a file: {path}")
    for written in (path, path + PARTIAL, path + PARTIAL + CHECKPOINT):
        for source in inputs:
            if os.path.exists(written) and os.path.samefile(written, source):
                raise ValueError(f"the output {path} is the input {source}: write it somewhere else"
                                 if written == path else
                                 f"the output {path} is written through {written}, which is the input "
                                 f"{source}: write it somewhere else")


def check_records(path: str, **options) -> None:
    """Read a whole file of records through once (streaming, in constant memory), so that a command
    fails on a bad line before it makes anything; ``options`` as for :func:`read_records`. Standard
    input cannot be read twice and is checked as it is used instead."""
    if path != "-":
        for _ in read_records(path, **options):
            pass


def open_input(path: str) -> BinaryIO:
    """A binary stream for a path, or for standard input when the path is ``-``."""
    if path == "-":
        return sys.stdin.buffer
    _check_input(path)
    return open(path, "rb")


def count_lines(path: str) -> int:
    """Number of lines of a file (a last line without newline counts), in constant memory."""
    _check_input(path)
    n = 0
    last = b"\n"
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            n += block.count(b"\n")
            last = block[-1:]
    return n + (last != b"\n")


def parse_record(raw: bytes, path: str, line: int, text_field: str = "text") -> dict:
    """One JSONL line (without its line end) -> record, or RecordError."""
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RecordError(path, line, f"invalid UTF-8 at byte {e.start}") from None
    try:
        record = json.loads(decoded)
    except json.JSONDecodeError as e:
        # json's messages may end in "at" (Unterminated string starting at): "at column", said once
        raise RecordError(path, line, f"invalid JSON: {e.msg.removesuffix(' at')} at column {e.colno}"
                                      f"{_table_hint(path, decoded)}") from None
    if not isinstance(record, dict):
        raise RecordError(path, line, f"expected a JSON object, got {json_type(record)}")
    if text_field not in record:
        raise RecordError(path, line, "missing", text_field)
    check_text(record[text_field], path, line, text_field)
    return record


def _table_hint(path: str, line: str) -> str:
    """What to do with a CSV or TSV given where JSON Lines are read."""
    kind = "tsv" if path.lower().endswith(".tsv") or "\t" in line else \
        "csv" if path.lower().endswith(".csv") or "," in line else None
    if kind is None or line.lstrip().startswith(("{", "[")):
        return ""
    return (f"; this looks like {kind.upper()}, not JSON Lines: turn it into records first with `cloak convert "
            f"--from {kind} --in {path} --out records.jsonl` (or --from cold / swsr / toxicn for those data sets)")


def check_text(text: object, path: str, line: int | None, field: str = "text", item: int | None = None) -> str:
    """``text`` if it is a string with something visible in it, else RecordError."""
    problem = None
    if not isinstance(text, str):
        problem = f"must be a string, got {json_type(text)}"
    elif not text.strip():
        problem = "is empty"
    elif is_blank(text):
        problem = "is empty: only invisible characters"
    if problem:
        raise RecordError(path, line, problem, field, item)
    return text  # type: ignore[return-value]


def read_lines(path: str, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line number, raw line)`` for the non-blank lines ``start < n <= stop`` (1-based),
    without line ends or a leading byte-order mark. Reading a whole file with no such line raises
    ``RecordError`` (a range of lines may be empty)."""
    stream = open_input(path)
    seen = False
    try:
        for number, raw in enumerate(stream, 1):
            if number == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8):]
            if number <= start:
                continue
            if stop is not None and number > stop:
                break
            if raw.strip():
                seen = True
                yield number, raw.rstrip(b"\r\n")
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    if not seen and start == 0 and stop is None:
        raise empty_input(input_name(path))


def has_records(path: str) -> bool:
    """Whether a file has a non-blank line (a byte-order mark alone is blank), reading only up to it."""
    with open(path, "rb") as f:
        head = f.read(len(codecs.BOM_UTF8))
        if not head.startswith(codecs.BOM_UTF8):
            f.seek(0)
        while block := f.read(1 << 16):
            if block.strip():
                return True
    return False


def write_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write a whole file so that readers see the old one or the new one, never a part of it.

    The bytes go to a temporary file of a unique name (never named like the target, so nothing
    mistakes it for a finished file) beside the target, then a rename replaces the target.
    """
    path = os.fspath(path)
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    try:  # a name the file system takes may be too long with the suffix: the temporary file's is cut short
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=os.path.basename(path)[:200] + ".", suffix=".tmp")
    except OSError as e:
        raise OSError(e.errno, e.strerror, path) from None  # the file asked for, not its temporary name
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        if isinstance(e, OSError):
            raise OSError(e.errno, e.strerror, path) from None
        raise


def usual_permissions(paths: Iterable[str | os.PathLike]) -> None:
    """Give files the permissions the user's umask gives a new file: safetensors writes its files 0600,
    so a saved model could not be read by the colleague it was made for."""
    for path in paths:
        os.chmod(path, 0o666 & ~_UMASK)


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Lists of ``size`` consecutive items (the last one shorter): streaming in constant memory."""
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def input_name(path: str) -> str:
    return "<stdin>" if path == "-" else path


def record_key(record: dict) -> tuple[object, object] | None:
    """What identifies a record within a file: its ``id`` and, for a cloak, its variant (a clean post
    and its cloaks share an id), or None for a record without an id."""
    if "id" not in record:
        return None
    cloak = record.get("cloak")
    return record["id"], cloak.get("variant") if isinstance(cloak, dict) else None


class UniqueIds:
    """Checks that no two records of a file share an id (and cloak variant), for outputs keyed by id."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.first: dict[str, int] = {}

    def check(self, record: dict, line: int) -> None:
        key = record_key(record)
        if key is None:
            return
        # Keyed by the JSON of the id, so that 1 and "1" (different ids in a JSON file) stay apart.
        text = json.dumps(key, ensure_ascii=False, default=str)
        first = self.first.setdefault(text, line)
        if first != line:
            variant = f" and cloak variant {key[1]}" if key[1] is not None else ""
            raise RecordError(self.path, line, f"duplicate id {key[0]!r}{variant}, first seen on line {first}; "
                                               "ids must be unique within a file (a post's cloaks differ by "
                                               "cloak.variant)", "id")


def read_records(path: str, *, on_error: str = "fail", skipped: SkipLog | None = None,
                 text_field: str = "text", start: int = 0, stop: int | None = None,
                 unique_ids: bool = False, labels: bool = False,
                 lines: Iterable[tuple[int, bytes]] | None = None) -> Iterator[tuple[int, dict]]:
    """Yield ``(line number, record)`` for lines ``start < n <= stop`` (1-based) of a JSONL file.

    Blank lines are passed over. With ``on_error="skip"`` bad lines go to ``skipped``. ``unique_ids``:
    a repeated id (see :func:`record_key`) is a bad line. ``labels``: every record needs a ``label``
    (see :func:`parse_label`), yielded as an int. ``lines``: the ``(line number, JSONL line)`` pairs to
    read instead of the file's (``cloak.common.formats.read_any_records``: a CSV or Parquet file's rows).
    """
    if on_error not in ON_ERROR:
        raise ValueError(f"on_error must be one of {ON_ERROR}, not {on_error!r}")
    name = input_name(path)
    ids = UniqueIds(name) if unique_ids else None
    for number, raw in read_lines(path, start, stop) if lines is None else lines:
        try:
            record = parse_record(raw, name, number, text_field)
            if labels:
                if "label" not in record:
                    raise RecordError(name, number, "missing: this command needs labelled records", "label")
                try:
                    record["label"] = parse_label(record["label"])
                except ValueError as e:
                    raise RecordError(name, number, str(e), "label") from None
            if ids is not None:
                ids.check(record, number)
        except RecordError as error:
            if on_error == "fail":
                raise
            if skipped is not None:
                skipped.add(error)
            continue
        yield number, record


# json.dumps(record, ensure_ascii=False) builds an encoder per call: a tenth of ``cloak perturb``'s time.
UNICODE_JSON = json.JSONEncoder(ensure_ascii=False)


def dump_record(record: dict) -> bytes:
    """One record as a UTF-8 JSONL line.

    Text with lone surrogates (valid JSON escapes, not valid UTF-8) is written with ASCII escapes, so
    the line stays valid UTF-8 and reads back as the same string.
    """
    line = UNICODE_JSON.encode(record)
    try:
        return line.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        return json.dumps(record).encode("ascii") + b"\n"


class AtomicWriter:
    """Write JSONL to ``path`` atomically, resumably; ``path == "-"`` writes standard output.

    Use as a context manager: on success the partial file is renamed to ``path``. A ``resumable``
    writer interrupted (Ctrl-C, SIGTERM: KeyboardInterrupt) keeps ``path.partial`` and its checkpoint
    for ``resume=True`` to continue; any other failure, or any failure of a writer that is not
    resumable, removes them. ``checkpoint(state)`` records the progress (any JSON state, e.g. the last
    input line done); only output written before the last checkpoint survives a resume. A resumable
    writer opened over what an interrupted run left, neither to ``resume`` it nor to ``overwrite`` it,
    refuses: that work would be lost unasked. ``finish(partial, path)`` puts the complete partial file at
    ``path`` (by default a rename; ``cloak.common.formats`` turns it into Parquet or a saved Dataset).
    """

    def __init__(self, path: str, *, resume: bool = False, fingerprint: str = "",
                 resumable: bool = False, overwrite: bool = False,
                 finish: Callable[[str, str], None] = os.replace) -> None:
        self.path = path
        self._finish = finish
        self.fingerprint = fingerprint
        self.resumable = resumable or resume
        self.resumed_state: dict | None = None
        if resume and overwrite:
            raise ValueError("--resume continues an interrupted run and --overwrite starts over: give one of them")
        if path == "-":
            if resume:
                raise ValueError("--resume needs an output file, not standard output")
            self._file: BinaryIO = sys.stdout.buffer
            return
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise FileNotFoundError(f"output directory does not exist: {directory}")
        self.partial = os.fspath(path) + PARTIAL
        self.ckpt = self.partial + CHECKPOINT
        if resume and os.path.exists(self.partial) and os.path.exists(self.ckpt):
            with open(self.ckpt, encoding="utf-8") as f:
                saved = json.load(f)
            if saved.get("fingerprint") != fingerprint:
                raise ValueError(f"{self.partial} was written with other options or input: rerun with --overwrite "
                                 "to start over")
            self._file = open(self.partial, "r+b")
            self._file.truncate(saved["bytes"])  # drop what was written after the checkpoint
            self._file.seek(saved["bytes"])
            self.resumed_state = saved["state"]
        else:
            if self.resumable and not overwrite and os.path.exists(self.partial) and os.path.exists(self.ckpt):
                raise ValueError(f"{self.partial} holds {self._interrupted()} of an interrupted run: rerun with "
                                 "--resume to continue it, or --overwrite to start over")
            self._file = open(self.partial, "wb")

    def _interrupted(self) -> str:
        """What an interrupted run's partial file holds up to its checkpoint (what a resume keeps)."""
        with open(self.ckpt, encoding="utf-8") as f:
            done = json.load(f).get("bytes", 0)
        lines, left = 0, done
        with open(self.partial, "rb") as f:
            while left > 0 and (block := f.read(min(left, 1 << 20))):
                lines += block.count(b"\n")
                left -= len(block)
        return f"{lines:,} lines ({done / 1e6:.1f} MB)"

    def write(self, line: bytes) -> None:
        self._file.write(line)

    def checkpoint(self, state: dict) -> None:
        if self.path == "-":
            self._file.flush()
            return
        self._file.flush()
        os.fsync(self._file.fileno())
        write_atomic(self.ckpt, json.dumps({"fingerprint": self.fingerprint, "bytes": self._file.tell(),
                                            "state": state}).encode("utf-8"))

    def commit(self) -> None:
        if self.path == "-":
            self._file.flush()
            return
        self._file.close()
        self._finish(self.partial, self.path)
        if os.path.exists(self.ckpt):
            os.remove(self.ckpt)

    def close_partial(self, keep: bool) -> None:
        if self.path == "-":
            return
        if not self._file.closed:
            self._file.close()
        if not keep:
            for leftover in (self.partial, self.ckpt):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(leftover)

    def __enter__(self) -> AtomicWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.close_partial(keep=self.resumable and issubclass(exc_type, KeyboardInterrupt))


def write_records(path: str, records: Iterable[dict]) -> int:
    """Write records atomically to a JSONL file (or ``-``); returns how many."""
    n = 0
    with AtomicWriter(path) as out:
        for record in records:
            out.write(dump_record(record))
            n += 1
    return n
