"""Run configurations: presets (``paper``, ``small``, ``tiny``) and YAML files over them.

A run configuration has three parts:

- ``model``: :class:`MMBertConfig` fields for a model built from scratch, plus ``backbone``: a BERT
  checkpoint (hub name or folder, e.g. the output of ``mmbert pretrain`` or multilingual-e5-small) to
  upcycle in stage 1, and ``backbone_layers``: how many of its layers to keep (the first N; default all).
- ``features``: how inputs are made from text: ``tts`` (backend arguments for ``speech.make_backend``),
  ``whisper`` (openai-whisper name, .pt path, or ``random-tiny``: random weights, no download),
  ``whisper_mode``, ``speech_cache`` (folder of audio and encoder frames, shared with ``cloak synth``;
  default: ``speech/`` under the user cache folder, ``MMCLOAK_CACHE``), ``vision`` (the vision encoder:
  ``{encoder: glyph-cnn}``, the trainable glyph CNN; or a frozen image encoder whose features of every
  vocabulary entry's glyph become the model's table: ``{encoder: open_clip, model: ViT-B-32, pretrained:
  TAG_OR_FILE}``, ``{encoder: transformers, model: NAME_OR_DIR}``; see ``mmbert.vision``).
- ``train``: batch size, text length, seed, early-stopping patience, ``checkpoint_minutes`` (how often
  a checkpoint is written within an epoch; default 10), per stage the epochs and
  learning rates (Xue et al. (2025)'s Appendix A in ``paper``), stage 1's ``loss`` (``mse``, theirs, or
  ``contrastive``: see ``mmbert.train``), stage 3's ``text_mask`` (the share of text tokens masked in
  training, 0 by default), ``term_mask`` (the share of target terms masked whole, 0 by default) and
  ``term_holdout`` (the share of those terms never masked, held out for a test; 0 by default; see
  ``mmbert.train``), and ``pretrain`` (epochs, lr) for ``mmbert pretrain``.

A YAML file may name a ``preset`` to start from and override any field::

    preset: small
    train: {stage3: {epochs: 10}}

Every run configuration is checked against one declaration, ``RUN_CONFIG`` (``cloak.common.params``): a
misspelt key (``bach_size``) or a value out of range (``batch_size: 0``) is refused, naming the key.
"""
from __future__ import annotations

import copy
import os
import re

from cloak.common.params import InstanceOf, Interval, Options, ParameterError, unknown_key, validate
from speech import BACKENDS

from .configuration import BERT_SHAPE, MMBertConfig
from .loop_settings import LoopSettings

MM_FIELDS = ("modalities", "speech_dim", "speech_pool", "max_speech_tokens", "vision_dim", "glyph_size",
             "feed_forward", "moe_top_k", "aux_loss_weight", "pooling")
RATE = Interval(float, 0, closed="neither")
LOOP = LoopSettings._parameter_constraints  # the epoch loop's fields, declared there
EPOCHS = LOOP["epochs"]
PATH = [InstanceOf(str), None]
# The trainable glyph CNN, or a frozen image encoder of mmbert.vision.FROZEN_ENCODERS (named here so
# that checking a run config needs no torch; a test checks the two agree), each with the keys of
# features.vision it takes (True: and needs). Not configuration.VISION_ENCODERS: those are how the model reads
# the vision features these make.
VISION_FEATURE_ENCODERS = {"glyph-cnn": {}, "transformers": {"model": True},
                           "open_clip": {"model": True, "pretrained": False}}
GROUPS = ("aligners", "expert_text", "expert_speech", "expert_vision", "routers", "head", "backbone")

RUN_CONFIG = {
    "model": {"backbone": PATH, "backbone_layers": [Interval(int, 1), None], **BERT_SHAPE, **{k: MMBertConfig._parameter_constraints[k] for k in MM_FIELDS}},
    "features": {
        "tts": {"name": Options(*BACKENDS), "model": PATH, "voice": InstanceOf(str),
                "speed": RATE, "max_chars": Interval(int, 1)},
        "whisper": PATH, "whisper_mode": Options("trimmed", "padded"), "speech_cache": PATH,
        "vision": {"encoder": Options(*VISION_FEATURE_ENCODERS), "model": PATH, "pretrained": PATH},
    },
    "train": {
        "batch_size": LOOP["batch_size"], "max_length": Interval(int, 3), "seed": LOOP["seed"],
        "patience": LOOP["patience"], "checkpoint_minutes": LOOP["checkpoint_minutes"],
        "weight_decay": Interval(float, 0), "warmup_ratio": LOOP["warmup_ratio"],
        "pretrain": {"epochs": EPOCHS, "lr": RATE, "mlm_probability": Interval(float, 0, 1, closed="neither"),
                     "patience": LOOP["patience"]},
        "stage1": {"epochs": EPOCHS, "lr": RATE, "loss": Options("mse", "contrastive")},
        "stage2": {"epochs": EPOCHS, "head_warmup_epochs": Interval(int, 0), "lr_aligners": RATE,
                   "lr_text_expert": RATE, "lr_experts": RATE, "lr_head": RATE},
        "stage3": {"epochs": EPOCHS, "lr": RATE, "lr_overrides": {g: RATE for g in ("experts", *GROUPS)},
                   "text_mask": Interval(float, 0, 1, closed="left"),
                   "term_mask": Interval(float, 0, 1, closed="left"),
                   "term_holdout": Interval(float, 0, 1, closed="left")},
    },
}
# Settings every preset shares unless it says otherwise.
TRAIN_DEFAULTS = {"seed": 0, "checkpoint_minutes": 10, "weight_decay": 0.01, "warmup_ratio": 0.0,
                  "pretrain": {"epochs": 5, "lr": 5e-4, "mlm_probability": 0.15, "patience": 2}}

STAGES = {
    # Appendix A: stage 1 aligners 1e-3; stage 2 aligners 1e-3, text expert 5e-6, speech / vision
    # experts 5e-5; stage 3 everything 5e-4 with aux weight 1e-2, AdamW, linear decay, 50 epochs.
    "stage1": {"epochs": 3, "lr": 1e-3, "loss": "mse"},
    "stage2": {"epochs": 3, "head_warmup_epochs": 1, "lr_aligners": 1e-3, "lr_text_expert": 5e-6,
               "lr_experts": 5e-5, "lr_head": 5e-5},
    "stage3": {"epochs": 50, "lr": 5e-4, "lr_overrides": {}, "text_mask": 0.0, "term_mask": 0.0,
               "term_holdout": 0.0},
}

# Sections an override replaces whole: a vision encoder's model and pretrained mean nothing to another.
WHOLE = ("vision",)


def merge(base: dict, override: dict) -> dict:
    """``base`` with ``override`` laid over it, dicts merged key by key (but those named in ``WHOLE``)."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        nested = isinstance(value, dict) and isinstance(out.get(key), dict) and key not in WHOLE
        out[key] = merge(out[key], value) if nested else copy.deepcopy(value)
    return out


PRESETS: dict[str, dict] = {
    "paper": {
        "model": {"backbone": "bert-base-chinese", "speech_dim": 512},
        "features": {"tts": {"name": "kokoro", "voice": "zf_xiaobei"}, "whisper": "base",
                     "whisper_mode": "trimmed",
                     "vision": {"encoder": "transformers", "model": "OFA-Sys/chinese-clip-vit-base-patch16"}},
        "train": {"batch_size": 32, "max_length": 128, "patience": 5, **copy.deepcopy(STAGES)},
    },
    "small": {
        "model": {"backbone": None, "hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
                  "intermediate_size": 512, "max_position_embeddings": 128, "vision_dim": 256,
                  "glyph_size": 32, "speech_dim": 512, "speech_pool": 8, "max_speech_tokens": 32, "pooling": "mean"},
        "features": {"tts": {"name": "kokoro-onnx", "model": None, "voice": "zf_xiaobei"}, "whisper": "base",
                     "whisper_mode": "trimmed", "vision": {"encoder": "glyph-cnn"}},
        "train": {"batch_size": 32, "max_length": 64, "patience": 3,
                  "pretrain": {"epochs": 3, "lr": 5e-4},
                  "stage1": {"epochs": 3, "lr": 1e-3, "loss": "mse"},
                  # A small from-scratch backbone needs larger steps than Xue et al.'s fine-tuned BERT.
                  "stage2": {**STAGES["stage2"], "epochs": 5, "lr_text_expert": 1e-4, "lr_experts": 1e-3,
                             "lr_head": 1e-3},
                  "stage3": {**STAGES["stage3"], "epochs": 8, "lr": 1e-4,
                             "lr_overrides": {"aligners": 1e-3, "routers": 1e-3}}},
    },
    "tiny": {
        "model": {"backbone": None, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
                  "intermediate_size": 64, "max_position_embeddings": 64, "vision_dim": 16,
                  "glyph_size": 16, "speech_dim": 64},
        "features": {"tts": {"name": "tone"}, "whisper": "random-tiny", "whisper_mode": "trimmed",
                     "vision": {"encoder": "glyph-cnn"}},
        "train": {"batch_size": 8, "max_length": 32, "patience": 2,
                  "pretrain": {"epochs": 1, "lr": 5e-4},
                  "stage1": {"epochs": 1, "lr": 1e-3, "loss": "mse"},
                  "stage2": {**STAGES["stage2"], "epochs": 2},
                  "stage3": {**STAGES["stage3"], "epochs": 2}},
    },
}
"""The run configs by name (``mmbert train --config NAME``): ``paper`` (Xue et al. 2025's settings), ``small``
(a model a CPU can train) and ``tiny`` (a first run), each a full config as ``load_run_config`` gives it."""
for _preset in PRESETS.values():
    _preset["train"] = merge(TRAIN_DEFAULTS, _preset["train"])


def check_run_config(run: dict) -> dict:
    """``run`` checked against ``RUN_CONFIG``: every key known, every value in range, every training
    setting present; returns it with values normalised (``1e-3``, which YAML reads as a string, becomes
    a number). ``load_run_config`` makes configurations that pass."""
    checked = validate(run, RUN_CONFIG, "")
    for section in ("model", "features", "train"):
        if section not in checked:
            raise ParameterError(f"section '{section}' is missing")
    missing = _missing(PRESETS["small"]["train"], checked["train"], "train")
    if missing:
        raise ParameterError(f"'{missing}' is missing (start from a preset: load_run_config)")
    _check_vision(checked["features"].get("vision"))
    return checked


def _check_vision(vision: dict | None) -> None:
    """``features.vision`` has an encoder and the keys that encoder takes (``VISION_FEATURE_ENCODERS``)."""
    if vision is None:
        return
    encoder = vision.get("encoder")
    if encoder is None:
        raise ParameterError(f"features.vision: 'encoder' is missing (one of {', '.join(VISION_FEATURE_ENCODERS)})")
    takes = VISION_FEATURE_ENCODERS[encoder]
    for key in ("model", "pretrained"):
        if vision.get(key) is not None and key not in takes:
            raise ParameterError(f"features.vision: encoder {encoder} takes no '{key}'"
                                 + (" (it is trained here)" if not takes else ""))
        if takes.get(key) and not vision.get(key):
            raise ParameterError(f"features.vision: encoder {encoder} needs '{key}' (a model name or folder)")


def _missing(template: dict, values: dict, where: str) -> str | None:
    for key, value in template.items():
        if key == "lr_overrides":
            continue
        if key not in values:
            return f"{where}.{key}"
        if isinstance(value, dict):
            found = _missing(value, values[key], f"{where}.{key}")
            if found:
                return found
    return None


def load_run_config(spec: str | dict) -> dict:
    """A preset name, a YAML file path, or a dict (with an optional ``preset`` key) -> a full run config."""
    if isinstance(spec, str) and spec in PRESETS:
        return copy.deepcopy(PRESETS[spec])
    if isinstance(spec, str):
        if not os.path.isfile(spec):
            raise ValueError(f"--config {spec!r} is neither a preset ({', '.join(PRESETS)}) nor a YAML file")
        import yaml

        with open(spec, encoding="utf-8") as f:
            try:
                spec = yaml.safe_load(f) or {}
            except yaml.YAMLError as e:
                raise ValueError(f"{f.name}: not valid YAML: {e}") from None
        if not isinstance(spec, dict):
            raise ValueError(f"{f.name}: expected a mapping with model / features / train sections")
        where = f.name
    else:
        where = "config"
    spec = dict(spec)
    base = spec.pop("preset", "small")
    if not isinstance(base, str) or base not in PRESETS:
        raise unknown_key(base, list(PRESETS), where, kind="preset")
    try:
        return check_run_config(merge(PRESETS[base], spec))
    except ParameterError as e:
        raise ParameterError(f"{where}: {e}") from None


def parse_vision(spec: str) -> dict:
    """``--vision`` (``ENCODER[:KEY=VALUE...]``: ``glyph-cnn``, ``open_clip:model=ViT-B-32:pretrained=FILE``)
    as a checked ``features.vision`` section; a colon inside a value (``model=hf-hub:ORG/REPO``) stays."""
    encoder, *params = re.split(r":(?=\w+=)", spec.strip())
    vision = {"encoder": encoder}
    for param in params:
        key, _, value = param.partition("=")
        vision[key] = value
    try:
        vision = validate(vision, RUN_CONFIG["features"]["vision"], "--vision")
        _check_vision(vision)
    except ParameterError as e:
        message = str(e).removeprefix("--vision: ").removeprefix("features.vision: ")
        raise ParameterError(f"--vision {spec}: {message}") from None
    return vision
