"""Public data sets -> records ``{"id", "text", "label", ...}`` (``cloak convert --from FORMAT``).

| format | file | text | label |
|---|---|---|---|
| ``cold`` | COLD ``train/dev/test.csv`` (BOM, first column an index) | ``TEXT`` | ``label`` |
| ``swsr`` | SWSR ``SexComment.csv`` | ``comment_text`` | ``label`` |
| ``toxicn`` | ToxiCN ``train.json`` / ``test.json`` (a JSON list) | ``content`` | ``toxic`` |
| ``toxicloakcn`` | ToxiCloakCN ``*.tsv`` (``content, toxic``) or ``*.csv`` (``text, label``) | | |
| ``cntp`` | CNTP / ToxiBenchCN ``{"results": [...]}`` | ``perturbed_text`` (``original_text`` -> ``source_text``) | ``is_toxic`` |
| ``csv`` / ``tsv`` | any table with a header | ``--text-col`` | ``--label-col`` |

Every other column is kept under its own name. Ids are ``{format}-{file stem}-{row}`` (``row``: the
row's position in the file, from 0), unique within a converted file; an id the data has itself is kept
in a field of its own (COLD's index column as ``cold_index``, which repeats in COLD's train and dev
files; SWSR's ``index``; CNTP's ``sentence_id``). Only ``--id-col`` (csv / tsv) takes ids from the data,
and they must be unique. Labels must be non-negative integers; text must be valid UTF-8.
"""
from __future__ import annotations

import csv
import json
import os
from collections.abc import Callable, Iterator

from .common.formats import DecodedLines  # also sets csv's field size limit for posts
from .common.io import (RecordError, UniqueIds, check_files, check_text, empty_input, json_type, parse_label,
                 write_records)

FORMATS = ("cold", "toxicn", "toxicloakcn", "cntp", "swsr", "csv", "tsv")


def _label(value, path: str, line: int | None, column: str, item: int | None = None) -> int:
    try:
        return parse_label(value)
    except ValueError as e:
        raise RecordError(path, line, str(e), column, item) from None


def _table(path: str, delimiter: str, text_col: str, label_col: str | None, id_col: str | None,
           prefix: str, rename: dict[str, str] | None = None) -> Iterator[dict]:
    """Rows of a CSV / TSV file with a header. ``id_col``: the column holding ids (checked unique),
    or None for ids made from the row's position."""
    stem = os.path.splitext(os.path.basename(path))[0]
    lines = DecodedLines(path)
    reader = csv.DictReader(lines, delimiter=delimiter)
    header = reader.fieldnames or []
    for needed in (text_col, label_col, id_col):
        if needed is not None and needed not in header:
            raise RecordError(path, 1, f"no column {needed!r}; the header has {header}")
    ids = UniqueIds(path) if id_col is not None else None
    for row_number, row in enumerate(reader):
        line = lines.number  # the row's last line: a quoted field may span several
        text = check_text(row.pop(text_col) or "", path, line, text_col)
        ident = row.pop(id_col) if id_col is not None else str(row_number)
        record = {"id": f"{prefix}-{stem}-{ident}", "text": text}
        if label_col is not None:
            record["label"] = _label(row.pop(label_col), path, line, label_col)
        for key, value in row.items():
            name = (rename or {}).get(key, key)
            if name:  # a trailing delimiter makes an unnamed column, a short header a key None
                record[name] = value
        if ids is not None:
            ids.check(record, line)
        yield record


def _cold(path: str, **_) -> Iterator[dict]:
    # COLD's first column, unnamed, is its own index: unique in test, repeated in train and dev.
    return _table(path, ",", "TEXT", "label", None, "cold", {"": "cold_index", "fine-grained-label": "fine_grained_label"})


def _swsr(path: str, **_) -> Iterator[dict]:
    return _table(path, ",", "comment_text", "label", None, "swsr")


def _toxicloakcn(path: str, **_) -> Iterator[dict]:
    if path.endswith(".tsv"):
        return _table(path, "\t", "content", "toxic", None, "toxicloakcn")
    return _table(path, ",", "text", "label", None, "toxicloakcn")


def _load_json(path: str):
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise RecordError(path, data.count(b"\n", 0, e.start) + 1, f"invalid UTF-8 at byte {e.start}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise RecordError(path, e.lineno, f"invalid JSON: {e.msg}") from None


def _toxicn(path: str, **_) -> Iterator[dict]:
    data = _load_json(path)
    if not isinstance(data, list):
        raise RecordError(path, 1, "expected a JSON list of posts")
    stem = os.path.splitext(os.path.basename(path))[0]
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise RecordError(path, None, f"expected a JSON object, got {json_type(item)}", item=i)
        rest = {k: v for k, v in item.items() if k not in ("content", "toxic")}
        yield {"id": f"toxicn-{stem}-{i}", "text": check_text(item.get("content"), path, None, "content", i),
               "label": _label(item.get("toxic"), path, None, "toxic", i), **rest}


def _cntp(path: str, **_) -> Iterator[dict]:
    data = _load_json(path)
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list):
        raise RecordError(path, 1, 'expected {"results": [...]}')
    stem = os.path.splitext(os.path.basename(path))[0]
    for i, item in enumerate(results):
        if not isinstance(item, dict):
            raise RecordError(path, None, f"expected a JSON object, got {json_type(item)}", item=i)
        rest = {k: v for k, v in item.items() if k not in ("perturbed_text", "original_text", "is_toxic")}
        yield {"id": f"cntp-{stem}-{i}", "text": check_text(item.get("perturbed_text"), path, None, "perturbed_text", i),
               "source_text": item.get("original_text"),
               "label": _label(item.get("is_toxic"), path, None, "is_toxic", i), **rest}


def _generic(fmt: str, delimiter: str) -> Callable[..., Iterator[dict]]:
    def read(path: str, text_col: str = "text", label_col: str | None = "label",
             id_col: str | None = None) -> Iterator[dict]:
        return _table(path, delimiter, text_col, label_col, id_col, fmt)
    return read


_READERS: dict[str, Callable[..., Iterator[dict]]] = {
    "cold": _cold, "swsr": _swsr, "toxicn": _toxicn, "toxicloakcn": _toxicloakcn, "cntp": _cntp,
    "csv": _generic("csv", ","), "tsv": _generic("tsv", "\t"),
}


def read_dataset(fmt: str, path: str, **options) -> Iterator[dict]:
    """Records from a data set file in one of ``FORMATS``.

    ``csv``/``tsv`` take ``text_col``, ``label_col`` (None for unlabelled data) and ``id_col``.
    """
    if fmt not in _READERS:
        raise ValueError(f"unknown format {fmt!r}; formats: {', '.join(FORMATS)}")
    check_files([path])
    return _READERS[fmt](path, **options)


def convert_file(fmt: str, in_path: str, out_path: str, **options) -> int:
    """Convert a data set file to JSONL records; returns the number written."""
    check_files([in_path], [out_path])
    def records() -> Iterator[dict]:
        n = 0
        for n, record in enumerate(read_dataset(fmt, in_path, **options), 1):
            yield record
        if not n:
            raise empty_input(in_path)

    return write_records(out_path, records())
