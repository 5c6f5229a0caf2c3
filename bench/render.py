"""Benchmark of ``render``: glyph images per second, uncached and cached, and the similarity index.

Run from the repository root: ``.venv/bin/python bench/render.py`` (``--quick`` for a smoke run);
writes ``bench/results/render.json``. Measures, with the fonts fontconfig finds:

1. every GB2312 character (6,763) rendered at 224 px RGB (CLIP's input) from an empty cache:
   glyphs/s and the total time;
2. the same glyphs again from the in-memory cache, and from the on-disk cache in a new renderer;
3. the distinct tokens of the COLD test set (characters, Latin runs, emoji) at 64 px greyscale;
4. the look-alike index built from scratch (render GB2312 at 32 px, blur, all-pairs cosine, structure).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.machine import machine_info  # noqa: E402
from cloak.convert import read_dataset  # noqa: E402
from cloak.hanzi import gb2312_chars  # noqa: E402
from render import GlyphRenderer, find_cjk_font, find_emoji_font, glyph_tokens  # noqa: E402
from render.similarity import build_similarity_index  # noqa: E402


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cold", default=str(REPO.parent / "shared" / "data" / "cold"))
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "render.json"))
    ap.add_argument("--quick", action="store_true", help="1,000 characters instead of all of GB2312.")
    args = ap.parse_args()

    chars = list(gb2312_chars())[:1000 if args.quick else None]
    result = {"benchmark": "bench/render.py", "quick": args.quick,
              "machine": machine_info(("pillow", "numpy")),
              "fonts": {"cjk": find_cjk_font().key, "emoji": getattr(find_emoji_font(), "key", None)}}

    with tempfile.TemporaryDirectory() as cache:
        renderer = GlyphRenderer(size=224, mode="RGB", cache_dir=cache)
        _, uncached = timed(lambda: renderer.render_batch(chars))
        _, memory = timed(lambda: renderer.render_batch(chars))
        disk_renderer = GlyphRenderer(size=224, mode="RGB", cache_dir=cache)
        _, disk = timed(lambda: disk_renderer.render_batch(chars))
        assert disk_renderer.renders == 0
    plain = GlyphRenderer(size=224, mode="RGB")
    _, no_disk = timed(lambda: plain.render_batch(chars))
    result["gb2312_224px_rgb"] = {
        "glyphs": len(chars),
        "uncached_s": round(no_disk, 2), "uncached_glyphs_per_s": round(len(chars) / no_disk, 1),
        "uncached_writing_disk_cache_s": round(uncached, 2),
        "memory_cache_glyphs_per_s": round(len(chars) / memory, 1),
        "disk_cache_glyphs_per_s": round(len(chars) / disk, 1),
    }

    texts = [r["text"] for r in read_dataset("cold", os.path.join(args.cold, "test.csv"))]
    tokens = [t for text in texts for t in glyph_tokens(text)]
    small = GlyphRenderer(size=64)
    _, corpus = timed(lambda: [small.render(t) for t in tokens])
    result["cold_test_64px"] = {"texts": len(texts), "tokens": len(tokens),
                                "distinct_tokens_drawn": small.renders, "seconds": round(corpus, 2),
                                "tokens_per_s": round(len(tokens) / corpus, 1)}

    index, build = timed(lambda: build_similarity_index(chars))
    result["similarity_index"] = {"characters": len(index), "build_s": round(build, 2)}

    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2, ensure_ascii=False)
    print(json.dumps(result, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
