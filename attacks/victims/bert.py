"""``bert``: any pretrained transformers encoder fine-tuned with a classification head (the recipe of
Wankmüller 2021, arXiv:2102.02111).

The backbone is a hub name (``bert-base-chinese``, ``hfl/chinese-roberta-wwm-ext``,
``intfloat/multilingual-e5-small``) or a folder, such as the output of ``mmbert pretrain`` (a
masked-LM BERT and its tokenizer); its tokenizer may be WordPiece or SentencePiece (XLM-R's), and emoji
it cannot keep whole are added as tokens. Posts longer than the
position table keep their head and their tail (Wankmüller 2021, after Sun et al.: the first 128 and the last
382 of BERT's 510 tokens; the same shares of a shorter table).
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

import torch

from cloak.common.params import InstanceOf, Interval, Options

from ..nn.gattention import BertWithGAttention, GAttentionGates
from ..nn.heads import DEFAULT_HEAD, HEADS
from .base import Settings, register_victim
from .neural import (ARCHITECTURE, WEIGHTS, Embedded, FineTunedVictim, head_tail, read_json, save_tokenizer,
                     write_json)

HEAD_SHARE = 128 / 510


@dataclasses.dataclass
class BertVictimConfig(Settings):
    """backbone: hub name or folder of any transformers encoder (BERT, XLM-R, multilingual-e5 ...);
    backbone_layers: use its first N layers (None: all); max_length: tokens read, [CLS] and [SEP]
    (<s>, </s>) included (at most the backbone's position table); head_share: the share of a long
    post's tokens kept from its head; head: ``linear`` on the first token ([CLS] / <s>: through the
    backbone's pooler where its checkpoint trained one), or ``gattention`` (GAttention, Jarquín-Vásquez
    et al. 2025) over the last layer with ``gattention_heads`` heads."""

    backbone: str = "bert-base-chinese"
    backbone_layers: int | None = None
    max_length: int = 512
    head_share: float = HEAD_SHARE
    head: str = DEFAULT_HEAD
    gattention_heads: int = 1
    _parameter_constraints = {"backbone": InstanceOf(str), "backbone_layers": [Interval(int, 1), None],
                              "max_length": Interval(int, 8), "head_share": Interval(float, 0, 1),
                              "head": Options(*HEADS), "gattention_heads": Interval(int, 1)}


Token = tuple[int, "tuple[int, int] | None"]  # a token id and the characters it covers


def encode_head_tail(tokenizer, texts: Sequence[str], max_length: int, head_share: float) -> list[list[Token]]:
    """Each text's tokens, [CLS] and [SEP] included, a long post cut to its head and tail, as (id, character
    span) pairs: the span is None for [CLS] and [SEP], and for every token of a tokenizer that gives no
    offsets (a slow one). A huge post is tokenised only near its two ends (each token is at least one
    character: 4 characters a token leaves room to spare)."""
    budget = max_length - 2  # [CLS] and [SEP]
    reach = 4 * (budget + 100)
    fast = getattr(tokenizer, "is_fast", False)

    def encode(part: str, shift: int = 0) -> list[Token]:
        # verbose=False: the tokenizer's warning about sequences over its limit does not apply, we cut them
        if not fast:
            return [(i, None) for i in tokenizer.encode(part, add_special_tokens=False, verbose=False)]
        found = tokenizer(part, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        return [(i, (s + shift, e + shift)) for i, (s, e) in zip(found["input_ids"], found["offset_mapping"])]

    out = []
    for text in texts:
        if len(text) <= 2 * reach:
            tokens = head_tail(encode(text), budget, head_share)
        else:
            head = int(round(budget * head_share))
            front = encode(text[:reach])[:head]
            back = encode(text[-reach:], len(text) - reach)
            tokens = front + back[max(0, len(back) - (budget - len(front))):]
        out.append([(tokenizer.cls_token_id, None), *tokens, (tokenizer.sep_token_id, None)])
    return out


class HeadTailTokens:
    """The BERT-family victims' inputs: ``encode_head_tail`` at the victim's ``max_length`` and
    ``config.head_share``, padded for the model (``batch``) or as character spans (``token_spans``)."""

    def encode(self, texts: Sequence[str]) -> list[list[Token]]:
        return encode_head_tail(self.tokenizer_, texts, self.max_length, self.config.head_share)

    def batch(self, texts: Sequence[str]) -> dict[str, torch.Tensor]:
        return pad([[i for i, _ in tokens] for tokens in self.encode(texts)], self.tokenizer_.pad_token_id)

    @property
    def has_token_spans(self) -> bool:
        return self.tokenizer_.is_fast  # a slow tokenizer gives no character offsets

    def token_spans(self, texts: Sequence[str]) -> list[list[tuple[int, int] | None]]:
        if not self.has_token_spans:
            raise ValueError(f"{self.name}: a slow tokenizer gives no character offsets")
        return [[span for _, span in tokens] for tokens in self.encode(texts)]


def attention_kernel(victim) -> str:
    """transformers' attention implementation for a victim: ``eager`` when an attention regulariser
    needs the weights (the fused kernel does not return them), else ``sdpa``."""
    return "eager" if victim.regularizer.reads_attentions else "sdpa"


def pad(sequences: list[list[int]], pad_id: int) -> dict[str, torch.Tensor]:
    width = max((len(s) for s in sequences), default=1)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for i, s in enumerate(sequences):
        ids[i, :len(s)] = torch.tensor(s, dtype=torch.long)
        mask[i, :len(s)] = 1
    return {"input_ids": ids, "attention_mask": mask}


def saved_shapes(directory: str) -> dict[str, tuple[int, ...]]:
    """Each tensor's shape in a victim's saved weights (read from the safetensors header alone)."""
    from safetensors import safe_open

    with safe_open(os.path.join(directory, WEIGHTS), framework="pt") as f:
        return {name: tuple(f.get_slice(name).get_shape()) for name in f.keys()}


def saved_encoder(directory: str, attention: str, prefix: str = "bert.") -> torch.nn.Module:
    """The encoder a victim saved (its transformers config in ``architecture.json``), empty, with a
    pooler only if the saved weights hold one."""
    from transformers import AutoConfig, AutoModel

    fields = read_json(directory, ARCHITECTURE)
    config = AutoConfig.for_model(fields.pop("model_type", "bert"), **fields)
    encoder = AutoModel.from_config(config, attn_implementation=attention)
    if not any(name.startswith(prefix + "pooler.") for name in saved_shapes(directory)):
        encoder.pooler = None
    return encoder


def first_token(out) -> torch.Tensor:
    """What a linear head reads of an encoder's output: the pooled first token where the encoder has a
    pooler (BERT's, trained with the checkpoint), else the first token's ([CLS], <s>) last hidden state."""
    pooled = getattr(out, "pooler_output", None)
    return pooled if pooled is not None else out.last_hidden_state[:, 0]


class BertWithLinearHead(torch.nn.Module):
    """An encoder read by dropout and a linear layer on its first token (``first_token``). Parameter
    names are those of transformers' BertForSequenceClassification (``bert.*``, ``classifier.*``)."""

    def __init__(self, bert: torch.nn.Module, num_labels: int) -> None:
        super().__init__()
        self.bert = bert
        config = bert.config
        self.dropout = torch.nn.Dropout(getattr(config, "classifier_dropout", None) or config.hidden_dropout_prob)
        self.classifier = torch.nn.Linear(config.hidden_size, num_labels)
        self.classifier.weight.data.normal_(0.0, config.initializer_range)  # as BERT initialises its head
        self.classifier.bias.data.zero_()

    @property
    def config(self):
        return self.bert.config

    def forward(self, inputs_embeds: torch.Tensor, attention_mask: torch.Tensor,
                output_attentions: bool = False) -> dict:
        out = self.bert(inputs_embeds=inputs_embeds, attention_mask=attention_mask, output_attentions=output_attentions)
        return {"logits": self.classifier(self.dropout(first_token(out))), "attentions": list(out.attentions or ())}


def position_limit(encoder: torch.nn.Module) -> int:
    """The longest input an encoder reads: its position table's rows from its first position on (XLM-R's
    table has 514 rows, two of them before the first position)."""
    from mmbert.modeling import position_offset

    return encoder.config.max_position_embeddings - position_offset(encoder)


class SavedEncoder:
    """What the victims whose model reads a transformers encoder (``model.bert``) share: the encoder's
    config saved beside the weights with the tokenizer (``saved_encoder`` reads it back), and the tokens
    read at most, ``config.max_length`` within the encoder's position table."""

    def save_architecture(self, directory: str) -> list[str]:
        names = save_tokenizer(self.tokenizer_, directory)
        return [write_json(directory, ARCHITECTURE, self.model_.bert.config.to_dict()), *names]

    @property
    def max_length(self) -> int:
        return min(self.config.max_length, position_limit(self.model_.bert))


@register_victim
class BertVictim(GAttentionGates, SavedEncoder, HeadTailTokens, FineTunedVictim):
    """A pretrained encoder with a linear head on its first token (or a GAttention head over its last
    layer), fine-tuned end to end."""

    kind = "bert"
    summary = "any BERT checkpoint fine-tuned with a classification head (Wankmüller 2021's recipe)"
    Config = BertVictimConfig

    def _model(self, bert: torch.nn.Module, num_labels: int) -> torch.nn.Module:
        units = HEADS[self.config.head].units(self.config.gattention_heads)
        if units:
            bert.pooler = None  # the GAttention head reads every token's last hidden state
            return BertWithGAttention(bert, num_labels, units)
        return BertWithLinearHead(bert, num_labels)

    def build(self, num_labels: int) -> torch.nn.Module:
        from mmbert.loading import load_backbone
        from mmbert.tokenization import backbone_tokenizer

        self.tokenizer_ = backbone_tokenizer(self.config.backbone)
        bert = load_backbone(self.config.backbone, self.config.backbone_layers, attention_kernel(self))
        if len(self.tokenizer_) > bert.config.vocab_size:
            bert.resize_token_embeddings(len(self.tokenizer_))
        return self._model(bert, num_labels)

    def architecture(self, directory: str) -> torch.nn.Module:
        from mmbert.tokenization import load_tokenizer

        self.tokenizer_ = load_tokenizer(directory)
        return self._model(saved_encoder(directory, attention_kernel(self)), self.num_labels_)

    def embed_batch(self, model: torch.nn.Module, batch: dict) -> Embedded:
        embeds = model.bert.get_input_embeddings()(batch["input_ids"])
        return Embedded(embeds, batch["attention_mask"], {"input_ids": batch["input_ids"]})

    def model_logits(self, model: torch.nn.Module, embedded: Embedded) -> torch.Tensor:
        return model(inputs_embeds=embedded.embeds, attention_mask=embedded.mask)["logits"]

    def model_attentions(self, model: torch.nn.Module, embedded: Embedded) -> tuple[torch.Tensor, list[torch.Tensor]]:
        out = model(inputs_embeds=embedded.embeds, attention_mask=embedded.mask, output_attentions=True)
        return out["logits"], list(out["attentions"])
