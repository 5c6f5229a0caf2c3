"""Benchmark of ``render``: glyph images per second, uncached and cached, and the similarity index.

Run from the repository root: ``.venv/bin/python -m bench.render`` (``--quick`` for a smoke run);
writes ``bench/results/render.json``. Measures, with the fonts fontconfig finds:

1. every GB2312 character (6,763) rendered at 224 px RGB (CLIP's input) from an empty cache:
   glyphs/s and the total time;
2. the same glyphs again from the in-memory cache, and from the on-disk cache in a new renderer;
3. the distinct tokens of the COLD test set (characters, Latin runs, emoji) at 64 px greyscale;
4. the look-alike index built from scratch (render GB2312 at 32 px, blur, all-pairs cosine, structure).
"""
from __future__ import annotations

import json
import tempfile

from bench.common import RESULTS, cold_records, machine_info, parser, timed, write_result
from cloak.hanzi import gb2312_chars
from render import GlyphRenderer, find_cjk_font, find_emoji_font, glyph_tokens
from render.similarity import build_similarity_index


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "render.json", cold=True)
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

    texts = [r["text"] for r in cold_records(args.cold, "test")]
    tokens = [t for text in texts for t in glyph_tokens(text)]
    small = GlyphRenderer(size=64)
    _, corpus = timed(lambda: [small.render(t) for t in tokens])
    result["cold_test_64px"] = {"texts": len(texts), "tokens": len(tokens),
                                "distinct_tokens_drawn": small.renders, "seconds": round(corpus, 2),
                                "tokens_per_s": round(len(tokens) / corpus, 1)}

    index, build = timed(lambda: build_similarity_index(chars))
    result["similarity_index"] = {"characters": len(index), "build_s": round(build, 2)}

    write_result(args.out, result, indent=2)
    print(json.dumps(result, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
