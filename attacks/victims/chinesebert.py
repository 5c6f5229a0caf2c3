"""``chinesebert``: ChineseBERT-style fusion (Sun et al., 2021) on any pretrained encoder.

Each token enters the encoder as the fusion of three embeddings, concatenated and projected to the
hidden size:

- its character (word) embedding, the backbone's own;
- its glyph: the token drawn by ``render`` (the same glyph images MMBERT uses, one per vocabulary
  entry, computed once and kept in the model; a piece of several characters, XLM-R's 垃圾, drawn
  whole) through a small CNN;
- its pinyin: the letters and tone digits of its characters' TONE3 readings (pypinyin; none for
  non-Chinese tokens) embedded, through a 1-D CNN and max-pooled.

The fused vectors are the input embeddings an embedding-space attack perturbs (a cloak changes all
three), then position and token-type embeddings are added as in BERT. The fusion starts as the identity on
the character embeddings (glyph and pinyin weighed 0), so that on a pretrained encoder fine-tuning starts
where ``bert``'s does.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from cloak.common.params import Interval

from ..nn.gattention import GAttentionGates, GAttentionHead
from ..nn.heads import HEADS
from .base import register_victim
from .bert import (BertVictimConfig, HeadTailTokens, SavedEncoder, attention_kernel, first_token, saved_encoder,
                   saved_shapes)
from .neural import Embedded, FineTunedVictim

PINYIN_LETTERS = 8  # longest TONE3 syllable: "zhuang1"
PINYIN_ALPHABET = " abcdefghijklmnopqrstuvwxyz012345"  # index 0 pads
MAX_PIECE_CHARS = 8  # a longer piece (XLM-R has a few idioms and names) is read by its first 8 characters


def han_characters(piece: str) -> list[str]:
    from cloak.hanzi import is_han

    return [c for c in piece if is_han(c)]


def pinyin_table(pieces: Sequence[str], chars: int | None = None) -> torch.Tensor:
    """(len(pieces), chars * PINYIN_LETTERS) uint8 letter ids: the TONE3 reading of each Chinese
    character of each piece (the text ``mmbert.tokenization.piece_texts`` gives; a piece of several
    read as the word it spells, 银行 yin2 hang2), one slot of PINYIN_LETTERS letters a character, zeros
    where there is none. ``chars``: the slots a piece has (default: its vocabulary's longest piece, at
    most MAX_PIECE_CHARS); 1 for a vocabulary of single characters, such as bert-base-chinese's."""
    from cloak.pinyin import char_readings, word_reading

    hans = [han_characters(p) for p in pieces]
    if chars is None:
        chars = min(MAX_PIECE_CHARS, max((len(h) for h in hans), default=1) or 1)
    table = torch.zeros(len(pieces), chars * PINYIN_LETTERS, dtype=torch.uint8)
    for i, characters in enumerate(hans):
        if len(characters) == 1:
            syllables = char_readings(characters[0])[:1]
        else:
            syllables = word_reading("".join(characters)) if characters else ()
        for slot, syllable in enumerate(syllables[:chars]):
            letters = [PINYIN_ALPHABET.index(c) for c in syllable[:PINYIN_LETTERS] if c in PINYIN_ALPHABET]
            if letters:
                start = slot * PINYIN_LETTERS
                table[i, start:start + len(letters)] = torch.tensor(letters, dtype=torch.uint8)
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
    """An encoder (``bert``: any transformers encoder) whose input embeddings fuse character, glyph and
    pinyin; a linear head on its first token (``attacks.victims.bert.first_token``), or a GAttention head over
    the last layer (``gattention_heads`` > 0). ``pinyin_chars``: pinyin slots a token has (the longest
    piece of its vocabulary, in characters)."""

    def __init__(self, bert: nn.Module, num_labels: int, glyph_size: int, glyph_dim: int, pinyin_dim: int,
                 gattention_heads: int = 0, pinyin_chars: int = 1) -> None:
        super().__init__()
        self.bert = bert
        config = bert.config
        vocab, hidden = config.vocab_size, config.hidden_size
        self.register_buffer("glyphs", torch.zeros(vocab, glyph_size, glyph_size, dtype=torch.uint8))
        self.register_buffer("pinyin", torch.zeros(vocab, pinyin_chars * PINYIN_LETTERS, dtype=torch.uint8))
        self.glyph_cnn = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.GELU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.GELU(), nn.AdaptiveAvgPool2d(2),
            nn.Flatten(), nn.Linear(64 * 4, glyph_dim))
        self.pinyin_embeddings = nn.Embedding(len(PINYIN_ALPHABET), pinyin_dim, padding_idx=0)
        self.pinyin_cnn = nn.Conv1d(pinyin_dim, pinyin_dim, kernel_size=2, padding=1)
        self.fusion = nn.Linear(hidden + glyph_dim + pinyin_dim, hidden)
        # The fusion starts as the identity on the encoder's own embeddings, glyph and pinyin weighed 0:
        # fine-tuning starts from what a pretrained encoder knows and learns what glyphs and pinyin add. A
        # random projection (Sun et al. 2021 pre-train theirs; we do not) threw that away: on e5's first 6
        # layers and 2,000 COLD posts, chinesebert scored 0.560 macro-F1 against bert's 0.757.
        with torch.no_grad():
            self.fusion.weight.zero_()
            self.fusion.weight[:, :hidden] = torch.eye(hidden)
            self.fusion.bias.zero_()
        self.head = None
        if gattention_heads:
            self.bert.pooler = None  # the GAttention head reads every token's last hidden state
            self.head = GAttentionHead(hidden, num_labels, gattention_heads, dropout=config.hidden_dropout_prob)
        else:
            self.dropout = nn.Dropout(config.hidden_dropout_prob)
            self.classifier = nn.Linear(hidden, num_labels)

    def fused_embeddings(self, input_ids: torch.Tensor) -> torch.Tensor:
        chars = self.bert.get_input_embeddings()(input_ids)
        ids, inverse = torch.unique(input_ids, return_inverse=True)  # each distinct token's glyph once
        # spread back by F.embedding, whose backward repeats exactly (indexing's varies with the CPU threads)
        glyph = F.embedding(inverse, self.glyph_cnn(self.glyphs[ids].unsqueeze(1).float() / 255.0))
        letters = self.pinyin_embeddings(self.pinyin[ids].long()).transpose(1, 2)  # (distinct, dim, letters)
        pinyin = F.embedding(inverse, self.pinyin_cnn(letters).max(-1).values)
        return self.fusion(torch.cat([chars, glyph, pinyin], -1))

    def forward(self, inputs_embeds: torch.Tensor, attention_mask: torch.Tensor,
                output_attentions: bool = False) -> dict:
        """``logits``, the encoder's ``attentions`` if asked, and GAttention's ``gates`` where it has them."""
        out = self.bert(inputs_embeds=inputs_embeds, attention_mask=attention_mask, output_attentions=output_attentions)
        attentions = list(out.attentions or ())
        if self.head is not None:
            logits, gates = self.head(out.last_hidden_state, attention_mask)
            return {"logits": logits, "gates": gates, "attentions": attentions}
        return {"logits": self.classifier(self.dropout(first_token(out))), "attentions": attentions}


@register_victim
class ChineseBertVictim(GAttentionGates, SavedEncoder, HeadTailTokens, FineTunedVictim):
    """Character + glyph + pinyin embeddings fused into an encoder (see the module docstring)."""

    kind = "chinesebert"
    summary = "ChineseBERT-style: character + glyph + pinyin embeddings fused into an encoder"
    Config = ChineseBertConfig

    def _model(self, bert: nn.Module, num_labels: int, pinyin_chars: int) -> ChineseBertModel:
        c = self.config
        return ChineseBertModel(bert, num_labels, c.glyph_size, c.glyph_dim, c.pinyin_dim,
                                HEADS[c.head].units(c.gattention_heads), pinyin_chars)

    def build(self, num_labels: int) -> nn.Module:
        from mmbert.loading import load_backbone
        from mmbert.tokenization import backbone_tokenizer, piece_texts
        from mmbert.vision import glyph_images

        self.tokenizer_ = backbone_tokenizer(self.config.backbone)
        bert = load_backbone(self.config.backbone, self.config.backbone_layers, attention_kernel(self))
        if len(self.tokenizer_) > bert.config.vocab_size:
            bert.resize_token_embeddings(len(self.tokenizer_))
        pieces = piece_texts(self.tokenizer_, bert.config.vocab_size)
        pinyin = pinyin_table(pieces)
        model = self._model(bert, num_labels, pinyin.shape[1] // PINYIN_LETTERS)
        model.glyphs.copy_(torch.from_numpy(glyph_images(pieces, self.config.glyph_size)))
        model.pinyin.copy_(pinyin)
        return model

    def architecture(self, directory: str) -> nn.Module:
        from mmbert.tokenization import load_tokenizer

        self.tokenizer_ = load_tokenizer(directory)
        letters = saved_shapes(directory)["pinyin"][1]  # int64 in victims saved before pieces of several characters
        return self._model(saved_encoder(directory, attention_kernel(self)), self.num_labels_, letters // PINYIN_LETTERS)

    def embed_batch(self, model: nn.Module, batch: dict) -> Embedded:
        return Embedded(model.fused_embeddings(batch["input_ids"]), batch["attention_mask"],
                        {"input_ids": batch["input_ids"]})

    def model_logits(self, model: nn.Module, embedded: Embedded) -> torch.Tensor:
        return model(embedded.embeds, embedded.mask)["logits"]

    def model_attentions(self, model: nn.Module, embedded: Embedded) -> tuple[torch.Tensor, list[torch.Tensor]]:
        out = model(embedded.embeds, embedded.mask, output_attentions=True)
        return out["logits"], out["attentions"]
