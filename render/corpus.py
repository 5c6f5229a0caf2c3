"""Glyph images of a whole corpus: one compressed ``.npz`` per shard of records plus an index.

Within a shard each distinct token is stored once (a corpus repeats its characters endlessly), and
each record is a run of indices into the shard's tokens:

- ``shard-00000.npz``: ``tokens`` (distinct tokens), ``images`` (n_tokens, size, size[, 3]) uint8,
  ``token_ids`` (every record's tokens, concatenated), ``offsets`` (record i is
  ``token_ids[offsets[i]:offsets[i + 1]]``);
- ``index.jsonl``: one line per record, ``{"id", "shard", "row", "tokens"}``;
- ``meta.json``: size, mode, fonts, counts.

Shards are written atomically, so ``resume=True`` keeps the shards a previous run completed.
"""
from __future__ import annotations

import io
import json
import os
import numpy as np
from tqdm import tqdm

from cloak.io import AtomicWriter, batched, dump_record, read_records, write_atomic

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


def render_corpus(in_path: str, out_dir: str, renderer: GlyphRenderer, *,
                  shard_size: int = SHARD_SIZE, resume: bool = False, on_error: str = "fail",
                  progress: bool | None = None) -> dict:
    """Render every record's tokens into ``out_dir``; returns the counts written to meta.json."""
    os.makedirs(out_dir, exist_ok=True)
    counts = {"records": 0, "tokens": 0, "shards": 0, "rendered": 0}
    with AtomicWriter(os.path.join(out_dir, "index.jsonl")) as index:
        records = (record for _, record in read_records(in_path, on_error=on_error))
        for n, shard in enumerate(tqdm(batched(records, shard_size), unit="shard",
                                       disable=progress is False or None, leave=False,
                                       desc="cloak render")):
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
    meta = {"size": renderer.size, "mode": renderer.mode, "font": renderer.font.key,
            "emoji_font": renderer.emoji_font.key if renderer.emoji_font else None, **counts}
    with open(os.path.join(out_dir, "meta.json"), "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=2)
    return meta


def load_record_images(out_dir: str, shard: str, row: int) -> tuple[list[str], np.ndarray]:
    """The tokens and images of one record of a rendered corpus."""
    with np.load(os.path.join(out_dir, shard)) as data:
        start, end = data["offsets"][row], data["offsets"][row + 1]
        ids = data["token_ids"][start:end]
        return [str(t) for t in data["tokens"][ids]], data["images"][ids]
