"""``bert``: any BERT-architecture checkpoint fine-tuned with a classification head (paper 001's recipe).

The backbone is a hub name (``bert-base-chinese``, ``hfl/chinese-roberta-wwm-ext``) or a folder, such
as the output of ``mmbert pretrain`` (a masked-LM BERT and its tokenizer). Posts longer than the
position table keep their head and their tail (paper 001, after Sun et al.: the first 128 and the last
382 of BERT's 510 tokens; the same shares of a shorter table).
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

import torch

from cloak.params import InstanceOf, Interval, Options

from .gattention import BertWithGAttention, GAttentionGates
from .neural import ARCHITECTURE, Embedded, TorchVictim, head_tail, read_json, write_json
from .victim import Settings, register_victim

HEAD_SHARE = 128 / 510


@dataclasses.dataclass
class BertVictimConfig(Settings):
    """backbone: hub name or folder; max_length: tokens read, [CLS] and [SEP] included (at most the
    backbone's position table); head_share: the share of a long post's tokens kept from its head;
    head: ``linear`` on the pooled [CLS], or ``gattention`` (paper 002) over the last layer with
    ``gattention_heads`` heads."""

    backbone: str = "bert-base-chinese"
    max_length: int = 512
    head_share: float = HEAD_SHARE
    head: str = "linear"
    gattention_heads: int = 1
    _parameter_constraints = {"backbone": InstanceOf(str), "max_length": Interval(int, 8),
                              "head_share": Interval(float, 0, 1), "head": Options("linear", "gattention"),
                              "gattention_heads": Interval(int, 1)}


def load_tokenizer(source: str):
    """The tokenizer saved with a model (folder or hub name), or mmcloak's bert-base-chinese vocabulary
    plus emoji for a folder that has none."""
    from transformers import AutoTokenizer

    if os.path.isdir(source) and not os.path.isfile(os.path.join(source, "tokenizer_config.json")):
        from mmbert.tokenization import build_tokenizer

        return build_tokenizer()
    return AutoTokenizer.from_pretrained(source)


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
        return encode_head_tail(self.tokenizer, texts, self.max_length, self.config.head_share)

    def batch(self, texts: Sequence[str]) -> dict[str, torch.Tensor]:
        return pad([[i for i, _ in tokens] for tokens in self.encode(texts)], self.tokenizer.pad_token_id)

    def token_spans(self, texts: Sequence[str]) -> list[list[tuple[int, int] | None]]:
        if not getattr(self.tokenizer, "is_fast", False):
            raise NotImplementedError(f"{self.name}: a slow tokenizer gives no character offsets")
        return [[span for _, span in tokens] for tokens in self.encode(texts)]


def attention_kernel(victim) -> str:
    """transformers' attention implementation for a victim: ``eager`` when an attention regulariser
    needs the weights (the fused kernel does not return them), else ``sdpa``."""
    return "eager" if victim.training.regularizer != "none" else "sdpa"


def pad(sequences: list[list[int]], pad_id: int) -> dict[str, torch.Tensor]:
    width = max((len(s) for s in sequences), default=1)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for i, s in enumerate(sequences):
        ids[i, :len(s)] = torch.tensor(s, dtype=torch.long)
        mask[i, :len(s)] = 1
    return {"input_ids": ids, "attention_mask": mask}


@register_victim
class BertVictim(GAttentionGates, HeadTailTokens, TorchVictim):
    """A BERT checkpoint with a linear head on its pooled [CLS] (or a GAttention head over its last
    layer), fine-tuned end to end."""

    kind = "bert"
    Config = BertVictimConfig

    def build(self, num_labels: int) -> torch.nn.Module:
        from transformers import BertForSequenceClassification, BertModel

        self.tokenizer = load_tokenizer(self.config.backbone)
        if self.config.head == "gattention":
            bert = BertModel.from_pretrained(self.config.backbone, add_pooling_layer=False,
                                             attn_implementation=attention_kernel(self))
            model = BertWithGAttention(bert, num_labels, self.config.gattention_heads)
        else:
            model = BertForSequenceClassification.from_pretrained(self.config.backbone, num_labels=num_labels,
                                                                  attn_implementation=attention_kernel(self))
        if len(self.tokenizer) > model.config.vocab_size:
            model.bert.resize_token_embeddings(len(self.tokenizer))
        return model

    def architecture(self, directory: str) -> torch.nn.Module:
        from transformers import BertConfig, BertForSequenceClassification, BertModel

        self.tokenizer = load_tokenizer(directory)
        config = BertConfig.from_dict(read_json(directory, ARCHITECTURE))
        config._attn_implementation = attention_kernel(self)
        if self.config.head == "gattention":
            return BertWithGAttention(BertModel(config, add_pooling_layer=False), self.num_labels,
                                      self.config.gattention_heads)
        return BertForSequenceClassification(config)

    def save_architecture(self, directory: str) -> list[str]:
        written = self.tokenizer.save_pretrained(directory)
        names = sorted({os.path.basename(p) for p in written if os.path.isfile(p)})
        return [write_json(directory, ARCHITECTURE, self.model.config.to_dict()), *names]

    @property
    def max_length(self) -> int:
        return min(self.config.max_length, self.model.config.max_position_embeddings)

    def embed_batch(self, model: torch.nn.Module, batch: dict) -> Embedded:
        embeds = model.bert.embeddings.word_embeddings(batch["input_ids"])
        return Embedded(embeds, batch["attention_mask"], {"input_ids": batch["input_ids"]})

    def model_logits(self, model: torch.nn.Module, embedded: Embedded) -> torch.Tensor:
        return model(inputs_embeds=embedded.embeds, attention_mask=embedded.mask)["logits"]

    def model_attentions(self, model: torch.nn.Module, embedded: Embedded) -> tuple[torch.Tensor, list[torch.Tensor]]:
        out = model(inputs_embeds=embedded.embeds, attention_mask=embedded.mask, output_attentions=True)
        return out["logits"], list(out["attentions"])
