"""Public data sets -> records ``{"id", "text", "label", ...}`` (``cloak convert --from FORMAT``).

| format | file | text | label |
|---|---|---|---|
| ``cold`` | COLD ``train/dev/test.csv`` (BOM, first column an index) | ``TEXT`` | ``label`` |
| ``swsr`` | SWSR ``SexComment.csv`` | ``comment_text`` | ``label`` |
| ``toxicn`` | ToxiCN ``train.json`` / ``test.json`` (a JSON list) | ``content`` | ``toxic`` |
| ``toxicloakcn`` | ToxiCloakCN ``*.tsv`` (``content, toxic``) or ``*.csv`` (``text, label``) | | |
| ``cntp`` | CNTP / ToxiBenchCN ``{"results": [...]}`` | ``perturbed_text`` (``original_text`` -> ``source_text``) | ``is_toxic`` |
| ``csv`` / ``tsv`` | any table with a header | ``--text-col`` | ``--label-col`` |

Every other column is kept under its own name. Ids are ``{format}-{file stem}-{row}`` unless the data
has its own (COLD's index column, SWSR's ``index``, CNTP's ``sentence_id``).
"""
from __future__ import annotations

import csv
import json
import os
import sys
from collections.abc import Callable, Iterator

from .io import RecordError, write_records

FORMATS = ("cold", "toxicn", "toxicloakcn", "cntp", "swsr", "csv", "tsv")

csv.field_size_limit(min(sys.maxsize, 2**31 - 1))  # posts can be longer than csv's 128 KiB default


def _label(value, path: str, line: int, column: str) -> int:
    try:
        return int(float(value)) if isinstance(value, str) else int(value)
    except (TypeError, ValueError):
        raise RecordError(path, line, f"label {value!r} is not a number", column) from None


def _table(path: str, delimiter: str, text_col: str, label_col: str | None, id_col: str | None,
           prefix: str, rename: dict[str, str] | None = None) -> Iterator[dict]:
    stem = os.path.splitext(os.path.basename(path))[0]
    with open(path, encoding="utf-8-sig", newline="") as f:
        reader = csv.DictReader(f, delimiter=delimiter)
        header = reader.fieldnames or []
        for needed in (text_col, label_col, id_col):
            if needed is not None and needed not in header:
                raise RecordError(path, 1, f"no column {needed!r}; the header has {header}")
        for row in reader:
            line = reader.line_num
            text = row.pop(text_col)
            if text is None or not text.strip():
                raise RecordError(path, line, "is empty", text_col)
            ident = row.pop(id_col) if id_col is not None else str(line - 1)
            record = {"id": f"{prefix}-{stem}-{ident}", "text": text}
            if label_col is not None:
                record["label"] = _label(row.pop(label_col), path, line, label_col)
            for key, value in row.items():
                if key:  # a trailing delimiter makes an unnamed column
                    record[(rename or {}).get(key, key)] = value
            yield record


def _cold(path: str, **_) -> Iterator[dict]:
    return _table(path, ",", "TEXT", "label", "", "cold", {"fine-grained-label": "fine_grained_label"})


def _swsr(path: str, **_) -> Iterator[dict]:
    return _table(path, ",", "comment_text", "label", "index", "swsr")


def _toxicloakcn(path: str, **_) -> Iterator[dict]:
    if path.endswith(".tsv"):
        return _table(path, "\t", "content", "toxic", None, "toxicloakcn")
    return _table(path, ",", "text", "label", None, "toxicloakcn")


def _load_json(path: str):
    with open(path, encoding="utf-8-sig") as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            raise RecordError(path, e.lineno, f"invalid JSON: {e.msg}") from None


def _toxicn(path: str, **_) -> Iterator[dict]:
    data = _load_json(path)
    if not isinstance(data, list):
        raise RecordError(path, 1, "expected a JSON list of posts")
    stem = os.path.splitext(os.path.basename(path))[0]
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not isinstance(item.get("content"), str):
            raise RecordError(path, 1, f"item {i} has no string 'content'", "content")
        rest = {k: v for k, v in item.items() if k not in ("content", "toxic")}
        yield {"id": f"toxicn-{stem}-{i}", "text": item["content"],
               "label": _label(item.get("toxic"), path, 1, "toxic"), **rest}


def _cntp(path: str, **_) -> Iterator[dict]:
    data = _load_json(path)
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list):
        raise RecordError(path, 1, 'expected {"results": [...]}')
    for i, item in enumerate(results):
        if not isinstance(item, dict) or not isinstance(item.get("perturbed_text"), str):
            raise RecordError(path, 1, f"result {i} has no string 'perturbed_text'", "perturbed_text")
        rest = {k: v for k, v in item.items()
                if k not in ("sentence_id", "perturbed_text", "original_text", "is_toxic")}
        yield {"id": f"cntp-{item.get('sentence_id', i)}", "text": item["perturbed_text"],
               "source_text": item.get("original_text"),
               "label": _label(item.get("is_toxic"), path, 1, "is_toxic"), **rest}


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
    if not os.path.isfile(path):
        raise FileNotFoundError(f"input file not found: {path}")
    return _READERS[fmt](path, **options)


def convert_file(fmt: str, in_path: str, out_path: str, **options) -> int:
    """Convert a data set file to JSONL records; returns the number written."""
    return write_records(out_path, read_dataset(fmt, in_path, **options))
