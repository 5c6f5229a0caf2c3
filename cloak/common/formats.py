"""Record files by their path: JSON Lines, CSV (``.csv``), TSV (``.tsv``), Parquet (``.parquet``) and a saved
Hugging Face ``Dataset`` (a folder: what ``Dataset.save_to_disk`` writes and ``datasets.load_from_disk``
reads), one registry of them.

``cloak perturb`` and ``cloak unveil`` read and write any of them. A row is a record, its columns the
record's fields, and its number (1-based) is the record's line number: what seeds a cloak (seed, line
number, variant), so a post gets the same cloak whatever file it is read from. The engine works in JSON
Lines whatever the format: rows are read as JSONL lines (so they are checked as a line is), and the output
is written as JSONL to ``OUT.partial`` (what ``--resume`` continues) and turned into the format once
complete. The fields mmcloak writes keep their nesting in Arrow: ``cloak`` and ``unveil`` are structs,
their ``edits`` lists of structs, of the fixed types in :func:`field_types` (Arrow holds them losslessly,
so they are never JSON strings; their types are fixed rather than inferred because a batch without an
edit would otherwise make them lists of nulls). Parquet and Datasets need the optional extra ``hf``
(``pip install 'mmcloak[hf]'``: pyarrow and datasets).

CSV and TSV (Python's ``csv``, UTF-8, a byte-order mark read past) need a header row naming the columns,
``text`` (or ``--text-field``) among them; a row is a record and its number after the header (blank rows
not counted) its line number, so a post gets the same cloak from CSV as from JSONL. A table cannot nest
nor say what type a cell is, so a cell is a string, and what is not one is written as compact JSON: the
fields mmcloak nests (:data:`NESTED`: ``cloak`` and ``unveil``) are read back from it, and ``label`` is read
as the JSONL readers read it (``parse_label``: ``"1"`` is 1), so a CSV ``cloak perturb`` wrote reads back
as its JSONL records and ``cloak unveil`` reads it. What CSV loses: any other field's type (a number or
``true`` in an ``id`` or ``score`` column comes back as the string ``"3"`` or ``"true"``), a field a record
lacks or holds as null (an empty cell: read back as ``""``, or as no field for ``label`` and the nested
ones), and text that is not valid UTF-8 (a lone surrogate). Write JSONL or Parquet to keep them.
"""
from __future__ import annotations

import codecs
import csv
import importlib
import json
import sys
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from types import ModuleType
from typing import Protocol

from .io import (RecordError, batched, check_files, check_output, count_lines, dump_record, empty_input, parse_label,
                 read_lines, read_records)

ROWS = 4096  # rows read or written at a time
# What a folder saved by Dataset.save_to_disk holds beside its data (one file of each kind)
DATASET_FILES = ("dataset_info.json", "state.json")
# The fields mmcloak writes as objects (cloak.run's cloak, cloak.unveil.records' unveil): JSON in a table's cell
NESTED = ("cloak", "unveil")

csv.field_size_limit(min(sys.maxsize, 2**31 - 1))  # posts can be longer than csv's 128 KiB default


def require(module: str) -> ModuleType:
    """Import pyarrow or datasets, or say which extra brings them."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(f"Parquet files and Hugging Face Datasets need the optional extra hf ({e}): "
                          "pip install 'mmcloak[hf]'") from None


def field_types() -> dict:
    """The Arrow types of the fields ``cloak perturb`` and ``cloak unveil`` add (see ``cloak.run`` and
    ``cloak.unveil.records``): the same in every file and batch, edits or none."""
    pa = require("pyarrow")
    edits = pa.list_(pa.struct([("op", pa.string()), ("start", pa.int64()), ("end", pa.int64()),
                                ("src", pa.string()), ("dst", pa.string())]))
    ops = pa.list_(pa.string())
    return {"source_text": pa.string(), "unveiled_from": pa.string(),
            "cloak": pa.struct([("ops", ops), ("seed", pa.int64()), ("variant", pa.int64()), ("edits", edits)]),
            "unveil": pa.struct([("ops", ops), ("settings", pa.string()), ("edits", edits)])}


class RecordFormat(Protocol):
    """A kind of record file: which paths are its, its rows as JSONL lines, and how a finished JSONL output
    becomes one."""

    name: str

    def claims(self, path: str) -> bool:
        """Whether ``path`` is a file of this format."""

    def count(self, path: str) -> int:
        """Rows (lines) in the file, blank lines counted: the last line number."""

    def read_lines(self, path: str, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, bytes]]:
        """``(line number, JSONL line)`` of the records ``start < n <= stop``, as ``cloak.common.io.read_lines``."""

    def stamp(self, path: str) -> list:
        """What changes when the file does (sizes and modification times): an interrupted run resumes only
        on the input it started on."""

    def check_input(self, path: str, text_field: str = "text") -> None:
        """Raise if ``path`` is missing, not of this format or holds no records (or, where it has a header, no
        column ``text_field``)."""

    def check_output(self, path: str, inputs: list[str]) -> None:
        """Raise if ``path`` cannot be written (or replaced) as this format, or would replace one of ``inputs``."""

    def finish(self, jsonl: str, path: str) -> None:
        """Turn the finished JSONL file ``jsonl`` into ``path`` of this format, replacing what is there at
        once, and remove ``jsonl``."""


class JsonLines:
    """JSON Lines, one record a line (``-``: standard input or output): the default."""

    name = "jsonl"

    def claims(self, path: str) -> bool:
        return True

    def count(self, path: str) -> int:
        return count_lines(path)

    def read_lines(self, path: str, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, bytes]]:
        return read_lines(path, start, stop)

    def stamp(self, path: str) -> list:
        return file_stamp(path)

    def check_input(self, path: str, text_field: str = "text") -> None:
        check_files([path])

    def check_output(self, path: str, inputs: list[str]) -> None:
        check_output(path, inputs)

    def finish(self, jsonl: str, path: str) -> None:
        os.replace(jsonl, path)


class _ArrowFormat:
    """What Parquet and a saved Dataset share: rows as JSONL lines, and a JSONL file as Arrow batches."""

    name = "arrow"
    needs: tuple[str, ...] = ("pyarrow",)  # the modules it reads and writes with, checked before a run

    def rows(self, path: str, start: int) -> Iterator[list[dict]]:
        """The rows from row ``start`` (0-based) on, a list at a time."""
        raise NotImplementedError

    def read_lines(self, path: str, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, bytes]]:
        number = start
        for rows in self.rows(path, start):
            for row in rows:
                number += 1
                if stop is not None and number > stop:
                    return
                try:
                    line = dump_record(row)
                except (TypeError, ValueError) as e:  # a column JSON cannot hold (a timestamp, bytes)
                    raise RecordError(path, number, f"not a record JSON can hold: {e}") from None
                yield number, line[:-1]

    def stamp(self, path: str) -> list:
        files = sorted(os.path.join(folder, name) for folder, _, names in os.walk(path) for name in names) \
            if os.path.isdir(path) else [path]
        return [[os.path.relpath(f, path), os.stat(f).st_size, os.stat(f).st_mtime_ns] for f in files]

    def check_input(self, path: str, text_field: str = "text") -> None:
        self.require()
        if not os.path.exists(path):
            raise FileNotFoundError(f"input file not found: {path}")
        if not self.count(path):
            raise empty_input(path)

    def require(self) -> None:
        """Fail now, naming the extra, if a module it needs is missing."""
        for module in self.needs:
            require(module)

    def check_output(self, path: str, inputs: list[str]) -> None:
        self.require()
        check_output(path, inputs)

    def write(self, batches: Iterator, schema, path: str) -> None:
        """Write Arrow record batches of ``schema`` to ``path`` (a new file or folder)."""
        raise NotImplementedError

    def finish(self, jsonl: str, path: str) -> None:
        def write(written: str) -> None:
            schema = arrow_schema(jsonl)
            self.write(arrow_batches(jsonl, schema), schema, written)
        write_converted(jsonl, path, write)


class Parquet(_ArrowFormat):
    """A Parquet file: a path ending in ``.parquet``."""

    name = "parquet"
    needs = ("pyarrow.parquet",)

    def claims(self, path: str) -> bool:
        return path.lower().endswith(".parquet")

    def count(self, path: str) -> int:
        return require("pyarrow.parquet").ParquetFile(path).metadata.num_rows

    def rows(self, path: str, start: int) -> Iterator[list[dict]]:
        file = require("pyarrow.parquet").ParquetFile(path)
        first = 0  # the row groups before the start are not read
        while first < file.num_row_groups and file.metadata.row_group(first).num_rows <= start:
            start -= file.metadata.row_group(first).num_rows
            first += 1
        for batch in file.iter_batches(batch_size=ROWS, row_groups=range(first, file.num_row_groups)):
            rows = batch.to_pylist()
            yield rows[start:]
            start = max(0, start - len(rows))

    def write(self, batches: Iterator, schema, path: str) -> None:
        pq = require("pyarrow.parquet")
        with pq.ParquetWriter(path, schema) as writer:
            for batch in batches:
                writer.write_batch(batch)


class SavedDataset(_ArrowFormat):
    """A folder ``Dataset.save_to_disk`` wrote (``load_from_disk`` reads it): any folder, or a path ending
    in ``/`` (a new folder)."""

    name = "dataset"
    needs = ("pyarrow", "datasets")

    def claims(self, path: str) -> bool:
        return path.endswith(("/", os.sep)) or os.path.isdir(path)

    def check_input(self, path: str, text_field: str = "text") -> None:
        if os.path.isdir(path):
            self._check_saved(path)  # a folder of something else says so, extra or not
        super().check_input(path, text_field)

    def _check_saved(self, path: str) -> None:
        if os.path.isfile(os.path.join(path, "dataset_dict.json")):
            splits = ", ".join(os.path.join(path, s) for s in sorted(os.listdir(path))
                               if os.path.isdir(os.path.join(path, s)))
            raise ValueError(f"{path} is a saved DatasetDict: give one split's folder ({splits})")
        missing = [name for name in DATASET_FILES if not os.path.isfile(os.path.join(path, name))]
        if missing:
            raise ValueError(f"{path} is a folder but not a saved Hugging Face Dataset (it has no {missing[0]}): "
                             "give a JSONL or Parquet file, or a folder Dataset.save_to_disk wrote")

    def _load(self, path: str):
        datasets = require("datasets")
        self._check_saved(path)
        return datasets.load_from_disk(path)

    def count(self, path: str) -> int:
        return self._load(path).num_rows

    def rows(self, path: str, start: int) -> Iterator[list[dict]]:
        dataset = self._load(path)
        for columns in dataset.select(range(start, dataset.num_rows)).iter(batch_size=ROWS):
            yield [dict(zip(columns, values)) for values in zip(*columns.values())]

    def check_output(self, path: str, inputs: list[str]) -> None:
        path = output_path(path)
        if os.path.isdir(path) and os.listdir(path) and not all(
                os.path.isfile(os.path.join(path, name)) for name in DATASET_FILES):
            raise ValueError(f"{path} is a folder holding files, not a saved Dataset: write the Dataset to a new "
                             "or empty folder")
        self.require()
        check_output(path, inputs, folder=True)

    def write(self, batches: Iterator, schema, path: str) -> None:
        pa, datasets = require("pyarrow"), require("datasets")
        arrow = path + ".arrow"  # an Arrow stream, mapped by Dataset.from_file and copied into the folder
        with pa.OSFile(arrow, "wb") as sink, pa.ipc.new_stream(sink, schema) as writer:
            for batch in batches:
                writer.write_batch(batch)
        dataset = datasets.Dataset.from_file(arrow)
        shown = not datasets.are_progress_bars_disabled()  # the command has its own bar and summary
        datasets.disable_progress_bars()
        try:
            dataset.save_to_disk(path)
        finally:
            if shown:
                datasets.enable_progress_bars()
        del dataset  # unmapped before the file is removed
        os.remove(arrow)


class DecodedLines:
    """A file's lines decoded one by one, for ``csv.reader``: an invalid byte is reported with its
    line, and a byte-order mark is dropped. ``number`` is the number of the line read last."""

    def __init__(self, path: str) -> None:
        self.path, self.number = path, 0
        self._file = open(path, "rb")

    def __iter__(self) -> Iterator[str]:
        with self._file:
            for raw in self._file:
                self.number += 1
                if self.number == 1 and raw.startswith(codecs.BOM_UTF8):
                    raw = raw[len(codecs.BOM_UTF8):]
                try:
                    yield raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise RecordError(self.path, self.number, f"invalid UTF-8 at byte {e.start}") from None


class Table:
    """A CSV (``.csv``) or TSV (``.tsv``) file with a header row: a column a field, a row a record (see the
    module's docstring for what a cell keeps)."""

    def __init__(self, name: str, delimiter: str) -> None:
        self.name, self.delimiter = name, delimiter

    def claims(self, path: str) -> bool:
        return path.lower().endswith(f".{self.name}")

    def rows(self, path: str, text_field: str | None = None) -> Iterator[tuple[int, dict]]:
        """``(row number, record)`` of every row but blank ones, numbered from 1 after the header; a row of
        more or fewer cells than the header, or a header without ``text_field``, is a RecordError naming
        the row and the file's line."""
        lines = DecodedLines(path)
        reader = csv.reader(lines, delimiter=self.delimiter)
        header = next(reader, None)
        if header is None:
            raise empty_input(path)
        twice = next((name for i, name in enumerate(header) if name in header[:i]), None)
        if twice is not None:
            raise RecordError(path, None, f"column {twice!r} twice in the header: {header}")
        if text_field is not None and text_field not in header:
            raise RecordError(path, None, f"no column {text_field!r} (--text-field) in the header: {header}")
        number = 0
        for cells in reader:
            if not cells:
                continue
            number += 1
            if len(cells) != len(header):
                cell_s = "cell" if len(cells) == 1 else "cells"
                raise RecordError(path, None, f"row {number} (line {lines.number}): {len(cells)} {cell_s}, but the "
                                              f"header has {len(header)} columns")
            yield number, self._record(path, number, lines.number, dict(zip(header, cells)))

    @staticmethod
    def _record(path: str, number: int, line: int, row: dict) -> dict:
        """A row's cells as a record: ``label`` a number, the nested fields parsed, empty ones left out."""
        record = {}
        for name, cell in row.items():
            if name in ("label", *NESTED) and cell == "":
                continue  # an unlabelled post; a post the command left alone
            try:
                record[name] = parse_label(cell) if name == "label" else json.loads(cell) if name in NESTED else cell
            except ValueError as e:  # json's errors are ValueErrors too
                raise RecordError(path, None, f"row {number} (line {line}): field '{name}': {e}") from None
        return record

    def count(self, path: str) -> int:
        return sum(1 for _ in self.rows(path))

    def read_lines(self, path: str, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, bytes]]:
        for number, record in self.rows(path):
            if number <= start:
                continue
            if stop is not None and number > stop:
                return
            yield number, dump_record(record)[:-1]

    def stamp(self, path: str) -> list:
        return file_stamp(path)

    def check_input(self, path: str, text_field: str = "text") -> None:
        check_files([path])
        if not any(True for _ in self.rows(path, text_field)):  # every row read: a ragged one fails now
            raise empty_input(path)

    def check_output(self, path: str, inputs: list[str]) -> None:
        check_output(path, inputs)

    def finish(self, jsonl: str, path: str) -> None:
        def write(written: str) -> None:
            names = list(dict.fromkeys(name for rows in _jsonl_records(jsonl) for row in rows for name in row))
            with open(written, "w", encoding="utf-8", newline="") as f:
                writer = csv.writer(f, delimiter=self.delimiter, lineterminator="\n")
                writer.writerow(names)
                for rows in _jsonl_records(jsonl):
                    writer.writerows([_cell(row.get(name)) for name in names] for row in rows)
        write_converted(jsonl, path, write)


def _cell(value: object) -> str:
    """A field's value as a table's cell: a string as it is, null as nothing, anything else compact JSON."""
    if isinstance(value, str):
        return value
    return "" if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def file_stamp(path: str) -> list:
    """A file's size and modification time."""
    st = os.stat(path)
    return [st.st_size, st.st_mtime_ns]


def write_converted(jsonl: str, path: str, write: Callable[[str], None]) -> None:
    """Turn the finished JSONL file ``jsonl`` into ``path`` by ``write(new path)`` (a file or folder made
    beside it, then put in its place), and remove ``jsonl``; if ``write`` fails, ``jsonl`` is kept and said."""
    made = tempfile.mkdtemp(dir=os.path.dirname(os.path.abspath(path)), prefix=f".{os.path.basename(path)}.")
    try:
        written = os.path.join(made, os.path.basename(path))
        write(written)
        _replace(written, path)
    except ValueError as e:  # the work is not lost: the records are there as JSONL
        raise ValueError(f"{e}; the records are kept as JSONL in {jsonl}") from None
    finally:
        shutil.rmtree(made, ignore_errors=True)
    os.remove(jsonl)


def _replace(made: str, path: str) -> None:
    """Put the file or folder ``made`` at ``path``: at once where it is a file, else the old folder moved
    aside first and removed after."""
    if not os.path.isdir(path):
        os.replace(made, path)
        return
    old = tempfile.mkdtemp(dir=os.path.dirname(os.path.abspath(path)), prefix=f".{os.path.basename(path)}.old.")
    os.rmdir(old)
    os.replace(path, old)
    os.replace(made, path)
    shutil.rmtree(old, ignore_errors=True)


def _jsonl_records(path: str) -> Iterator[list[dict]]:
    """The records of a JSONL file the engine wrote, a list at a time."""
    for lines in batched(read_lines(path), ROWS):
        yield [json.loads(raw) for _, raw in lines]


def _columns(rows: list[dict], names: Iterable[str]) -> dict[str, list]:
    return {name: [row.get(name) for row in rows] for name in names}


def _array(pa, name: str, values: list, kind=None):
    try:
        return pa.array(values, type=kind)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as e:
        raise ValueError(f"field '{name}' cannot be one Arrow column ({e}): its values must share a type "
                         "(write JSONL to keep them as they are)") from None


def arrow_schema(jsonl: str):
    """The Arrow schema of the records of a JSONL file: a column for every field, in the order they first
    appear, of the type that holds every value (``field_types`` for the fields mmcloak adds)."""
    pa, known = require("pyarrow"), field_types()
    schema = None
    for rows in _jsonl_records(jsonl):
        names = dict.fromkeys(name for row in rows for name in row)
        batch = pa.schema([(name, known.get(name) or _array(pa, name, values).type)
                           for name, values in _columns(rows, names).items()])
        try:
            schema = batch if schema is None else pa.unify_schemas([schema, batch], promote_options="permissive")
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise ValueError(f"{jsonl}: the records' fields cannot be Arrow columns ({e}): a field's values must "
                             "share a type (write JSONL to keep them as they are)") from None
    return schema


def arrow_batches(jsonl: str, schema) -> Iterator:
    """The records of a JSONL file as Arrow record batches of ``schema``."""
    pa = require("pyarrow")
    for rows in _jsonl_records(jsonl):
        columns = _columns(rows, schema.names)
        yield pa.record_batch([_array(pa, f.name, columns[f.name], f.type) for f in schema], schema=schema)


FORMATS: list[RecordFormat] = [Table("csv", ","), Table("tsv", "\t"), Parquet(), SavedDataset()]
DEFAULT = JsonLines()


def register_format(fmt: RecordFormat) -> RecordFormat:
    """Add a format (before the built-in ones: the first that claims a path reads and writes it)."""
    FORMATS.insert(0, fmt)
    return fmt


def record_format(path: str) -> RecordFormat:
    """The format of ``path``: the first registered one that claims it, else JSON Lines."""
    return next((fmt for fmt in FORMATS if fmt.claims(path)), DEFAULT)


def output_path(path: str) -> str:
    """The path an output is written at: a folder's without its trailing ``/``."""
    return path if path in ("-", "/") else path.rstrip("/" + os.sep)


def read_any_records(path: str, **options) -> Iterator[tuple[int, dict]]:
    """``cloak.common.io.read_records`` of a file in any format (``-``: standard input, JSONL): its rows read
    and checked as JSONL lines are; ``options`` as for ``read_records``."""
    if path == "-":
        return read_records(path, **options)
    fmt = record_format(path)
    fmt.check_input(path, options.get("text_field", "text"))
    return read_records(path, lines=fmt.read_lines(path, options.pop("start", 0), options.pop("stop", None)),
                        **options)


def check_record_files(in_path: str, out_path: str, text_field: str = "text") -> None:
    """Fail now, before slow work, if the input is missing, not what its path says, holds no records or (a
    table) no column ``text_field``, or the output cannot be written in its format or would replace the input
    (``-``: standard input / output)."""
    inputs = [] if in_path == "-" else [in_path]
    for path in inputs:
        record_format(path).check_input(path, text_field)
    if out_path != "-":
        record_format(out_path).check_output(out_path, inputs)
