"""GAttention (Jarquín-Vásquez, Escalante, Montes-y-Gómez and Aragón, "GAttention: Gated Attention for the
Detection of Abusive Language", Findings of EMNLP 2025, ACL Anthology 2025.findings-emnlp.1105; no arXiv
version): a gate, per token, between self-attention and contextual attention, as a classification head
on the last layer of a BERT encoder.

From the encoded sequence X_e (b, n, d), each head (a GAttention unit) computes, as Jarquín-Vásquez et al.'s
equations number them:

1. self-attention ``X_s = softmax(Q K^T / sqrt(d)) V``, with Q, K, V linear maps of X_e;
2-3. contextual attention: a learned query vector ``u`` scores every token, ``alpha = softmax(Q u)``,
   and ``X_c = alpha * Q`` (each token's Q scaled by its score, not summed);
4-5. ``H_c = tanh(W_c X_c)``, ``H_s = tanh(W_s X_s)``;
6-7. the gate ``z = sigmoid(W_z [X_c, X_s])``, one value a token, and ``G = z H_s + (1 - z) H_c``.

k heads are concatenated and projected back to d (eq. 8-9); then their classification block:
add & norm, a position-wise feed-forward network, add & norm, the mean over the real tokens, a dense
layer with ReLU and the output layer (their equations are followed where the authors' code
departs from them). Padding never takes part: attention and the contextual softmax see real tokens only, and
the mean is over real tokens.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from .heads import HEADS


class GAttentionUnit(nn.Module):
    """One GAttention head over width ``d``. ``gate`` forces z (1: the self-attention path alone, 0:
    the contextual path alone)."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.context = nn.Parameter(torch.randn(d) * d ** -0.5)  # u: the application domain's query
        self.contextual, self.self_attention = nn.Linear(d, d), nn.Linear(d, d)  # W_c, W_s
        self.gate = nn.Linear(2 * d, 1)  # W_z

    def forward(self, x: torch.Tensor, mask: torch.Tensor,
                gate: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """G (b, n, d) and the gate z (b, n)."""
        real = mask.bool()
        q, k, v = self.query(x), self.key(x), self.value(x)
        scores = (q @ k.transpose(-1, -2)) / q.shape[-1] ** 0.5
        x_s = torch.softmax(scores.masked_fill(~real[:, None, :], torch.finfo(scores.dtype).min), -1) @ v  # eq. 1
        alpha = torch.softmax((q @ self.context).masked_fill(~real, torch.finfo(q.dtype).min), -1)  # eq. 2
        x_c = alpha.unsqueeze(-1) * q  # eq. 3
        h_c, h_s = torch.tanh(self.contextual(x_c)), torch.tanh(self.self_attention(x_s))  # eq. 4-5
        z = torch.sigmoid(self.gate(torch.cat([x_c, x_s], -1))).squeeze(-1)  # eq. 6
        if gate is not None:
            z = torch.full_like(z, gate)
        return z.unsqueeze(-1) * h_s + (1 - z.unsqueeze(-1)) * h_c, z  # eq. 7


class MultiHeadGAttention(nn.Module):
    """k GAttention units, their outputs concatenated and projected back to d (eq. 8-9)."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.units = nn.ModuleList(GAttentionUnit(d) for _ in range(heads))
        self.project = nn.Linear(heads * d, d)  # W_l

    def forward(self, x: torch.Tensor, mask: torch.Tensor,
                gate: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """L (b, n, d) and each unit's gate (b, heads, n)."""
        outputs, gates = zip(*(unit(x, mask, gate) for unit in self.units))
        return self.project(torch.cat(outputs, -1)), torch.stack(gates, 1)


class GAttentionHead(nn.Module):
    """GAttention's classification block over an encoder's last hidden states (§3.3)."""

    def __init__(self, d: int, num_labels: int, heads: int = 1, feedforward: int | None = None,
                 dropout: float = 0.1) -> None:
        super().__init__()
        self.attention = MultiHeadGAttention(d, heads)
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        width = feedforward or 4 * d
        self.feedforward = nn.Sequential(nn.Linear(d, width), nn.ReLU(), nn.Linear(width, d))
        self.dropout = nn.Dropout(dropout)
        self.dense, self.output = nn.Linear(d, d), nn.Linear(d, num_labels)

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor,
                gate: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits (b, labels) and the gates (b, heads, n)."""
        attended, gates = self.attention(hidden, mask, gate)
        x = self.norm1(hidden + self.dropout(attended))
        x = self.norm2(x + self.dropout(self.feedforward(x)))
        real = mask.unsqueeze(-1).to(x.dtype)
        pooled = (x * real).sum(1) / real.sum(1).clamp_min(1)  # the mean over real tokens
        return self.output(self.dropout(F.relu(self.dense(pooled)))), gates


class BertWithGAttention(nn.Module):
    """A BERT encoder (``bert``: transformers' BertModel) read by a GAttention head."""

    def __init__(self, bert: nn.Module, num_labels: int, heads: int) -> None:
        super().__init__()
        self.bert = bert
        self.head = GAttentionHead(bert.config.hidden_size, num_labels, heads,
                                   dropout=bert.config.hidden_dropout_prob)

    @property
    def config(self):
        return self.bert.config

    def forward(self, inputs_embeds: torch.Tensor, attention_mask: torch.Tensor, output_attentions: bool = False,
                gate: float | None = None) -> dict:
        """``logits``, ``gates`` (b, heads, n) and, if asked, the encoder's ``attentions``."""
        out = self.bert(inputs_embeds=inputs_embeds, attention_mask=attention_mask,
                        output_attentions=output_attentions)
        logits, gates = self.head(out.last_hidden_state, attention_mask, gate)
        return {"logits": logits, "gates": gates, "attentions": list(out.attentions or ())}


class GAttentionGates:
    """For a BERT victim whose config has ``head`` (``attacks.nn.heads.HEADS``): its name says a head with
    gates, and ``gates`` reads GAttention's z. The model takes ``inputs_embeds`` and ``attention_mask`` and
    returns a dict with ``gates``."""

    @property
    def name(self) -> str:
        return f"{self.kind}-{self.config.head}" if self.has_gates else self.kind

    @property
    def has_gates(self) -> bool:
        return HEADS[self.config.head].gates

    @torch.no_grad()
    def gates(self, texts: Sequence[str]) -> list[list[dict]]:
        """GAttention's gate z for each token a text's prediction read: ``{"token", "start", "end", "z"}``
        with one z a head (near 1: read through self-attention, near 0: through the contextual path);
        [CLS] and [SEP] included, without a span."""
        if not self.has_gates:
            raise ValueError(f"{self.name} has no GAttention head: no gates (train it with --head gattention)")
        self.model.eval()
        out = []
        for at in range(0, len(texts), self.predict_batch_size):
            chunk = texts[at:at + self.predict_batch_size]
            embedded = self.embed(chunk)
            gates = self.model(inputs_embeds=embedded.embeds, attention_mask=embedded.mask)["gates"]
            for row, tokens in enumerate(self.encode(chunk)):
                out.append([{"token": self.tokenizer.convert_ids_to_tokens(i), "start": span and span[0],
                             "end": span and span[1], "z": [round(float(z), 4) for z in gates[row, :, column]]}
                            for column, (i, span) in enumerate(tokens)])
        return out
