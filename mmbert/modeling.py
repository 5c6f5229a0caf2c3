"""MMBERT: BERT whose every feed-forward is a mixture of text, speech and vision experts (Xue et al. 2025, §3).

One model, readable top to bottom:

    input_ids ──> word embeddings ─────────────────────────────┐ (token type 0, positions 0..n-1)
    speech frames (pooled) ──> speech aligner (2-layer MLP) ───┤ (token type 1, positions 0..m-1)
    input_ids ──> vision encoder ──> vision aligner ───────────┘ (token type 2, its text token's position)
         [T ; S ; V] ──> LayerNorm ──> N x MMBertLayer ──> pooler([CLS] or mean) ──> classifier

    MMBertLayer (post-LN, as BERT, so pretrained weights load):
        h = LN(x + SelfAttention(x))
        w = softmax(router(h))                       # per token, one weight per expert
        y = LN(h + sum_i w_i * Expert_i(h))          # experts: BERT feed-forwards, upcycled

At initialisation from a BERT every expert is a copy of the pretrained feed-forward, so whatever the
router says the layer computes exactly what BERT did (the weights sum to one). ``feed_forward`` may
replace the mixture: ``dense`` keeps one feed-forward for every token (the fusion baseline: the same
speech and glyph tokens, no experts, no router), ``modality`` sends each token to its own modality's
expert (experts without a router).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification, PreTrainedModel
from transformers.activations import ACT2FN
from transformers.utils import ModelOutput

from .configuration import MODALITIES, MMBertConfig

TEXT, SPEECH, VISION = 0, 1, 2  # token type ids


class MLPAligner(nn.Sequential):
    """Projects a modality's features into BERT's embedding space (Appendix A: a 2-layer MLP)."""

    def __init__(self, in_dim: int, hidden: int) -> None:
        super().__init__(nn.Linear(in_dim, hidden), nn.GELU(), nn.Linear(hidden, hidden))


class GlyphCNN(nn.Module):
    """A small trainable CNN over the glyph image of every vocabulary entry.

    The images (vocab_size x glyph_size x glyph_size, uint8) are a buffer saved with the model, so a
    batch costs a lookup plus the CNN over the distinct tokens in it.
    """

    def __init__(self, config: MMBertConfig) -> None:
        super().__init__()
        size = config.glyph_size
        self.register_buffer("glyphs", torch.zeros(config.vocab_size, size, size, dtype=torch.uint8))
        self.net = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.GELU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.GELU(), nn.MaxPool2d(2),
            nn.Conv2d(64, 128, 3, padding=1), nn.GELU(), nn.AdaptiveAvgPool2d(2),
            nn.Flatten(), nn.Linear(128 * 4, config.vision_dim), nn.LayerNorm(config.vision_dim),
        )

    def encode(self, ids: torch.Tensor) -> torch.Tensor:
        return self.net(self.glyphs[ids].unsqueeze(1).float() / 255.0)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        ids, inverse = torch.unique(input_ids, return_inverse=True)
        # F.embedding, not features[inverse]: indexing's backward accumulates in an order that varies
        # with the CPU threads, so a seeded training did not repeat
        return F.embedding(inverse, self.encode(ids))

    @torch.no_grad()
    def table(self, batch_size: int = 2048) -> torch.Tensor:
        """The CNN's features of every vocabulary entry (vocab_size x vision_dim)."""
        ids = torch.arange(len(self.glyphs), device=self.glyphs.device)
        return torch.cat([self.encode(ids[i:i + batch_size]) for i in range(0, len(ids), batch_size)])


class VisionTable(nn.Module):
    """Frozen vision features, one row per vocabulary entry (computed once by a frozen image encoder,
    or the glyph CNN's after stage 1); ``config.vision_source`` says which."""

    def __init__(self, config: MMBertConfig) -> None:
        super().__init__()
        self.register_buffer("features", torch.zeros(config.vocab_size, config.vision_dim))

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return F.embedding(input_ids, self.features)


class MMBertEmbeddings(nn.Module):
    """Word, position and (per-modality) token-type embeddings; parameter names as BERT's."""

    def __init__(self, config: MMBertConfig) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.position_offset = config.position_offset

    def modality(self, embeds: torch.Tensor, token_type: int, positions: torch.Tensor) -> torch.Tensor:
        return (embeds + self.position_embeddings(positions + self.position_offset)
                + self.token_type_embeddings.weight[token_type])

    def forward(self, parts: list[torch.Tensor]) -> torch.Tensor:
        return self.dropout(self.LayerNorm(torch.cat(parts, dim=1)))


class MMBertAttention(nn.Module):
    """BERT's multi-head self-attention, shared by every modality (eq. 7)."""

    def __init__(self, config: MMBertConfig) -> None:
        super().__init__()
        self.heads = config.num_attention_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)
        self.output = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = config.attention_probs_dropout_prob

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, n, h = x.shape
        q, k, v = (proj(x).view(b, n, self.heads, h // self.heads).transpose(1, 2)
                   for proj in (self.query, self.key, self.value))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                             dropout_p=self.dropout if self.training else 0.0)
        return self.output(out.transpose(1, 2).reshape(b, n, h))


class MMBertExpert(nn.Module):
    """One expert: BERT's feed-forward (intermediate dense, activation, output dense)."""

    def __init__(self, config: MMBertConfig) -> None:
        super().__init__()
        self.up = nn.Linear(config.hidden_size, config.intermediate_size)
        self.act = ACT2FN[config.hidden_act]
        self.down = nn.Linear(config.intermediate_size, config.hidden_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(self.act(self.up(x)))


class MMBertMoE(nn.Module):
    """Experts {E_T, E_S, E_V} and a linear router with softmax weights (eq. 8-12).

    ``expert`` forces every token to one expert (stage 2 trains each expert on its own modality).
    Without a router (``feed_forward: modality``) each token goes to the expert ``token_experts`` names,
    its own modality's. Returns the mixed output and the routing weights (batch, tokens, experts).
    """

    def __init__(self, config: MMBertConfig) -> None:
        super().__init__()
        self.top_k = config.moe_top_k
        self.experts = nn.ModuleList(MMBertExpert(config) for _ in range(config.num_experts))
        # One expert (a text-only model, or dense fusion) is a plain BERT feed-forward: nothing to route.
        self.router = nn.Linear(config.hidden_size, config.num_experts) if config.routed else None

    def forward(self, x: torch.Tensor, expert: int | None = None,
                token_experts: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        n = len(self.experts)
        if expert is not None or n == 1:
            expert = expert or 0
            weights = F.one_hot(torch.full(x.shape[:2], expert, device=x.device), n).to(x.dtype)
            return self.experts[expert](x), weights
        if self.router is None:
            return self.gated(x, F.one_hot(token_experts, n).to(x.dtype))
        weights = torch.softmax(self.router(x), dim=-1)
        if not self.top_k:
            # Accumulated rather than stacked: no (b, t, h, n) tensor to keep for the backward pass.
            mixed = self.experts[0](x) * weights[..., :1]
            for i in range(1, n):
                mixed = mixed + self.experts[i](x) * weights[..., i:i + 1]
            return mixed, weights
        top, chosen = weights.topk(min(self.top_k, n), dim=-1)
        return self.gated(x, torch.zeros_like(weights).scatter(-1, chosen, top / top.sum(-1, keepdim=True)))

    def gated(self, x: torch.Tensor, sparse: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Each expert run on the tokens with a non-zero weight for it only, ``sparse`` (b, t, experts)."""
        n = len(self.experts)
        flat, gates = x.reshape(-1, x.shape[-1]), sparse.reshape(-1, n)
        out = torch.zeros_like(flat)
        for i, e in enumerate(self.experts):
            rows = gates[:, i].nonzero(as_tuple=True)[0]
            if len(rows):
                out.index_add_(0, rows, e(flat[rows]) * gates[rows, i, None])
        return out.view_as(x), sparse


class MMBertLayer(nn.Module):
    """Post-LN BERT layer whose feed-forward is the mixture of experts."""

    def __init__(self, config: MMBertConfig) -> None:
        super().__init__()
        self.attention = MMBertAttention(config)
        self.attention_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.moe = MMBertMoE(config)
        self.output_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, expert: int | None = None,
                token_experts: torch.Tensor | None = None):
        h = self.attention_norm(x + self.dropout(self.attention(x, mask)))
        mixed, weights = self.moe(h, expert, token_experts)
        return self.output_norm(h + self.dropout(mixed)), weights


def load_balancing_loss(weights: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``N * sum_i p_i * f_i`` (eq. 14) over the real tokens of one layer.

    p_i: share of tokens whose largest weight is expert i; f_i: mean weight of expert i. Equals 1 when
    routing is perfectly balanced, N when every token goes wholly to one expert.
    """
    n = weights.shape[-1]
    real = mask.reshape(-1).bool()
    w = weights.reshape(-1, n)[real]
    p = F.one_hot(w.argmax(-1), n).to(w.dtype).mean(0)
    f = w.mean(0)
    return n * (p * f).sum()


@dataclass
class MMBertOutput(ModelOutput):
    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    aux_loss: torch.Tensor | None = None
    last_hidden_state: torch.Tensor | None = None
    pooled: torch.Tensor | None = None
    routing: tuple[torch.Tensor, ...] | None = None  # per layer: (batch, tokens, experts)
    token_types: torch.Tensor | None = None  # (batch, tokens): modality of each token
    word_embeddings: torch.Tensor | None = None  # (batch, text tokens, hidden): before position and type
    aligned_vision: torch.Tensor | None = None  # (batch, text tokens, hidden): the vision aligner's output
    attention_mask: torch.Tensor | None = None  # (batch, tokens)


class MMBertPreTrainedModel(PreTrainedModel):
    config_class = MMBertConfig
    base_model_prefix = "mmbert"

    def _init_weights(self, module: nn.Module) -> None:
        std = self.config.initializer_range
        if isinstance(module, nn.Conv2d):
            # Not BERT's N(0, 0.02): over three convolutions it shrinks a glyph's signal ~10^4-fold, every
            # glyph comes out as the same vector, and the vision modality carries nothing.
            nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
            module.bias.data.zero_()
        elif isinstance(module, nn.Linear):
            module.weight.data.normal_(0.0, std)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(0.0, std)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            module.weight.data.fill_(1.0)
            module.bias.data.zero_()


class MMBertModel(MMBertPreTrainedModel):
    """The encoder: embeddings of the three modalities, N MoE layers, and BERT's pooler."""

    def __init__(self, config: MMBertConfig) -> None:
        super().__init__(config)
        self.embeddings = MMBertEmbeddings(config)
        if "speech" in config.modalities:
            self.speech_aligner = MLPAligner(config.speech_dim, config.hidden_size)
        if "vision" in config.modalities:
            encoder = GlyphCNN if config.vision_encoder == "glyph-cnn" else VisionTable
            self.vision_encoder = encoder(config)
            self.vision_aligner = MLPAligner(config.vision_dim, config.hidden_size)
        self.layers = nn.ModuleList(MMBertLayer(config) for _ in range(config.num_hidden_layers))
        self.pooler = nn.Linear(config.hidden_size, config.hidden_size)
        self.post_init()

    def expert_index(self, modality: str) -> int:
        return self.config.expert_of(modality)

    def aligned_speech(self, speech_features: torch.Tensor) -> torch.Tensor:
        return self.speech_aligner(speech_features)

    def aligned_vision(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.vision_aligner(self.vision_encoder(input_ids))

    def freeze_vision_encoder(self) -> None:
        """Replace a glyph CNN by the table of its features for every vocabulary entry.

        The CNN learns in stage 1 only; afterwards it is frozen, as a CLIP encoder is throughout, so its
        output depends on the token alone and the vision modality costs a table lookup. The
        table has the size of the glyph images it replaces (vocab x 256 floats vs vocab x 32 x 32 bytes).
        """
        if not isinstance(getattr(self, "vision_encoder", None), GlyphCNN):
            return
        table = VisionTable(self.config).to(self.vision_encoder.glyphs.device)
        table.features.copy_(self.vision_encoder.table())
        self.vision_encoder = table
        self.config.vision_encoder = "table"
        # stage 0: the ablation that skips stage 1 freezes an untrained CNN
        self.config.vision_source = {"encoder": "glyph-cnn", "glyph_size": self.config.glyph_size,
                                     "trained": self.config.stage >= 1}

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                speech_features: torch.Tensor | None = None, speech_mask: torch.Tensor | None = None,
                modalities: tuple[str, ...] | None = None, expert: int | None = None,
                inputs_embeds: torch.Tensor | None = None) -> MMBertOutput:
        """input_ids, attention_mask: (b, n) text; speech_features (b, m, speech_dim) pooled frames
        with speech_mask (b, m). ``modalities`` restricts the input (default: all the model has; text
        without ``text`` keeps only [CLS], which the pooler reads); ``expert`` forces one expert.

        ``inputs_embeds`` (b, n, hidden) replaces the text tokens' word embeddings, as in transformers'
        ``BertEmbeddings`` (position and token type are still added): an embedding-space attack perturbs
        these. The glyph tokens are still looked up by ``input_ids`` and the speech comes from the text:
        they stay as the text gives them."""
        config = self.config
        modalities = tuple(modalities or config.modalities)
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        b, n = input_ids.shape
        positions = torch.arange(n, device=input_ids.device).expand(b, n)
        text_mask = attention_mask if "text" in modalities else attention_mask * (positions == 0)
        emb = self.embeddings
        words = emb.word_embeddings(input_ids) if inputs_embeds is None else inputs_embeds
        parts = [emb.modality(words, TEXT, positions)]
        masks, types = [text_mask], [torch.full_like(input_ids, TEXT)]
        if "speech" in modalities and "speech" in config.modalities and speech_features is not None:
            m = speech_features.shape[1]
            speech_positions = torch.arange(m, device=input_ids.device).expand(b, m)
            parts.append(emb.modality(self.aligned_speech(speech_features), SPEECH, speech_positions))
            masks.append(speech_mask if speech_mask is not None else torch.ones(b, m, dtype=attention_mask.dtype,
                                                                                 device=input_ids.device))
            types.append(torch.full((b, m), SPEECH, device=input_ids.device))
        aligned_vision = None
        if "vision" in modalities and "vision" in config.modalities:
            aligned_vision = self.aligned_vision(input_ids)
            parts.append(emb.modality(aligned_vision, VISION, positions))
            masks.append(attention_mask)
            types.append(torch.full_like(input_ids, VISION))
        x = emb(parts)
        mask = torch.cat(masks, dim=1).to(x.dtype)
        # Additive mask: padded keys get a large negative score (not -inf: an all-masked row stays finite).
        bias = (1.0 - mask)[:, None, None, :] * torch.finfo(x.dtype).min
        token_types = torch.cat(types, dim=1)
        # feed_forward "modality": each token's expert is its modality's (token types number MODALITIES)
        token_experts = None if config.feed_forward != "modality" else torch.tensor(
            [config.expert_of(m) if m in config.modalities else 0 for m in MODALITIES], device=x.device)[token_types]
        routing = []
        for layer in self.layers:
            x, weights = layer(x, bias, expert, token_experts)
            routing.append(weights)
        aux = None
        if expert is None and config.routed:
            aux = torch.stack([load_balancing_loss(w, mask) for w in routing]).mean()
        if config.pooling == "mean":
            summary = (x * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True).clamp(min=1.0)
        else:
            summary = x[:, 0]
        pooled = torch.tanh(self.pooler(summary))
        return MMBertOutput(aux_loss=aux, last_hidden_state=x, pooled=pooled, routing=tuple(routing),
                            token_types=token_types, attention_mask=mask, word_embeddings=words,
                            aligned_vision=aligned_vision)


class MMBertForSequenceClassification(MMBertPreTrainedModel):
    """MMBERT with BERT's classification head on the pooled [CLS]; loss = CE + aux_weight * aux."""

    def __init__(self, config: MMBertConfig) -> None:
        super().__init__(config)
        self.mmbert = MMBertModel(config)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                speech_features: torch.Tensor | None = None, speech_mask: torch.Tensor | None = None,
                labels: torch.Tensor | None = None, modalities: tuple[str, ...] | None = None,
                expert: int | None = None, inputs_embeds: torch.Tensor | None = None, **_) -> MMBertOutput:
        out = self.mmbert(input_ids, attention_mask, speech_features, speech_mask, modalities, expert, inputs_embeds)
        out.logits = self.classifier(self.dropout(out.pooled))
        if labels is not None:
            out.loss = F.cross_entropy(out.logits, labels)
            if out.aux_loss is not None:
                out.loss = out.loss + self.config.aux_loss_weight * out.aux_loss
        return out


def bert_to_mmbert_state_dict(bert_state: dict[str, torch.Tensor], config: MMBertConfig) -> dict[str, torch.Tensor]:
    """Map a BertModel / BertFor* state dict onto MMBERT's names, upcycling each feed-forward into
    every expert and widening the token types to 3 (new types start as a copy of type 0)."""
    out: dict[str, torch.Tensor] = {}
    for name, tensor in bert_state.items():
        name = name.removeprefix("bert.").removeprefix("roberta.")
        if name.startswith("embeddings.") and "position_ids" not in name and "token_type_ids" not in name:
            if name == "embeddings.token_type_embeddings.weight":
                rows = [tensor[i] if i < len(tensor) else tensor[0] for i in range(config.type_vocab_size)]
                tensor = torch.stack(rows)
            out["mmbert." + name] = tensor
        elif name.startswith("encoder.layer."):
            parts = name.split(".")
            i, rest = parts[2], ".".join(parts[3:])
            prefix = f"mmbert.layers.{i}."
            mapping = {"attention.self.query": "attention.query", "attention.self.key": "attention.key",
                       "attention.self.value": "attention.value", "attention.output.dense": "attention.output",
                       "attention.output.LayerNorm": "attention_norm", "output.LayerNorm": "output_norm"}
            module, param = rest.rsplit(".", 1)
            if module in mapping:
                out[prefix + mapping[module] + "." + param] = tensor
            elif module in ("intermediate.dense", "output.dense"):
                which = "up" if module == "intermediate.dense" else "down"
                for e in range(config.num_experts):
                    out[f"{prefix}moe.experts.{e}.{which}.{param}"] = tensor.clone()
        elif name.startswith("pooler.dense."):
            out["mmbert.pooler." + name.removeprefix("pooler.dense.")] = tensor
        elif name.startswith("classifier.") and name.endswith(("weight", "bias")):
            out[name] = tensor
    return out


def position_offset(bert) -> int:
    """Where a BERT-architecture encoder's positions start in its table: RoBERTa's and XLM-R's embeddings
    number them from ``padding_idx + 1``, BERT's from 0."""
    padding = getattr(getattr(bert, "embeddings", None), "padding_idx", None)
    return 0 if padding is None else padding + 1


def upcycle_from_bert(bert, config: MMBertConfig) -> MMBertForSequenceClassification:
    """An MMBERT whose shared weights are ``bert``'s (a transformers BertModel / BertFor*, or the same
    layers under another name: XLMRobertaModel, RobertaModel), every expert a copy of its layer's
    feed-forward; aligners, routers and the vision encoder freshly initialised. ``config`` gets the
    position offset ``bert`` numbers its positions from."""
    config.position_offset = position_offset(getattr(bert, "base_model", bert))
    model = MMBertForSequenceClassification(config)
    state = bert_to_mmbert_state_dict(bert.state_dict(), config)
    if state.get("classifier.weight") is not None and state["classifier.weight"].shape[0] != config.num_labels:
        state = {k: v for k, v in state.items() if not k.startswith("classifier.")}
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or any(".layers." in k and ".router." not in k for k in missing):
        raise ValueError(f"not a BERT checkpoint that fits this config: unexpected {unexpected[:3]}, "
                         f"missing {[k for k in missing if '.layers.' in k][:3]}")
    return model


# So that transformers' Auto classes load an MMBERT folder by its model_type.
AutoConfig.register("mmbert", MMBertConfig)
AutoModel.register(MMBertConfig, MMBertModel)
AutoModelForSequenceClassification.register(MMBertConfig, MMBertForSequenceClassification)
