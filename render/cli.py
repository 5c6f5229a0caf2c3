"""``cloak render``: glyph images of a corpus, a preview picture, and the similarity index."""
from __future__ import annotations

import click

from cloak.common.commands import check_out_folder, plural, reports_errors, target_options
from cloak.common.io import ON_ERROR

from .fonts import FontNotFoundError, font_file


def _kept(kwargs: dict) -> str:
    """What an interrupted ``cloak render --in`` kept, and how to go on."""
    out = kwargs["out_dir"]
    return f"; the shards completed are kept in {out}: rerun with --resume to finish" if out else ""


@click.command()
@click.option("--in", "in_path", metavar="FILE|-", help="JSONL records whose texts to render.")
@click.option("--out", "out_dir", metavar="DIR", help="Where the shards (.npz) and index.jsonl go.")
@click.option("--size", type=click.IntRange(8), default=64, show_default=True,
              help="Image side in pixels (224 for CLIP).")
@click.option("--mode", type=click.Choice(["L", "RGB"]), default="L", show_default=True,
              help="Greyscale or colour (emoji keep their colours in RGB).")
@click.option("--font", "font_path", metavar="FILE", help="CJK font file [default: found by fontconfig].")
@click.option("--emoji-font", "emoji_font_path", metavar="FILE",
              help="Colour-emoji font file [default: found by fontconfig].")
@click.option("--shard-size", type=click.IntRange(1), default=1000, show_default=True,
              help="Records per .npz shard.")
@click.option("--cache-dir", metavar="DIR", help="Also cache every glyph image on disk here.")
@click.option("--resume", is_flag=True, help="Keep the shards a previous run completed.")
@click.option("--on-error", type=click.Choice(ON_ERROR), default="fail", show_default=True,
              help="On a bad input line: stop naming it, or skip it.")
@click.option("--preview", metavar="TEXT", help="Draw TEXT and its cloaked variants to -o instead.")
@click.option("-o", "preview_out", metavar="PNG", default="preview.png", show_default=True,
              help="Where --preview writes its picture.")
@click.option("--ops", default="homophone,similar,split,emoji", show_default=True,
              help="Ops for the --preview variants.")
@target_options()
@click.option("--variants", type=click.IntRange(0), default=3, show_default=True,
              help="Cloaked variants drawn under the --preview text.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the --preview variants.")
@click.option("--build-similarity-index", "build_index", is_flag=True,
              help="Build the look-alike index (as shipped for cloak's `similar` op) from your fonts.")
@click.option("--index-out", metavar="FILE", default="similar_chars.tsv", show_default=True,
              help="Where --build-similarity-index writes; use it with `--ops similar:table=FILE`.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@reports_errors("cloak render", interrupted={"render": _kept}, failures={FontNotFoundError: "", OSError: ""})
def render(in_path, out_dir, size, mode, font_path, emoji_font_path, shard_size, cache_dir, resume,
           on_error, preview, preview_out, ops, targets, lexicon, mine_from, variants, seed, build_index, index_out,
           quiet) -> None:
    """Render texts as glyph images: one image per token (character, Latin run, emoji).

    \b
    cloak render --in data.jsonl --out glyphs/ [--size 224 --mode RGB]
    cloak render --preview "黑人都是垃圾" -o preview.png
    cloak render --build-similarity-index --index-out my_similar.tsv
    """
    modes = sum(bool(x) for x in (in_path, preview, build_index))
    if modes != 1:
        raise click.UsageError("give exactly one of --in (with --out), --preview, --build-similarity-index")
    font = font_file(font_path) if font_path else None
    emoji_font = font_file(emoji_font_path) if emoji_font_path else None
    if build_index:
        _build_index(font, index_out)
    elif preview is not None:
        _preview(preview, preview_out, font, emoji_font, ops, {"targets": targets, "lexicon": lexicon,
                                                               "mine_from": mine_from}, variants, seed)
    else:
        if not out_dir:
            raise click.UsageError("--in needs --out DIR")
        check_out_folder("--out", out_dir)
        from .corpus import render_corpus
        from .glyphs import GlyphRenderer

        renderer = GlyphRenderer(size=size, mode=mode, font=font, emoji_font=emoji_font, cache_dir=cache_dir)
        meta = render_corpus(in_path, out_dir, renderer, shard_size=shard_size, resume=resume,
                             on_error=on_error, progress=False if quiet else None)
        click.echo(f"cloak render: {plural(meta['records'], 'record')}, {plural(meta['tokens'], 'token')}, "
                   f"{plural(meta['rendered'], 'distinct image')} drawn, {plural(meta['shards'], 'shard')} "
                   f"in {out_dir}", err=True)


def _preview(text, out, font, emoji_font, ops, targets, variants, seed) -> None:
    """``targets``: --targets, --lexicon and --mine-from, as the Perturber takes them."""
    from cloak import Perturber

    from .glyphs import GlyphRenderer
    from .preview import preview_image

    perturber = Perturber(ops=ops, seed=seed, **targets)
    rows = [text] + [perturber(text, variant=v).text for v in range(variants)]
    preview_image(rows, GlyphRenderer(size=48, mode="RGB", font=font, emoji_font=emoji_font)).save(out)
    for row in rows:
        click.echo(row)
    click.echo(f"cloak render: wrote {out}", err=True)


def _build_index(font, index_out) -> None:
    import time

    from .similarity import build_similarity_index, write_similarity_index

    started = time.perf_counter()
    index = build_similarity_index(font=font)
    write_similarity_index(index, index_out, font)
    click.echo(f"cloak render: {len(index)} characters indexed in {time.perf_counter() - started:.1f} s "
               f"-> {index_out}", err=True)
