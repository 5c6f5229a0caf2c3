"""MMBertConfig: a BERT config plus the modalities, aligners, vision encoder and mixture of experts."""
from __future__ import annotations

from transformers import BertConfig

MODALITIES = ("text", "speech", "vision")
VISION_ENCODERS = ("glyph-cnn", "table")


class MMBertConfig(BertConfig):
    """Configuration of :class:`mmbert.modeling.MMBertForSequenceClassification`.

    Every BERT field keeps its meaning (so a pretrained BERT's config converts with
    :meth:`from_bert_config`); ``type_vocab_size`` is 3, one token type per modality. The rest:

    modalities: which of ``text``, ``speech``, ``vision`` the model reads; one expert per modality in
        every layer's feed-forward (one modality = a plain BERT).
    speech_dim: width of the speech encoder's frames (Whisper base: 512). The featurizer average-pools
        frames ``speech_pool`` at a time and keeps at most ``max_speech_tokens`` of them.
    vision_encoder: ``glyph-cnn`` (a small trainable CNN over a ``glyph_size``-pixel image of every
        vocabulary entry, stored in the model) or ``table`` (frozen features, one row per vocabulary
        entry, computed once by a CLIP image encoder); ``vision_dim`` is its output width. The glyph
        CNN trains in stage 1 only; stage 2 turns it into a ``table`` of its features.
    moe_top_k: 0 routes every token through all experts, weighted (the paper); 1 or 2 keeps only the
        top-k weights per token (renormalised) and runs each expert on its tokens only.
    aux_loss_weight: weight of the load-balancing loss ``N * sum_i p_i f_i`` in the training loss.
    pooling: what the classification head reads: ``cls`` (BERT's pooler on [CLS]) or ``mean`` (the
        pooler on the mean of all real tokens). A backbone pre-trained by masked LM alone never taught
        its [CLS] to summarise the post, so with its attention frozen (stage 2) [CLS] carries almost
        nothing; ``mean`` does.
    stage: the last training stage this model finished (0 = not trained as MMBERT).
    features: how to make the inputs from raw text, for ``predict`` on new posts: ``tts`` backend
        arguments, ``whisper`` model name or path, ``whisper_mode``, glyph ``font``.
    """

    model_type = "mmbert"

    def __init__(self, modalities=MODALITIES, speech_dim: int = 512, speech_pool: int = 4,
                 max_speech_tokens: int = 64, vision_encoder: str = "glyph-cnn", vision_dim: int = 256,
                 glyph_size: int = 32, moe_top_k: int = 0, aux_loss_weight: float = 0.01, pooling: str = "cls",
                 stage: int = 0,
                 features: dict | None = None, type_vocab_size: int = 3, **kwargs) -> None:
        super().__init__(type_vocab_size=type_vocab_size, **kwargs)
        modalities = list(modalities)
        unknown = [m for m in modalities if m not in MODALITIES]
        if unknown or "text" not in modalities:
            raise ValueError(f"modalities must include 'text' and come from {MODALITIES}, not {modalities}")
        if vision_encoder not in VISION_ENCODERS:
            raise ValueError(f"vision_encoder must be one of {VISION_ENCODERS}, not {vision_encoder!r}")
        if moe_top_k not in (0, 1, 2):
            raise ValueError(f"moe_top_k must be 0 (dense), 1 or 2, not {moe_top_k}")
        if pooling not in ("cls", "mean"):
            raise ValueError(f"pooling must be 'cls' or 'mean', not {pooling!r}")
        if type_vocab_size < 3:
            raise ValueError("type_vocab_size must be at least 3: one token type per modality")
        self.modalities = [m for m in MODALITIES if m in modalities]  # canonical order = expert order
        self.speech_dim, self.speech_pool, self.max_speech_tokens = speech_dim, speech_pool, max_speech_tokens
        self.vision_encoder, self.vision_dim, self.glyph_size = vision_encoder, vision_dim, glyph_size
        self.moe_top_k, self.aux_loss_weight, self.pooling, self.stage = moe_top_k, aux_loss_weight, pooling, stage
        self.features = dict(features or {})

    @property
    def num_experts(self) -> int:
        return len(self.modalities)

    @classmethod
    def from_bert_config(cls, bert: BertConfig, **kwargs) -> "MMBertConfig":
        """An MMBERT config over a BERT backbone's config (its 2 token types become 3)."""
        fields = bert.to_dict()
        for key in ("model_type", "architectures", "transformers_version", "type_vocab_size"):
            fields.pop(key, None)
        fields.update(kwargs)
        return cls(**fields)
