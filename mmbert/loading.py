"""Making and loading MMBERT models with their tokenizer and featurizer.

- :func:`model_for_stage`: the model a training stage starts from (a BERT to upcycle, a from-scratch
  config, or the previous stage's MMBERT), with its vision inputs filled in: glyph images for the glyph
  CNN, or the table of a frozen image encoder (``features.vision``).
- :func:`load_model`: a trained MMBERT folder, ready to predict on raw text.
"""
from __future__ import annotations

import contextlib
import os

import torch

from cloak.common.models import loading_model

from .configuration import MMBertConfig
from .data import Featurizer
from .folder import NOT_MMBERT, is_mmbert, peek_features
from .modeling import MMBertForSequenceClassification, upcycle_from_bert
from .presets import MM_FIELDS
from .tokenization import backbone_tokenizer, load_tokenizer, piece_texts


@contextlib.contextmanager
def quiet_loading(report: bool = False):
    """transformers' progress bars ("Loading weights", "Writing model shards") silenced while a model
    loads or saves: through the Python API nothing else would quiet them, and they flood a log. With
    ``report=False`` its load report ("classifier.weight: MISSING, newly initialized") is silenced too:
    a new head on a pretrained encoder is what fine-tuning starts from. Errors still show."""
    from transformers.utils import logging

    verbosity, bars = logging.get_verbosity(), logging.is_progress_bar_enabled()
    if not report:
        logging.set_verbosity_error()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        logging.set_verbosity(verbosity)
        if bars:
            logging.enable_progress_bar()


class StageError(ValueError):
    """The model given cannot start this stage (wrong stage, skipped stages without permission)."""


def load_backbone(source: str, layers: int | None = None, attention: str | None = None):
    """A pretrained encoder (any transformers ``AutoModel``: BERT, XLM-R, e5 ...; a masked-LM folder
    gives its encoder) with its first ``layers`` layers (None: all; dropping upper layers of a pretrained
    encoder is standard, and halves its cost) and ``attention`` as transformers' attention kernel.

    Its pooler is dropped unless the checkpoint trained one: e5 and a masked-LM checkpoint have none,
    and a freshly drawn pooler would put a random projection between the encoder and the head."""
    from transformers import AutoConfig, AutoModel

    extra = {"attn_implementation": attention} if attention else {}
    with quiet_loading(), loading_model("backbone", source, hint="pass a BERT folder: --from DIR or --backbone DIR "
                                        "(`mmbert pretrain` makes one from your posts)"):
        config = AutoConfig.from_pretrained(source)
    if layers is not None:
        if layers > config.num_hidden_layers:
            raise ValueError(f"backbone_layers is {layers}, but {source} has only {config.num_hidden_layers} layers")
        extra["num_hidden_layers"] = layers
    with quiet_loading(), loading_model("backbone", source):
        encoder, info = AutoModel.from_pretrained(source, output_loading_info=True, **extra)
    if any(k.startswith("pooler.") for k in info["missing_keys"]):
        encoder.pooler = None
    return encoder


def _grow_vocabulary(model: MMBertForSequenceClassification, bert_vocab: int) -> None:
    """Rows past the BERT checkpoint's vocabulary (the added emoji) start random, like BERT's own."""
    embeddings = model.mmbert.embeddings.word_embeddings.weight
    with torch.no_grad():
        embeddings[bert_vocab:].normal_(0.0, model.config.initializer_range)


def default_speech_cache() -> str:
    """Where speech is cached unless told: ``speech/`` in the user cache folder (``MMCLOAK_CACHE``), not the
    current folder (Kokoro's audio of a few thousand posts is gigabytes)."""
    from cloak.common.cache import cache_dir

    return str(cache_dir() / "speech")


def saved_features(features: dict) -> dict:
    """The ``features`` a model keeps in its config: no speech cache (a folder of this machine, given at
    load or the default), and every file named by a path made absolute, so a model folder moved elsewhere,
    or used from another folder, finds what it was trained with."""
    out = {k: v for k, v in features.items() if k != "speech_cache"}

    def absolute(value):
        return os.path.abspath(value) if isinstance(value, str) and os.path.exists(value) else value

    out["tts"] = {k: absolute(v) if k == "model" else v for k, v in (features.get("tts") or {}).items()}
    if "whisper" in out:
        out["whisper"] = absolute(out["whisper"])
    if out.get("vision"):
        out["vision"] = {k: absolute(v) if k in ("model", "pretrained") else v for k, v in out["vision"].items()}
    return out


def speech_features(features: dict, speech_dim: int | None = None, stride: int = 4, max_tokens: int = 64):
    """The :class:`SpeechFeatures` that ``features`` (a run config's section) describes, pooling
    ``stride`` frames a token and keeping at most ``max_tokens``."""
    from .speech_features import SpeechFeatures

    tts, whisper = dict(features.get("tts") or {}), features.get("whisper")
    if not whisper:
        raise ValueError("speech needs a Whisper encoder: set features.whisper (a name like 'base' or a .pt path)")
    if tts.get("name") == "kokoro-onnx" and not tts.get("model"):
        raise ValueError("the kokoro-onnx TTS backend needs features.tts.model (path to kokoro-v1.0.int8.onnx); "
                         "pass --tts-model or use --tts tone")
    speech = SpeechFeatures(features.get("speech_cache") or default_speech_cache(), tts, whisper,
                            stride, max_tokens, whisper_mode=features.get("whisper_mode", "trimmed"))
    if speech_dim is not None and speech.dim != speech_dim:
        raise ValueError(f"the model reads speech frames of width {speech_dim}, Whisper {whisper!r} gives {speech.dim}")
    return speech


def frozen_vision_table(features: dict, tokenizer, progress: bool | None = None) -> tuple[torch.Tensor, dict] | None:
    """(table, source) when ``features.vision`` names a frozen image encoder: its features of every
    vocabulary entry's glyph, and what made them (``MMBertConfig.vision_source``); None for the glyph CNN."""
    from .vision import FROZEN_ENCODERS, make_frozen_encoder, vision_table

    vision = features.get("vision") or {"encoder": "glyph-cnn"}
    if vision["encoder"] not in FROZEN_ENCODERS:
        return None
    encoder = make_frozen_encoder(vision)
    return vision_table(piece_texts(tokenizer), encoder, progress=progress), encoder.source


def fill_glyph_images(model: MMBertForSequenceClassification, tokenizer, progress: bool | None = None) -> None:
    """The glyph CNN's input: the image of every vocabulary entry, once."""
    encoder = model.mmbert.vision_encoder
    if encoder.glyphs.any():
        return
    from .vision import glyph_images

    config = model.config
    tokens = piece_texts(tokenizer, config.vocab_size)
    encoder.glyphs.copy_(torch.from_numpy(glyph_images(tokens, config.glyph_size, progress=progress)))


# How the mixture routes and balances: stages 1 and 2 force each modality through its own expert, so a
# stage-3 run may still change these on a stage-2 model (the router's variants, compared on validation).
STAGE3_MODEL_FIELDS = ("aux_loss_weight", "feed_forward")


def retune_mixture(model: MMBertForSequenceClassification, model_settings: dict) -> None:
    """A stage-2 MMBERT with the run's ``aux_loss_weight`` and ``feed_forward`` where it sets them:
    ``experts`` and ``modality`` share their experts, so a mixture may drop its (never trained) routers for
    routing by modality; a ``dense`` model has other parameters and cannot change."""
    config = model.config
    wanted = {k: model_settings[k] for k in STAGE3_MODEL_FIELDS if model_settings.get(k) is not None}
    config.aux_loss_weight = wanted.get("aux_loss_weight", config.aux_loss_weight)
    change = wanted.get("feed_forward", config.feed_forward)
    if change == config.feed_forward:
        return
    if change != "modality" or config.feed_forward != "experts":
        raise StageError(f"feed_forward {config.feed_forward!r} cannot become {change!r} after stage 2: train the "
                         "model from stage 1 with it")
    config.feed_forward = change
    for layer in model.mmbert.layers:
        layer.moe.router = None


def model_for_stage(stage: int, run: dict, from_dir: str | None, allow_skip: bool = False,
                    num_labels: int = 2, progress: bool | None = None, seed: int = 0):
    """(model, tokenizer) to start ``stage`` from. Stage 1 starts from a BERT (``from_dir`` or the
    config's ``backbone``) or from scratch; later stages from the previous stage's MMBERT, with a glyph
    CNN frozen into a table. New weights (aligners, routers, a from-scratch backbone) depend on ``seed``
    only."""
    if is_mmbert(from_dir):
        with quiet_loading(report=True):  # a key missing from our own folder would be worth a warning
            model = MMBertForSequenceClassification.from_pretrained(from_dir)
        done = model.config.stage
        if done >= stage:
            raise StageError(f"{from_dir} has already finished stage {done}; stage {stage} starts from a "
                             f"stage-{stage - 1} model (to continue an interrupted run use --resume)")
        if done < stage - 1 and not allow_skip:
            raise StageError(f"{from_dir} finished stage {done}, so stage {stage} would skip stage "
                             f"{done + 1}; pass --skip-stages to do so on purpose (Xue et al. (2025)'s ablation)")
        if stage > 1:
            model.mmbert.freeze_vision_encoder()
        if stage == 3:
            retune_mixture(model, run["model"])
        return model, load_tokenizer(from_dir)
    if stage > 1 and not allow_skip:
        if from_dir:
            raise StageError(f"--from {from_dir}: {NOT_MMBERT if os.path.isdir(from_dir) else 'no such folder'}; "
                             f"stage {stage} starts from the stage-{stage - 1} model")
        raise StageError(f"stage {stage} starts from the stage-{stage - 1} model: pass --from DIR "
                         "(or --skip-stages to start from a BERT, Xue et al.'s ablation)")
    mm = {k: v for k, v in run["model"].items() if k in MM_FIELDS}
    backbone = from_dir or run["model"].get("backbone")
    tokenizer = backbone_tokenizer(backbone)
    if "speech" in mm.get("modalities", ("speech",)) and run["features"].get("whisper"):
        mm["speech_dim"] = speech_features(run["features"]).dim
    table = None
    if "vision" in mm.get("modalities", ("vision",)):
        # Before the model, as Whisper: its width is the model's vision_dim, and it may draw random numbers.
        table = frozen_vision_table(run["features"], tokenizer, progress)
        if table is not None:
            mm.update(vision_encoder="table", vision_dim=table[0].shape[1], vision_source=table[1])
    # Seeded here, after whatever loading came before (Whisper, say) drew from the random stream.
    torch.manual_seed(seed)
    if backbone:
        bert = load_backbone(backbone, run["model"].get("backbone_layers"))
        bert_vocab = bert.config.vocab_size
        if len(tokenizer) > bert_vocab:  # the emoji added to its tokenizer
            bert.resize_token_embeddings(len(tokenizer))
        model = upcycle_from_bert(bert, MMBertConfig.from_bert_config(bert.config, num_labels=num_labels, **mm))
        _grow_vocabulary(model, bert_vocab)
    else:
        shape = {k: v for k, v in run["model"].items() if k not in (*MM_FIELDS, "backbone", "backbone_layers")}
        config = MMBertConfig(vocab_size=len(tokenizer), num_labels=num_labels, **shape, **mm)
        model = MMBertForSequenceClassification(config)
    model.config.features = saved_features(run["features"])
    if table is not None:
        # rows past the tokenizer's (ids a backbone has but never uses) stay zero
        model.mmbert.vision_encoder.features[:len(table[0])] = table[0]
    elif "vision" in model.config.modalities:
        fill_glyph_images(model, tokenizer, progress)
    if stage > 1:  # the ablation that skips stage 1: the (untrained) glyph CNN is frozen all the same
        model.mmbert.freeze_vision_encoder()
    return model, tokenizer


def make_featurizer(model: MMBertForSequenceClassification, tokenizer, features: dict | None = None,
                    max_length: int | None = None) -> Featurizer:
    """The featurizer a model needs: texts cut to ``max_length`` tokens (default: the tokenizer's
    ``model_max_length``, saved with the model, and never more than its position table), speech
    features when it reads speech (settings from ``features``, default: those saved in its config)."""
    config = model.config
    max_length = min(max_length or tokenizer.model_max_length, config.positions)
    speech = None
    if "speech" in config.modalities:
        speech = speech_features(features or config.features, config.speech_dim, config.speech_pool,
                                 config.max_speech_tokens)
    return Featurizer(tokenizer, max_length, speech)


def load_model(model_dir: str, features: dict | None = None, max_length: int | None = None):
    """(model in eval mode, featurizer) of a trained MMBERT folder; texts are cut as in training."""
    peek_features(model_dir)  # a clear error for a folder that is not MMBERT
    with quiet_loading(report=True):
        model = MMBertForSequenceClassification.from_pretrained(model_dir).eval()
    return model, make_featurizer(model, load_tokenizer(model_dir), features, max_length)
