"""MMBertConfig: a BERT config plus the modalities, aligners, vision encoder and mixture of experts."""
from __future__ import annotations

from transformers import BertConfig

from cloak.common.params import InstanceOf, Interval, Options, Satisfies, validate

MODALITIES = ("text", "speech", "vision")
VISION_ENCODERS = ("glyph-cnn", "table")
# What each layer's feed-forward is: Xue et al.'s mixture (one expert per modality, a learnt router), one
# feed-forward for every token (the fusion baseline: the same inputs, no experts), or one expert per
# modality with each token sent to its own modality's expert (no router).
FEED_FORWARDS = ("experts", "dense", "modality")

# The BERT fields a run configuration may set for a model built from scratch (vocab_size comes from
# the tokenizer, num_labels from the data).
BERT_SHAPE = {
    "hidden_size": Interval(int, 1), "num_hidden_layers": Interval(int, 1), "num_attention_heads": Interval(int, 1),
    "intermediate_size": Interval(int, 1), "hidden_act": InstanceOf(str),
    "hidden_dropout_prob": Interval(float, 0, 1, closed="left"),
    "attention_probs_dropout_prob": Interval(float, 0, 1, closed="left"),
    "max_position_embeddings": Interval(int, 1), "initializer_range": Interval(float, 0, closed="neither"),
    "layer_norm_eps": Interval(float, 0, closed="neither"),
    "classifier_dropout": [Interval(float, 0, 1, closed="left"), None],
}


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
        entry, computed once by a frozen image encoder: open_clip or a transformers CLIP); ``vision_dim``
        is its output width. The glyph CNN trains in stage 1 only; stage 2 turns it into a ``table`` of
        its features.
    vision_source: what made the table: ``{"encoder": "open_clip", "model": ..., "pretrained": ...,
        "open_clip": version, "preprocess": {...}}``, ``{"encoder": "transformers", "model": ...}`` or
        ``{"encoder": "glyph-cnn", ...}`` (None while a glyph CNN still trains). The table itself is in
        the model, so a saved MMBERT predicts without that encoder or its weights.
    feed_forward: ``experts`` (Xue et al. 2025: one expert per modality in every layer, mixed by a learnt
        router), ``dense`` (one feed-forward, BERT's, for every token of every modality: the fusion
        baseline, MMBERT's inputs without the mixture) or ``modality`` (one expert per modality, each
        token sent wholly to its own modality's expert: the experts without a router).
    moe_top_k: 0 routes every token through all experts, weighted (Xue et al. 2025); 1 or 2 keeps only the
        top-k weights per token (renormalised) and runs each expert on its tokens only.
    aux_loss_weight: weight of the load-balancing loss ``N * sum_i p_i f_i`` in the training loss.
    pooling: what the classification head reads: ``cls`` (BERT's pooler on [CLS]) or ``mean`` (the
        pooler on the mean of all real tokens). A backbone pre-trained by masked LM alone never taught
        its [CLS] to summarise the post, so with its attention frozen (stage 2) [CLS] carries almost
        nothing; ``mean`` does.
    position_offset: the row of the position table the first position reads: 0 for BERT, 2 for an
        XLM-R / RoBERTa backbone (they number positions from pad_token_id + 1); ``positions`` is how
        many positions that leaves.
    stage: the last training stage this model finished (0 = not trained as MMBERT).
    features: how to make the inputs from raw text, for ``predict`` on new posts: ``tts`` backend
        arguments, ``whisper`` model name or path, ``whisper_mode``, glyph ``font``.
    """

    model_type = "mmbert"
    _parameter_constraints = {
        "modalities": Satisfies(lambda m: isinstance(m, (list, tuple)) and "text" in m
                                and all(x in MODALITIES for x in m),
                                "a list of 'text', 'speech', 'vision' that includes 'text'"),
        "speech_dim": Interval(int, 1), "speech_pool": Interval(int, 1), "max_speech_tokens": Interval(int, 1),
        "vision_encoder": Options(*VISION_ENCODERS), "vision_dim": Interval(int, 1), "glyph_size": Interval(int, 8),
        "feed_forward": Options(*FEED_FORWARDS), "moe_top_k": Options(0, 1, 2),
        "aux_loss_weight": Interval(float, 0), "pooling": Options("cls", "mean"),
        "stage": Options(0, 1, 2, 3), "features": [InstanceOf(dict), None],
        "vision_source": [InstanceOf(dict), None], "position_offset": Interval(int, 0),
        "type_vocab_size": Interval(int, 3),  # one token type per modality
    }

    def __init__(self, modalities=MODALITIES, speech_dim: int = 512, speech_pool: int = 4,
                 max_speech_tokens: int = 64, vision_encoder: str = "glyph-cnn", vision_dim: int = 256,
                 glyph_size: int = 32, feed_forward: str = "experts", moe_top_k: int = 0,
                 aux_loss_weight: float = 0.01, pooling: str = "cls",
                 stage: int = 0, features: dict | None = None, vision_source: dict | None = None,
                 type_vocab_size: int = 3, position_offset: int = 0, **kwargs) -> None:
        mine = validate({"modalities": list(modalities), "speech_dim": speech_dim, "speech_pool": speech_pool,
                         "max_speech_tokens": max_speech_tokens, "vision_encoder": vision_encoder,
                         "vision_dim": vision_dim, "glyph_size": glyph_size, "feed_forward": feed_forward,
                         "moe_top_k": moe_top_k, "aux_loss_weight": aux_loss_weight, "pooling": pooling, "stage": stage,
                         "features": features, "vision_source": vision_source, "type_vocab_size": type_vocab_size,
                         "position_offset": position_offset},
                        self._parameter_constraints, "MMBertConfig")
        super().__init__(type_vocab_size=type_vocab_size, **kwargs)
        modalities, aux_loss_weight = mine["modalities"], mine["aux_loss_weight"]
        self.position_offset = position_offset
        if max_speech_tokens > self.positions and "speech" in modalities:
            raise ValueError(f"MMBertConfig: 'max_speech_tokens' ({max_speech_tokens}) must be at most "
                             f"the {self.positions} positions of the position table: speech tokens take "
                             "positions 0..max_speech_tokens-1")
        self.modalities = [m for m in MODALITIES if m in modalities]  # canonical order = expert order
        self.speech_dim, self.speech_pool, self.max_speech_tokens = speech_dim, speech_pool, max_speech_tokens
        self.vision_encoder, self.vision_dim, self.glyph_size = vision_encoder, vision_dim, glyph_size
        self.feed_forward = feed_forward
        self.moe_top_k, self.aux_loss_weight, self.pooling, self.stage = moe_top_k, aux_loss_weight, pooling, stage
        self.features = dict(features or {})
        self.vision_source = vision_source

    @property
    def positions(self) -> int:
        """How many positions a modality's tokens may take (the position table past ``position_offset``)."""
        return self.max_position_embeddings - self.position_offset

    @property
    def num_experts(self) -> int:
        """Feed-forwards in each layer: one per modality, or one (a text-only model, or ``dense``)."""
        return 1 if self.feed_forward == "dense" else len(self.modalities)

    @property
    def routed(self) -> bool:
        """Whether a learnt router mixes the experts (and the load-balancing loss applies)."""
        return self.feed_forward == "experts" and self.num_experts > 1

    def expert_of(self, modality: str) -> int:
        """The feed-forward a modality's tokens go through when one is forced (stages 1 and 2): its own
        expert, or the one feed-forward of a ``dense`` model."""
        return self.modalities.index(modality) if self.num_experts > 1 else 0

    @classmethod
    def from_bert_config(cls, bert: BertConfig, **kwargs) -> "MMBertConfig":
        """An MMBERT config over a BERT backbone's config (its 2 token types become 3)."""
        fields = bert.to_dict()
        for key in ("model_type", "architectures", "transformers_version", "type_vocab_size"):
            fields.pop(key, None)
        fields.update(kwargs)
        return cls(**fields)
