"""``chinesebert``: ChineseBERT-style fusion (Sun et al., 2021) on any BERT.

Each token enters the encoder as the fusion of three embeddings, concatenated and projected to the
hidden size:

- its character (word) embedding, the backbone's own;
- its glyph: the token drawn by ``render`` (the same glyph images MMBERT uses, one per vocabulary
  entry, computed once and kept in the model) through a small CNN;
- its pinyin: the letters and tone digit of its TONE3 reading (pypinyin; none for non-Chinese tokens)
  embedded, through a 1-D CNN and max-pooled.

The fused vectors are the input embeddings an embedding-space attack perturbs (a cloak changes all
three), then position and token-type embeddings are added as in BERT.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from cloak.params import Interval

from .bert import BertVictimConfig, HeadTailTokens, attention_kernel, load_tokenizer
from .gattention import GAttentionGates, GAttentionHead
from .neural import ARCHITECTURE, Embedded, TorchVictim, read_json, write_json
from .victim import register_victim

PINYIN_LETTERS = 8  # longest TONE3 syllable: "zhuang1"
PINYIN_ALPHABET = " abcdefghijklmnopqrstuvwxyz012345"  # index 0 pads


def pinyin_table(tokens: Sequence[str]) -> torch.Tensor:
    """(len(tokens), PINYIN_LETTERS) letter ids of each token's TONE3 reading; zeros where it has none."""
    from cloak.hanzi import is_han
    from cloak.pinyin import char_readings

    table = torch.zeros(len(tokens), PINYIN_LETTERS, dtype=torch.long)
    for i, token in enumerate(tokens):
        char = token.removeprefix("##")
        if len(char) == 1 and is_han(char) and char_readings(char):
            letters = [PINYIN_ALPHABET.index(c) for c in char_readings(char)[0][:PINYIN_LETTERS]
                       if c in PINYIN_ALPHABET]
            table[i, :len(letters)] = torch.tensor(letters)
    return table


@dataclasses.dataclass
class ChineseBertConfig(BertVictimConfig):
    """backbone, max_length, head_share, head, gattention_heads: as for ``bert``; glyph_size: pixels of
    each glyph image; glyph_dim, pinyin_dim: widths of the glyph and pinyin embeddings."""

    glyph_size: int = 24
    glyph_dim: int = 128
    pinyin_dim: int = 64
    _parameter_constraints = {**BertVictimConfig._parameter_constraints, "glyph_size": Interval(int, 8),
                              "glyph_dim": Interval(int, 1), "pinyin_dim": Interval(int, 1)}


class ChineseBertModel(nn.Module):
    """A BertModel whose input embeddings fuse character, glyph and pinyin; a linear head on the
    pooled [CLS], or a GAttention head over the last layer (``gattention_heads`` > 0)."""

    def __init__(self, bert_config, num_labels: int, glyph_size: int, glyph_dim: int, pinyin_dim: int,
                 gattention_heads: int = 0) -> None:
        super().__init__()
        from transformers import BertModel

        self.bert = BertModel(bert_config, add_pooling_layer=not gattention_heads)
        vocab, hidden = bert_config.vocab_size, bert_config.hidden_size
        self.register_buffer("glyphs", torch.zeros(vocab, glyph_size, glyph_size, dtype=torch.uint8))
        self.register_buffer("pinyin", torch.zeros(vocab, PINYIN_LETTERS, dtype=torch.long))
        self.glyph_cnn = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.GELU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.GELU(), nn.AdaptiveAvgPool2d(2),
            nn.Flatten(), nn.Linear(64 * 4, glyph_dim))
        self.pinyin_embeddings = nn.Embedding(len(PINYIN_ALPHABET), pinyin_dim, padding_idx=0)
        self.pinyin_cnn = nn.Conv1d(pinyin_dim, pinyin_dim, kernel_size=2, padding=1)
        self.fusion = nn.Linear(hidden + glyph_dim + pinyin_dim, hidden)
        if gattention_heads:
            self.head = GAttentionHead(hidden, num_labels, gattention_heads, dropout=bert_config.hidden_dropout_prob)
        else:
            self.dropout = nn.Dropout(bert_config.hidden_dropout_prob)
            self.classifier = nn.Linear(hidden, num_labels)

    def fused_embeddings(self, input_ids: torch.Tensor) -> torch.Tensor:
        chars = self.bert.embeddings.word_embeddings(input_ids)
        ids, inverse = torch.unique(input_ids, return_inverse=True)  # each distinct token's glyph once
        # spread back by F.embedding, whose backward repeats exactly (indexing's varies with the CPU threads)
        glyph = F.embedding(inverse, self.glyph_cnn(self.glyphs[ids].unsqueeze(1).float() / 255.0))
        letters = self.pinyin_embeddings(self.pinyin[ids]).transpose(1, 2)  # (distinct, dim, letters)
        pinyin = F.embedding(inverse, self.pinyin_cnn(letters).max(-1).values)
        return self.fusion(torch.cat([chars, glyph, pinyin], -1))

    def forward(self, inputs_embeds: torch.Tensor, attention_mask: torch.Tensor,
                output_attentions: bool = False) -> dict:
        """``logits``, the encoder's ``attentions`` if asked, and GAttention's ``gates`` where it has them."""
        out = self.bert(inputs_embeds=inputs_embeds, attention_mask=attention_mask, output_attentions=output_attentions)
        attentions = list(out.attentions or ())
        if hasattr(self, "head"):
            logits, gates = self.head(out.last_hidden_state, attention_mask)
            return {"logits": logits, "gates": gates, "attentions": attentions}
        return {"logits": self.classifier(self.dropout(out.pooler_output)), "attentions": attentions}


@register_victim
class ChineseBertVictim(GAttentionGates, HeadTailTokens, TorchVictim):
    """Character + glyph + pinyin embeddings fused into a BERT (see the module docstring)."""

    kind = "chinesebert"
    Config = ChineseBertConfig

    def _model(self, bert_config, num_labels: int) -> ChineseBertModel:
        c = self.config
        return ChineseBertModel(bert_config, num_labels, c.glyph_size, c.glyph_dim, c.pinyin_dim,
                                c.gattention_heads if c.head == "gattention" else 0)

    def build(self, num_labels: int) -> nn.Module:
        from transformers import BertModel

        from mmbert.tokenization import vocabulary
        from mmbert.vision import glyph_images

        self.tokenizer = load_tokenizer(self.config.backbone)
        bert = BertModel.from_pretrained(self.config.backbone, add_pooling_layer=self.config.head == "linear",
                                         attn_implementation=attention_kernel(self))
        if len(self.tokenizer) > bert.config.vocab_size:
            bert.resize_token_embeddings(len(self.tokenizer))
        model = self._model(bert.config, num_labels)
        model.bert = bert
        tokens = vocabulary(self.tokenizer)
        model.glyphs.copy_(torch.from_numpy(glyph_images(tokens, self.config.glyph_size)))
        model.pinyin.copy_(pinyin_table(tokens))
        return model

    def architecture(self, directory: str) -> nn.Module:
        from transformers import BertConfig

        self.tokenizer = load_tokenizer(directory)
        config = BertConfig.from_dict(read_json(directory, ARCHITECTURE))
        config._attn_implementation = attention_kernel(self)
        return self._model(config, self.num_labels)

    def save_architecture(self, directory: str) -> list[str]:
        written = self.tokenizer.save_pretrained(directory)
        names = sorted({os.path.basename(p) for p in written if os.path.isfile(p)})
        return [write_json(directory, ARCHITECTURE, self.model.bert.config.to_dict()), *names]

    @property
    def max_length(self) -> int:
        return min(self.config.max_length, self.model.bert.config.max_position_embeddings)

    def embed_batch(self, model: nn.Module, batch: dict) -> Embedded:
        return Embedded(model.fused_embeddings(batch["input_ids"]), batch["attention_mask"],
                        {"input_ids": batch["input_ids"]})

    def model_logits(self, model: nn.Module, embedded: Embedded) -> torch.Tensor:
        return model(embedded.embeds, embedded.mask)["logits"]

    def model_attentions(self, model: nn.Module, embedded: Embedded) -> tuple[torch.Tensor, list[torch.Tensor]]:
        out = model(embedded.embeds, embedded.mask, output_attentions=True)
        return out["logits"], out["attentions"]
