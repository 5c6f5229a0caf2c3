"""HABERTOR (Tran et al., EMNLP 2020, arXiv:2010.08865): a BERT whose vocabulary, attention,
feed-forward and output parts are quaternion-factorised (§4.2), pre-trained by masked LM on the
domain (§4.3), with one ensemble of classification heads per source of the posts (§4.4).

Read top to bottom: the config, the embeddings, one layer (attention, feed-forward, output), the
encoder, the masked-LM model, the classifier. Each factorisation is a switch:

- vocabulary (VF): a V x E quaternion table, then a quaternion map E -> H (VE + EH/4 weights, not VH);
- attention (AF): query, key and value in a compressed size C by quaternion maps (3CH/4, not 3H^2);
  the C-wide result goes back to H through a dense C x H map;
- feed-forward (FF): H -> I -> 4H, both quaternion (HI/4 + IH, not 4H^2);
- output (OF): 4H -> I -> H, both quaternion (HI + IH/4, not 4H^2).

Tran et al.'s total, VE + EH/4 + L(3CH/4 + H^2 + 5HI/2), counts the attention's output map as H x H;
with query, key and value of size C that map is C x H, which is what is built here
(:func:`parameter_formula` gives both).
"""
from __future__ import annotations

import dataclasses
import json
import os

import torch
import torch.nn.functional as F
from torch import nn

from cloak.common.params import Interval, Options

from ..victims.base import Settings
from .quaternion import QuaternionEmbedding, QuaternionLinear

CONFIG_FILE = "config.json"
PRESETS = {  # name -> (vocabulary, attention, feed-forward, output) factorised
    "habertor": (False, False, False, False), "vqf": (True, False, False, False),
    "vaqf": (True, True, False, False), "vafqf": (True, True, True, False), "vafoqf": (True, True, True, True)}


@dataclasses.dataclass
class HabertorConfig(Settings):
    """The model's shape (Tran et al.'s Table 2 VAFOQF by default, vocabulary from the tokenizer): sizes V, E,
    H, L, heads, C, I and the feed-forward width (4H), and the four factorisation switches;
    ``initializer_range``: the spread of the new token and position tables, as BERT's."""

    vocab_size: int = 40000
    embedding_size: int = 128
    hidden_size: int = 384
    num_layers: int = 6
    num_heads: int = 6
    attention_size: int = 192
    intermediate_size: int = 128
    feedforward_size: int = 1536
    max_position: int = 512
    dropout: float = 0.1
    initializer_range: float = 0.02
    pad_token_id: int = 0
    factorize_vocab: bool = True
    factorize_attention: bool = True
    factorize_feedforward: bool = True
    factorize_output: bool = True
    _parameter_constraints = {
        "vocab_size": Interval(int, 1), "embedding_size": Interval(int, 4), "hidden_size": Interval(int, 4),
        "num_layers": Interval(int, 1), "num_heads": Interval(int, 1), "attention_size": Interval(int, 4),
        "intermediate_size": Interval(int, 4), "feedforward_size": Interval(int, 4), "max_position": Interval(int, 8),
        "dropout": Interval(float, 0, 1, closed="left"), "initializer_range": Interval(float, 0, closed="neither"),
        "pad_token_id": Interval(int, 0),
        **{f"factorize_{part}": Options(True, False) for part in ("vocab", "attention", "feedforward", "output")}}

    def __post_init__(self) -> None:
        super().__post_init__()
        sizes = {"hidden_size": self.hidden_size, "feedforward_size": self.feedforward_size}
        if self.factorize_vocab:
            sizes["embedding_size"] = self.embedding_size
        if self.factorize_attention:
            sizes["attention_size"] = self.attention_size
        if self.factorize_feedforward or self.factorize_output:
            sizes["intermediate_size"] = self.intermediate_size
        for name, size in sizes.items():
            if size % 4:
                raise ValueError(f"HabertorConfig: {name} ({size}) must be divisible by 4 (a quaternion has 4 parts)")
        if self.attention_width % self.num_heads:
            raise ValueError(f"HabertorConfig: the attention width ({self.attention_width}) must be divisible by "
                             f"num_heads ({self.num_heads})")

    @classmethod
    def preset(cls, name: str, **sizes) -> HabertorConfig:
        """Tran et al.'s variants by name (``habertor`` unfactorised, ``vqf``, ``vaqf``, ``vafqf``, ``vafoqf``)."""
        if name not in PRESETS:
            raise ValueError(f"unknown HABERTOR preset {name!r}; choose from {', '.join(PRESETS)}")
        flags = dict(zip(("factorize_vocab", "factorize_attention", "factorize_feedforward", "factorize_output"),
                         PRESETS[name]))
        return cls.from_dict({**flags, **sizes}, f"HABERTOR {name}")

    @property
    def attention_width(self) -> int:
        return self.attention_size if self.factorize_attention else self.hidden_size

    @classmethod
    def from_pretrained(cls, directory: str) -> HabertorConfig:
        with open(os.path.join(directory, CONFIG_FILE), encoding="utf-8") as f:
            return cls.from_dict(json.load(f), os.path.join(directory, CONFIG_FILE))

    def save_pretrained(self, directory: str) -> str:
        from cloak.common.io import write_atomic

        os.makedirs(directory, exist_ok=True)
        write_atomic(os.path.join(directory, CONFIG_FILE), (json.dumps(self.to_dict(), indent=1) + "\n").encode())
        return CONFIG_FILE


def _linear(in_features: int, out_features: int, quaternion: bool) -> nn.Module:
    return QuaternionLinear(in_features, out_features) if quaternion else nn.Linear(in_features, out_features)


def _two_step(in_features: int, middle: int, out_features: int, quaternion: bool) -> nn.Module:
    """A factorised map in -> middle -> out (quaternion), or one dense map in -> out."""
    if quaternion:
        return nn.Sequential(QuaternionLinear(in_features, middle), QuaternionLinear(middle, out_features))
    return nn.Linear(in_features, out_features)


class HabertorEmbeddings(nn.Module):
    """Token vectors (``tokens``: what an embedding attack perturbs), then positions, LayerNorm, dropout."""

    def __init__(self, config: HabertorConfig) -> None:
        super().__init__()
        if config.factorize_vocab:
            self.tokens = QuaternionEmbedding(config.vocab_size, config.embedding_size, config.hidden_size,
                                              padding_idx=config.pad_token_id)
        else:
            self.tokens = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.positions = nn.Embedding(config.max_position, config.hidden_size)
        # BERT's N(0, 0.02), not torch's N(0, 1): the masked-LM decoder is the token table, and at N(0, 1)
        # its first logits spread ~6 wide, which held pre-training at the unigram loss for an epoch
        for table in (self.token_table, self.positions.weight):
            nn.init.normal_(table, std=config.initializer_range)
        with torch.no_grad():
            self.token_table[config.pad_token_id].zero_()
        self.norm = nn.LayerNorm(config.hidden_size)
        self.dropout = nn.Dropout(config.dropout)

    @property
    def token_table(self) -> nn.Parameter:
        """The V x E (factorised) or V x H token table."""
        return self.tokens.table.weight if isinstance(self.tokens, QuaternionEmbedding) else self.tokens.weight

    def forward(self, token_embeds: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(token_embeds.shape[1], device=token_embeds.device)
        return self.dropout(self.norm(token_embeds + self.positions(positions)))


class HabertorAttention(nn.Module):
    """Multi-head self-attention with query, key and value of the attention width (C when factorised)."""

    def __init__(self, config: HabertorConfig) -> None:
        super().__init__()
        width, quaternion = config.attention_width, config.factorize_attention
        self.heads, self.dropout_p = config.num_heads, config.dropout
        self.query, self.key, self.value = (_linear(config.hidden_size, width, quaternion) for _ in range(3))
        self.output = nn.Linear(width, config.hidden_size)
        self.dropout = nn.Dropout(config.dropout)
        self.norm = nn.LayerNorm(config.hidden_size)

    def forward(self, hidden: torch.Tensor, attend: torch.Tensor,
                weights: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The new hidden states, and the attention weights (b, heads, n, n) if ``weights`` (computed
        eagerly then; the fused kernel otherwise)."""
        b, n, _ = hidden.shape
        q, k, v = (part(hidden).view(b, n, self.heads, -1).transpose(1, 2)
                   for part in (self.query, self.key, self.value))
        dropout = self.dropout_p if self.training else 0.0
        probs = None
        if weights:
            scores = (q @ k.transpose(-1, -2)) / q.shape[-1] ** 0.5
            probs = torch.softmax(scores.masked_fill(~attend, torch.finfo(scores.dtype).min), -1)
            context = F.dropout(probs, dropout, self.training) @ v
        else:
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=attend, dropout_p=dropout)
        context = context.transpose(1, 2).reshape(b, n, -1)
        return self.norm(hidden + self.dropout(self.output(context))), probs


class HabertorLayer(nn.Module):
    """Attention, then BERT's feed-forward H -> 4H (``intermediate``) -> H (``output``), each factorised
    through I by its switch."""

    def __init__(self, config: HabertorConfig) -> None:
        super().__init__()
        h, i, f = config.hidden_size, config.intermediate_size, config.feedforward_size
        self.attention = HabertorAttention(config)
        self.intermediate = _two_step(h, i, f, config.factorize_feedforward)
        self.output = _two_step(f, i, h, config.factorize_output)
        self.dropout = nn.Dropout(config.dropout)
        self.norm = nn.LayerNorm(h)

    def forward(self, hidden: torch.Tensor, attend: torch.Tensor,
                weights: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        hidden, probs = self.attention(hidden, attend, weights)
        return self.norm(hidden + self.dropout(self.output(F.gelu(self.intermediate(hidden))))), probs


class HabertorModel(nn.Module):
    """The encoder: token ids (or token embeddings) and a padding mask to hidden states (b, n, H)."""

    def __init__(self, config: HabertorConfig) -> None:
        super().__init__()
        self.config = config
        self.embeddings = HabertorEmbeddings(config)
        self.layers = nn.ModuleList(HabertorLayer(config) for _ in range(config.num_layers))

    def forward(self, attention_mask: torch.Tensor, input_ids: torch.Tensor | None = None,
                inputs_embeds: torch.Tensor | None = None,
                output_attentions: bool = False) -> torch.Tensor | tuple[torch.Tensor, list[torch.Tensor]]:
        """Hidden states (b, n, H); with ``output_attentions`` also every layer's attention weights."""
        if inputs_embeds is None:
            inputs_embeds = self.embeddings.tokens(input_ids)
        hidden = self.embeddings(inputs_embeds)
        attend = attention_mask.bool()[:, None, None, :]  # (b, 1, 1, n): every query sees the real keys
        attentions = []
        for layer in self.layers:
            hidden, probs = layer(hidden, attend, output_attentions)
            attentions.append(probs)
        return (hidden, attentions) if output_attentions else hidden


class HabertorForMaskedLM(nn.Module):
    """The encoder with a masked-LM head whose decoder is the (transposed) token table, as in BERT and
    ALBERT; with the vocabulary factorised the head first maps H to E."""

    def __init__(self, config: HabertorConfig) -> None:
        super().__init__()
        h = config.hidden_size
        self.habertor = HabertorModel(config)
        width = config.embedding_size if config.factorize_vocab else h
        self.transform = nn.Sequential(nn.Linear(h, h), nn.GELU(), nn.LayerNorm(h), nn.Linear(h, width))
        self.decoder_bias = nn.Parameter(torch.zeros(config.vocab_size))

    def masked_lm_loss(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                       labels: torch.Tensor) -> torch.Tensor:
        """Cross-entropy on the masked positions (labels != -100) only: the vocabulary projection is
        most of a small model's compute, and most positions are not masked."""
        hidden = self.habertor(attention_mask, input_ids=input_ids)
        masked = labels != -100
        logits = self.transform(hidden[masked]) @ self.habertor.embeddings.token_table.T + self.decoder_bias
        return F.cross_entropy(logits, labels[masked])


class EnsembleHeads(nn.Module):
    """§4.4: one classification net per source, each an ensemble of ``heads`` heads whose probabilities
    are pooled by ``mean``, ``min`` or ``max`` (min / max on the positive class: binary only). A post of
    an unknown source (-1) gets the mean of all the nets."""

    def __init__(self, hidden_size: int, num_labels: int, sources: int, heads: int, pooling: str,
                 dropout: float) -> None:
        super().__init__()
        if pooling != "mean" and num_labels != 2:
            raise ValueError(f"{pooling} pooling of the heads is for two labels; there are {num_labels}: use mean")
        self.pooling = pooling

        def head() -> nn.Module:
            return nn.Sequential(nn.Dropout(dropout), nn.Linear(hidden_size, hidden_size), nn.Tanh(),
                                 nn.Dropout(dropout), nn.Linear(hidden_size, num_labels))

        self.nets = nn.ModuleList(nn.ModuleList(head() for _ in range(heads)) for _ in range(sources))

    def forward(self, summary: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
        """Log-probabilities (b, num_labels): softmax of them gives the pooled probabilities."""
        per_source = []
        for net in self.nets:
            probs = torch.stack([torch.softmax(head(summary).float(), -1) for head in net], 1)  # (b, heads, n)
            if self.pooling == "mean":
                per_source.append(probs.mean(1))
            else:
                positive = probs[..., 1].amin(1) if self.pooling == "min" else probs[..., 1].amax(1)
                per_source.append(torch.stack([1 - positive, positive], -1))
        probs = torch.stack(per_source, 1)  # (b, sources, n)
        known = source >= 0
        chosen = probs[torch.arange(len(source), device=probs.device), source.clamp_min(0)]
        pooled = torch.where(known[:, None], chosen, probs.mean(1))
        return pooled.clamp_min(1e-12).log()


class AdaptiveNoise(nn.Module):
    """The learnable per-dimension noise magnitude eps of adaptive FGM (§4.5), kept in [low, high]: the model
    carries it as ``noise`` (``attacks.nn.adversaries``)."""

    def __init__(self, width: int, low: float, high: float) -> None:
        super().__init__()
        self.low, self.high = low, high
        self.eps = nn.Parameter(torch.full((width,), float(low)))

    def project(self) -> None:
        with torch.no_grad():
            self.eps.clamp_(self.low, self.high)


class HabertorForClassification(nn.Module):
    """The encoder, its [CLS] state read by the multi-source ensemble heads."""

    def __init__(self, config: HabertorConfig, num_labels: int, sources: int = 1, heads: int = 1,
                 pooling: str = "mean") -> None:
        super().__init__()
        self.habertor = HabertorModel(config)
        self.heads = EnsembleHeads(config.hidden_size, num_labels, sources, heads, pooling, config.dropout)

    def forward(self, attention_mask: torch.Tensor, source: torch.Tensor, input_ids: torch.Tensor | None = None,
                inputs_embeds: torch.Tensor | None = None,
                output_attentions: bool = False) -> torch.Tensor | tuple[torch.Tensor, list[torch.Tensor]]:
        """Log-probabilities (b, labels); with ``output_attentions`` also every layer's attention weights."""
        out = self.habertor(attention_mask, input_ids=input_ids, inputs_embeds=inputs_embeds,
                            output_attentions=output_attentions)
        hidden, attentions = out if output_attentions else (out, None)
        logits = self.heads(hidden[:, 0], source)
        return (logits, attentions) if output_attentions else logits


def parameter_formula(config: HabertorConfig, paper: bool = False) -> int:
    """Weights of the token table and the layers' matrices (biases, LayerNorm, positions and heads
    aside, as Tran et al. count): its §4.2 terms for each factorised part, BERT's for the others. The
    attention's output map is C x H as built, or H x H as Tran et al. count it (``paper=True``)."""
    v, e, h, c, i, f = (config.vocab_size, config.embedding_size, config.hidden_size, config.attention_size,
                        config.intermediate_size, config.feedforward_size)
    vocabulary = v * e + e * h // 4 if config.factorize_vocab else v * h
    attention = (3 * c * h // 4 + (h * h if paper else c * h)) if config.factorize_attention else 4 * h * h
    feedforward = h * i // 4 + i * f // 4 if config.factorize_feedforward else h * f
    output = f * i // 4 + i * h // 4 if config.factorize_output else f * h
    return vocabulary + config.num_layers * (attention + feedforward + output)


def weight_count(model: nn.Module) -> int:
    """The weights :func:`parameter_formula` counts, in a built encoder (``HabertorModel``): every matrix of
    the token embedding and of the layers (a quaternion layer's four blocks)."""
    parts = [model.embeddings.tokens, model.layers]
    return sum(p.numel() for part in parts for p in part.parameters() if p.dim() == 2)
