"""A picture for a person: a text and its cloaked variants as rows of glyph images."""
from __future__ import annotations

import numpy as np
from PIL import Image

from .glyphs import GlyphRenderer

GAP = 6  # pixels between rows and around the picture


def preview_image(texts: list[str], renderer: GlyphRenderer | None = None) -> Image.Image:
    """One row of glyph images per text, top to bottom, on white."""
    renderer = renderer or GlyphRenderer(size=48, mode="RGB")
    rows = []
    for text in texts:
        _, images = renderer.render_text(text)
        if renderer.mode == "L":
            images = np.repeat(images[..., None], 3, axis=-1)
        rows.append(np.concatenate(list(images), axis=1) if len(images) else
                    np.full((renderer.size, renderer.size, 3), 255, np.uint8))
    width = max(r.shape[1] for r in rows) + 2 * GAP
    height = sum(r.shape[0] for r in rows) + GAP * (len(rows) + 1)
    canvas = np.full((height, width, 3), 255, np.uint8)
    y = GAP
    for row in rows:
        canvas[y:y + row.shape[0], GAP:GAP + row.shape[1]] = row
        y += row.shape[0] + GAP
    return Image.fromarray(canvas)
