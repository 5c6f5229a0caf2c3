"""Glyph images of a whole corpus: one compressed ``.npz`` per shard of records plus an index.

Within a shard each distinct token is stored once (a corpus repeats its characters endlessly), and
each record is a run of indices into the shard's tokens:

- ``shard-00000.npz``: ``tokens`` (distinct tokens), ``images`` (n_tokens, size, size[, 3]) uint8,
  ``token_ids`` (every record's tokens, concatenated), ``offsets`` (record i is
  ``token_ids[offsets[i]:offsets[i + 1]]``);
- ``index.jsonl``: one line per record, ``{"id", "shard", "row", "tokens"}`` (ids must be unique);
- ``meta.json``: the ``settings`` the folder was rendered with (input file, size, mode, fonts, shard
  size), whether it is ``complete``, and counts.

Shards are written atomically, so ``resume=True`` keeps the shards a previous run completed — only if
that run read the same input file with the same settings: shards of other posts or sizes would be
mixed in silently, so a folder rendered otherwise is refused.
"""
from __future__ import annotations

import io
import json
import os
import re

import numpy as np
from cloak.common.progress import progress_bar

from cloak.common.io import AtomicWriter, batched, check_files, check_records, dump_record, read_records, write_atomic

from .glyphs import GlyphRenderer, glyph_tokens

SHARD_SIZE = 1000


def _write_shard(path: str, records: list[dict], renderer: GlyphRenderer) -> None:
    vocab: dict[str, int] = {}
    token_ids: list[int] = []
    offsets = [0]
    for record in records:
        token_ids.extend(vocab.setdefault(t, len(vocab)) for t in glyph_tokens(record["text"]))
        offsets.append(len(token_ids))
    shard = io.BytesIO()
    np.savez_compressed(shard, tokens=np.array(list(vocab), dtype=str),
                        images=renderer.render_batch(list(vocab)),
                        token_ids=np.array(token_ids, dtype=np.int32),
                        offsets=np.array(offsets, dtype=np.int64))
    write_atomic(path, shard.getvalue())


def _settings(in_path: str, renderer: GlyphRenderer, shard_size: int, on_error: str) -> dict:
    """What a rendered folder depends on: the input file (path, size, modification time) and options."""
    source = None
    if in_path != "-":
        st = os.stat(in_path)
        source = {"path": os.path.abspath(in_path), "bytes": st.st_size, "mtime_ns": st.st_mtime_ns}
    fonts = {name: font.key if font else None for name, font in
             (("font", renderer.font), ("emoji_font", renderer.emoji_font), ("fallback_font", renderer.fallback_font))}
    return {"input": source, "size": renderer.size, "mode": renderer.mode, "margin": renderer.margin, **fonts,
            "shard_size": shard_size, "on_error": on_error}


def _check_resumable(out_dir: str, settings: dict) -> None:
    meta_path = os.path.join(out_dir, "meta.json")
    if not os.path.exists(meta_path):
        return  # nothing rendered yet: a resume starts from the beginning
    with open(meta_path, encoding="utf-8") as f:
        previous = json.load(f).get("settings")
    if previous != settings:
        if previous is None:
            what = "settings unknown (an older mmcloak)"
        else:
            what = ", ".join(f"{k} {previous.get(k)!r} (now {v!r})" for k, v in settings.items() if previous.get(k) != v)
        raise ValueError(f"--resume: {out_dir} was rendered with other input or options: {what}; "
                         "render into a new folder, or run without --resume to start over")


def render_corpus(in_path: str, out_dir: str, renderer: GlyphRenderer, *,
                  shard_size: int = SHARD_SIZE, resume: bool = False, on_error: str = "fail",
                  progress: bool | None = None) -> dict:
    """Render every record's tokens into ``out_dir``; returns the counts written to meta.json."""
    if resume and in_path == "-":
        raise ValueError("--resume needs an input file: standard input cannot be read again")
    check_records(in_path, on_error=on_error, unique_ids=True)  # bad input fails before anything is drawn
    settings = _settings(in_path, renderer, shard_size, on_error)
    if resume:
        _check_resumable(out_dir, settings)
    os.makedirs(out_dir, exist_ok=True)
    meta_path, index_path = os.path.join(out_dir, "meta.json"), os.path.join(out_dir, "index.jsonl")
    check_files([in_path], [meta_path, index_path])  # the input may not be one of the files written here
    write_atomic(meta_path, json.dumps({"settings": settings, "complete": False}, indent=2).encode())
    counts = {"records": 0, "tokens": 0, "shards": 0, "rendered": 0}
    with AtomicWriter(index_path) as index:
        records = (record for _, record in read_records(in_path, on_error=on_error, unique_ids=True))
        for n, shard in enumerate(progress_bar(batched(records, shard_size), unit="shard", desc="cloak render",
                                               progress=progress)):
            name = f"shard-{n:05d}.npz"
            path = os.path.join(out_dir, name)
            if not (resume and os.path.exists(path)):
                _write_shard(path, shard, renderer)
            for row, record in enumerate(shard):
                tokens = glyph_tokens(record["text"])
                index.write(dump_record({"id": record.get("id"), "shard": name, "row": row,
                                         "tokens": tokens}))
                counts["tokens"] += len(tokens)
            counts["records"] += len(shard)
            counts["shards"] += 1
    counts["rendered"] = renderer.renders
    for name in os.listdir(out_dir):  # shards left by an earlier, longer run
        number = re.fullmatch(r"shard-(\d+)\.npz", name)
        if number and int(number.group(1)) >= counts["shards"]:
            os.remove(os.path.join(out_dir, name))
    meta = {"settings": settings, "complete": True, **counts}
    write_atomic(meta_path, json.dumps(meta, indent=2).encode())
    return meta


def load_record_images(out_dir: str, shard: str, row: int) -> tuple[list[str], np.ndarray]:
    """The tokens and images of one record of a rendered corpus."""
    with np.load(os.path.join(out_dir, shard)) as data:
        start, end = data["offsets"][row], data["offsets"][row + 1]
        ids = data["token_ids"][start:end]
        return [str(t) for t in data["tokens"][ids]], data["images"][ids]
