"""Glyph images of tokens: what a reader (and MMBERT's vision modality) sees of a post.

A token — a character, a word, a wordpiece such as ``##人``, Latin, digits, emoji or a mix — is drawn
on one line in its own fonts (Chinese and Latin with the CJK font, what it lacks with a fallback font
such as DejaVu Sans, emoji with the colour-emoji font at its native bitmap size, then scaled), and
the line's layout box (advance width x em height, not the ink's bounding box, so that 一 stays a thin
stroke and 曰 stays wider than 日) is scaled to fit a square and centred. Black ink on white; greyscale (``L``) or ``RGB`` (emoji keep their colours).

Every image is cached per (token, fonts, size, mode) in memory and, with ``cache_dir``, on disk as
PNG, so a corpus costs one render per distinct token.
"""
from __future__ import annotations

import functools
import hashlib
import io
import os
import re
from collections.abc import Iterable, Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from cloak.common.io import write_atomic

from .fonts import FontFile, find_cjk_font, find_emoji_font, find_fallback_font

MODES = ("L", "RGB")
REF_SIZE = 128  # drawing size; images are scaled down from it
EMOJI_NATIVE_SIZE = 109  # the only size Noto Color Emoji's bitmaps come in
IDEOGRAPHIC_BASELINE = 0.88  # of the em: CJK glyphs fill the em box [0, 1] above -0.12
CLIP_SIZE = 224

_TOKEN = re.compile(r"[A-Za-z0-9]+|\S", re.UNICODE)
# Unicode's paragraph separators (Bidi_Class B: \n, \r, U+001C-001E, U+0085, U+2029). libraqm lays out
# one paragraph and refuses text holding one ("raqm_layout() failed", libraqm PR #219), and PIL's basic
# layout would start a second line; a glyph image is one line, where a line break shows as a space.
PARAGRAPH_SEPARATORS = str.maketrans(dict.fromkeys("\n\r\x1c\x1d\x1e\x85\u2029", " "))


@functools.cache
def _font(font: FontFile, size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(font.path, size, index=font.index)


@functools.cache
def _notdef(font: FontFile) -> bytes:
    """What the font draws for a character it does not have (its .notdef box)."""
    return _mask(font, "\U0010fffd")


def _mask(font: FontFile, ch: str) -> bytes:
    mask = _font(font, 32).getmask(ch)
    return bytes(mask.size) + bytes(mask)


@functools.lru_cache(maxsize=100_000)
def has_glyph(font: FontFile, ch: str) -> bool:
    return ch.isspace() or _mask(font, ch) != _notdef(font)


def _emoji_spans(text: str) -> list[tuple[int, int]]:
    import emoji

    return [(m["match_start"], m["match_end"]) for m in emoji.emoji_list(text)]


def glyph_tokens(text: str) -> list[str]:
    """A text as the tokens drawn one image each: emoji, Latin/digit runs, every other character."""
    tokens: list[str] = []
    pos = 0
    for start, end in _emoji_spans(text):
        tokens.extend(_TOKEN.findall(text[pos:start]))
        tokens.append(text[start:end])
        pos = end
    tokens.extend(_TOKEN.findall(text[pos:]))
    return tokens


class GlyphRenderer:
    """Render tokens to square images.

    size: side in pixels (224 for CLIP); mode: ``L`` or ``RGB``; font / emoji_font: ``FontFile`` to
    use (default: found on the system); margin: blank share of the side on each edge; cache_dir:
    also keep images on disk there.
    """

    def __init__(self, size: int = 64, mode: str = "L", font: FontFile | None = None,
                 emoji_font: FontFile | None = None, margin: float = 0.06,
                 cache_dir: str | os.PathLike | None = None,
                 fallback_font: FontFile | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        if size < 8:
            raise ValueError(f"size must be at least 8 pixels, not {size}")
        self.size, self.mode, self.margin = size, mode, margin
        self.font = font or find_cjk_font()
        self.emoji_font = emoji_font if emoji_font is not None else find_emoji_font()
        self.fallback_font = fallback_font if fallback_font is not None else find_fallback_font()
        self.cache_dir = os.path.expanduser(os.fspath(cache_dir)) if cache_dir else None
        self._memory: dict[str, np.ndarray] = {}
        self.renders = 0  # images actually drawn (cache misses)

    def _key(self, token: str) -> str:
        fonts = "\x1f".join(f.key if f else "-" for f in (self.font, self.emoji_font, self.fallback_font))
        return f"{token}\x1f{fonts}\x1f{self.size}\x1f{self.mode}\x1f{self.margin}"

    def render(self, token: str) -> np.ndarray:
        """The image of one token: uint8 array (size, size) for L, (size, size, 3) for RGB."""
        key = self._key(token)
        image = self._memory.get(key)
        if image is not None:
            return image
        path = None
        if self.cache_dir:
            digest = hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()
            path = os.path.join(self.cache_dir, digest[:2], digest + ".png")
            if os.path.exists(path):
                with Image.open(path) as stored:
                    image = np.asarray(stored.convert(self.mode))
        if image is None:
            image = np.asarray(self._draw(token))
            self.renders += 1
            if path:
                png = io.BytesIO()
                Image.fromarray(image).save(png, format="PNG")
                write_atomic(path, png.getvalue())
        image.setflags(write=False)
        self._memory[key] = image
        return image

    def render_batch(self, tokens: Sequence[str]) -> np.ndarray:
        """Images of many tokens: uint8 array (n, size, size[, 3])."""
        shape = (self.size, self.size) if self.mode == "L" else (self.size, self.size, 3)
        if not tokens:
            return np.zeros((0, *shape), dtype=np.uint8)
        return np.stack([self.render(t) for t in tokens])

    def render_text(self, text: str) -> tuple[list[str], np.ndarray]:
        """A text's glyph tokens and their images."""
        tokens = glyph_tokens(text)
        return tokens, self.render_batch(tokens)

    # -- drawing ------------------------------------------------------------------------------

    def _draw(self, token: str) -> Image.Image:
        if token.startswith("##") and len(token) > 2:  # a wordpiece: draw the piece, not the marks
            token = token[2:]
        token = token.translate(PARAGRAPH_SEPARATORS)
        line = self._draw_line(token)
        side = self.size
        inner = max(1, round(side * (1 - 2 * self.margin)))
        scale = min(inner / line.width, inner / line.height)
        w, h = max(1, round(line.width * scale)), max(1, round(line.height * scale))
        line = line.resize((w, h), Image.Resampling.LANCZOS)
        canvas = Image.new("RGBA", (side, side), (255, 255, 255, 255))
        canvas.alpha_composite(line, ((side - w) // 2, (side - h) // 2))
        return canvas.convert(self.mode)

    def _draw_line(self, token: str) -> Image.Image:
        """The token on one transparent line, REF_SIZE high, as wide as its advance."""
        pieces: list[Image.Image] = []
        pos = 0
        spans = _emoji_spans(token) if self.emoji_font else []
        for start, end in [*spans, (len(token), len(token))]:
            if token[pos:start]:
                pieces.extend(self._draw_text(run, font) for run, font in self._runs(token[pos:start]))
            if start < end:
                pieces.append(self._draw_emoji(token[start:end]))
            pos = end
        if not pieces:  # whitespace only
            return Image.new("RGBA", (REF_SIZE, REF_SIZE), (255, 255, 255, 0))
        line = Image.new("RGBA", (sum(p.width for p in pieces), REF_SIZE), (255, 255, 255, 0))
        x = 0
        for piece in pieces:
            line.alpha_composite(piece, (x, 0))
            x += piece.width
        return line

    def _runs(self, text: str) -> list[tuple[str, FontFile]]:
        """Text split into runs of one font: the CJK font, or the fallback where it has no glyph."""
        runs: list[tuple[str, FontFile]] = []
        for ch in text:
            font = self.font
            if self.fallback_font and not has_glyph(self.font, ch) and has_glyph(self.fallback_font, ch):
                font = self.fallback_font
            if runs and runs[-1][1] == font:
                runs[-1] = (runs[-1][0] + ch, font)
            else:
                runs.append((ch, font))
        return runs

    def _draw_text(self, text: str, font_file: FontFile) -> Image.Image:
        font = _font(font_file, REF_SIZE)
        width = max(1, round(font.getlength(text)))
        piece = Image.new("RGBA", (width, REF_SIZE), (255, 255, 255, 0))
        ImageDraw.Draw(piece).text((0, round(REF_SIZE * IDEOGRAPHIC_BASELINE)), text, font=font,
                                   fill=(0, 0, 0, 255), anchor="ls")
        return piece

    def _draw_emoji(self, emoji_text: str) -> Image.Image:
        font = _font(self.emoji_font, EMOJI_NATIVE_SIZE)
        left, top, right, bottom = font.getbbox(emoji_text, anchor="ls")
        native = Image.new("RGBA", (max(1, right - left), max(1, bottom - top)), (255, 255, 255, 0))
        ImageDraw.Draw(native).text((-left, -top), emoji_text, font=font, embedded_color=True,
                                    anchor="ls")
        scale = REF_SIZE / max(native.width, native.height)
        w, h = max(1, round(native.width * scale)), max(1, round(native.height * scale))
        piece = Image.new("RGBA", (w, REF_SIZE), (255, 255, 255, 0))
        piece.alpha_composite(native.resize((w, h), Image.Resampling.LANCZOS), (0, (REF_SIZE - h) // 2))
        return piece


def clip_images(tokens: Iterable[str], renderer: GlyphRenderer | None = None) -> np.ndarray:
    """Images ready for CLIP preprocessing: (n, 224, 224, 3) uint8 RGB."""
    renderer = renderer or GlyphRenderer(size=CLIP_SIZE, mode="RGB")
    if renderer.size != CLIP_SIZE or renderer.mode != "RGB":
        raise ValueError("clip_images needs a 224 px RGB renderer")
    return renderer.render_batch(list(tokens))
