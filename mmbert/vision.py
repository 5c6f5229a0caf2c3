"""Vision inputs, once per vocabulary entry: glyph images for the glyph CNN, or frozen
CLIP image features for a vision table. Either way training pays a lookup, not a render or a CLIP pass."""
from __future__ import annotations

import hashlib
import io
import re

import numpy as np
import torch
from cloak.progress import progress_bar

from cloak.cache import cache_dir
from cloak.io import write_atomic
from render import GlyphRenderer

SPECIAL = re.compile(r"^\[[A-Za-z]+\d*\]$")  # [PAD], [CLS], [unused12]: no picture


def drawable(token: str) -> bool:
    return bool(token) and not SPECIAL.match(token)


def glyph_images(tokens: list[str], size: int, renderer: GlyphRenderer | None = None,
                 progress: bool | None = None) -> np.ndarray:
    """uint8 (len(tokens), size, size): each token's ink (255 = ink, 0 = paper; ``##`` pieces drawn
    without the ##); special tokens blank, so that they contribute nothing."""
    renderer = renderer or GlyphRenderer(size=size, mode="L")
    # A whole vocabulary takes ~15 s to draw; keep the table, keyed by the tokens, fonts and size.
    fonts = "|".join(f.key if f else "-" for f in (renderer.font, renderer.emoji_font, renderer.fallback_font))
    key = hashlib.sha1("\x1e".join([*tokens, fonts, str(size), str(renderer.margin)]).encode()).hexdigest()[:16]
    path = cache_dir() / f"glyph-table-{key}.npy"
    try:
        return np.load(path)
    except (OSError, ValueError):
        pass
    images = np.zeros((len(tokens), size, size), dtype=np.uint8)
    for i, token in enumerate(progress_bar(tokens, desc="glyphs", unit="token", progress=progress)):
        if drawable(token):
            images[i] = 255 - renderer.render(token.removeprefix("##") or token)
    buffer = io.BytesIO()
    np.save(buffer, images)
    try:  # a read-only or full disk only costs the redraw next time
        write_atomic(path, buffer.getvalue())
    except OSError:
        pass
    return images


def clip_features(tokens: list[str], model, processor=None, batch_size: int = 64,
                  progress: bool | None = None) -> torch.Tensor:
    """(len(tokens), dim) image features of each token's 224 px glyph from a CLIP model with
    ``get_image_features`` (transformers CLIPModel / ChineseCLIPModel); special tokens get zeros."""
    size = model.config.vision_config.image_size
    renderer = GlyphRenderer(size=size, mode="RGB")
    mean = torch.tensor(getattr(processor, "image_mean", None) or [0.48145466, 0.4578275, 0.40821073])
    std = torch.tensor(getattr(processor, "image_std", None) or [0.26862954, 0.26130258, 0.27577711])
    dim = model.config.projection_dim
    out = torch.zeros(len(tokens), dim)
    todo = [i for i, t in enumerate(tokens) if drawable(t)]
    model.eval()
    for start in progress_bar(range(0, len(todo), batch_size), desc="clip", unit="batch", progress=progress):
        rows = todo[start:start + batch_size]
        images = renderer.render_batch([tokens[i].removeprefix("##") or tokens[i] for i in rows])
        pixels = torch.from_numpy(images).float().div(255.0).permute(0, 3, 1, 2)
        with torch.no_grad():
            feats = model.get_image_features(pixel_values=(pixels - mean[:, None, None]) / std[:, None, None])
        out[rows] = getattr(feats, "pooler_output", feats)
    return out
