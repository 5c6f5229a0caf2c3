"""Vision inputs, once per vocabulary entry: glyph images for the glyph CNN, or the features of a
frozen image encoder (a transformers CLIP, or any open_clip model) for a vision table. Either way
training pays a lookup, not a render or a CLIP pass."""
from __future__ import annotations

import difflib
import hashlib
import io
import os
import re
import warnings

import numpy as np
import torch

from cloak.common.cache import cache_dir
from cloak.common.io import write_atomic
from cloak.common.models import loading_model
from cloak.common.progress import progress_bar
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


class FrozenImageEncoder:
    """A frozen image encoder that gives each vocabulary entry's glyph its row of the vision table.

    A subclass loads its model in ``__init__(model, pretrained)`` and sets ``image_size`` (the side its
    glyph images are drawn at) and ``source`` (what made the table: saved in the MMBERT config as
    ``vision_source``); ``encode`` turns a batch of RGB glyph images into features. Registered by
    ``name`` in ``FROZEN_ENCODERS``, the names ``features.vision.encoder`` takes besides ``glyph-cnn``.
    """

    name = ""
    image_size = 224
    source: dict

    def encode(self, images: np.ndarray) -> torch.Tensor:
        """(n, image_size, image_size, 3) uint8 RGB -> (n, dim) float features."""
        raise NotImplementedError


FROZEN_ENCODERS: dict[str, type[FrozenImageEncoder]] = {}


def frozen_encoder(cls: type[FrozenImageEncoder]) -> type[FrozenImageEncoder]:
    FROZEN_ENCODERS[cls.name] = cls
    return cls


@frozen_encoder
class TransformersCLIP(FrozenImageEncoder):
    """A transformers CLIP model with ``get_image_features`` (``CLIPModel``, ``ChineseCLIPModel``), by
    hub name or folder; its processor's mean and std where the folder has one."""

    name = "transformers"

    def __init__(self, model: str, pretrained: str | None = None) -> None:
        if pretrained:
            raise ValueError(f"vision encoder 'transformers' takes its weights from model ({model!r}), "
                             f"not from pretrained ({pretrained!r})")
        from transformers import AutoModel, AutoProcessor

        with loading_model("CLIP model", model, hint="set features.vision.model to a CLIP model's folder"):
            self.model = AutoModel.from_pretrained(model).eval()
        try:
            processor = AutoProcessor.from_pretrained(model).image_processor
        except (OSError, ValueError, AttributeError):
            processor = None
        self.image_size = self.model.config.vision_config.image_size
        self.mean = torch.tensor(getattr(processor, "image_mean", None) or [0.48145466, 0.4578275, 0.40821073])
        self.std = torch.tensor(getattr(processor, "image_std", None) or [0.26862954, 0.26130258, 0.27577711])
        self.source = {"encoder": self.name, "model": model, "image_size": self.image_size}

    def encode(self, images: np.ndarray) -> torch.Tensor:
        pixels = torch.from_numpy(images).float().div(255.0).permute(0, 3, 1, 2)
        pixels = (pixels - self.mean[:, None, None]) / self.std[:, None, None]
        feats = self.model.get_image_features(pixel_values=pixels)
        return getattr(feats, "pooler_output", feats)


@frozen_encoder
class OpenCLIP(FrozenImageEncoder):
    """An open_clip model: ``open_clip.create_model_and_transforms(model, pretrained=...)`` and its own
    inference transform (resize, crop, the model's mean and std). ``model``: a name in
    ``open_clip.list_models()`` (``ViT-B-32``), ``hf-hub:ORG/REPO`` or ``local-dir:DIR``; ``pretrained``:
    an open_clip tag (``laion2b_s34b_b79k``) or a checkpoint file. Without ``pretrained`` the weights
    are random (seeded, so the table repeats): for tests and timing, not for training."""

    name = "open_clip"

    def __init__(self, model: str, pretrained: str | None = None) -> None:
        try:
            import open_clip
        except ImportError as e:
            raise ImportError(f"vision encoder open_clip: {e}", name="mmcloak[open-clip]") from None
        named = not model.startswith(("hf-hub:", "local-dir:"))  # those two bring their own weights
        if named and model not in open_clip.list_models():
            names = open_clip.list_models()
            close = difflib.get_close_matches(model, names, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ValueError(f"open_clip has no model {model!r}; {hint}its models: {', '.join(names)}")
        if named and pretrained is None:
            warnings.warn(f"open_clip {model} without pretrained weights: the vision table is random features")
        try:
            with torch.random.fork_rng():  # random weights that repeat, and the caller's stream untouched
                torch.manual_seed(0)
                self.model, _, self.preprocess = open_clip.create_model_and_transforms(model, pretrained=pretrained)
        except RuntimeError as e:  # an unknown tag or a missing file; a tag whose download failed
            tags = open_clip.list_pretrained_tags_by_model(model)
            known = f" (its tags: {', '.join(tags)}; or a checkpoint file)" if tags else " (a checkpoint file)"
            raise ValueError(f"open_clip {model}, pretrained {pretrained!r}: {e}{known}") from None
        self.model.eval()
        preprocess = open_clip.get_model_preprocess_cfg(self.model)
        size = preprocess["size"]
        self.image_size = max(size) if isinstance(size, (tuple, list)) else size
        self.source = {"encoder": self.name, "model": model, "pretrained": pretrained,
                       "open_clip": open_clip.__version__,
                       "preprocess": {k: list(v) if isinstance(v, tuple) else v for k, v in preprocess.items()}}
        if pretrained and os.path.isfile(pretrained):  # a file's name says less than its bytes
            self.source["pretrained_sha256"] = file_sha256(pretrained)

    def encode(self, images: np.ndarray) -> torch.Tensor:
        return self.model.encode_image(self.pixels(images))

    def pixels(self, images: np.ndarray) -> torch.Tensor:
        """open_clip's inference transform of each image, stacked."""
        from PIL import Image

        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # its tensor ops on one small image lose more to thread start-up than they gain
        try:
            return torch.stack([self.preprocess(Image.fromarray(image)) for image in images])
        finally:
            torch.set_num_threads(threads)


def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def make_frozen_encoder(vision: dict) -> FrozenImageEncoder:
    """The frozen encoder a run config's ``features.vision`` names (``encoder``, ``model``, ``pretrained``)."""
    name = vision.get("encoder")
    if name not in FROZEN_ENCODERS:
        raise ValueError(f"features.vision: {name!r} is not a frozen image encoder ({', '.join(FROZEN_ENCODERS)})")
    return FROZEN_ENCODERS[name](vision["model"], vision.get("pretrained"))


def vision_table(tokens: list[str], encoder: FrozenImageEncoder, batch_size: int = 64,
                 progress: bool | None = None) -> torch.Tensor:
    """(len(tokens), dim) features of each token's glyph (drawn at the encoder's image size, RGB; a
    ``##`` piece drawn without the ##), every distinct picture encoded once; special tokens get zeros."""
    rows: dict[str, list[int]] = {}
    for i, token in enumerate(tokens):
        if drawable(token):
            rows.setdefault(token.removeprefix("##") or token, []).append(i)
    pictures = list(rows)
    fonts = GlyphRenderer(size=encoder.image_size, mode="RGB")
    out = None
    bar = progress_bar(total=len(pictures), desc=f"vision table ({encoder.name})", unit="glyph", progress=progress)
    for start in range(0, len(pictures), batch_size):
        # A renderer per batch: one keeps every image it drew (a vocabulary at 224 px RGB is 3 GB).
        renderer = GlyphRenderer(size=encoder.image_size, mode="RGB", font=fonts.font, emoji_font=fonts.emoji_font,
                                 fallback_font=fonts.fallback_font)
        batch = pictures[start:start + batch_size]
        with torch.inference_mode():
            feats = encoder.encode(renderer.render_batch(batch)).float()
        if out is None:
            out = torch.zeros(len(tokens), feats.shape[1])
        for picture, row in zip(batch, feats):
            out[rows[picture]] = row
        bar.update(len(batch))
    bar.close()
    if out is None:
        raise ValueError("no drawable token in the vocabulary")
    return out
