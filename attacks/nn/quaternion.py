"""Quaternion layers (HABERTOR §4.2, after Parcollet et al. 2019 and Tay et al. 2019).

A vector of size d is read as a quaternion of four d/4 components (real, i, j, k: the first quarter is
the real part, and so on). A quaternion linear layer multiplies it by a weight quaternion with four
(in/4, out/4) blocks r, i, j, k (the Hamilton product), so it holds a quarter of a dense layer's
weights: every output component is a signed mix of the same four blocks. It runs as one matmul over
the assembled (in, out) block matrix, not as sixteen small ones.
"""
from __future__ import annotations

import math

import torch
from torch import nn


def hamilton_matrix(r: torch.Tensor, i: torch.Tensor, j: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """The (in, out) real matrix of right-multiplication by the weight quaternion (r, i, j, k), each block
    (in/4, out/4): ``x @ hamilton_matrix(...)`` is the Hamilton product of the weight and x."""
    return torch.cat([torch.cat([r, -i, -j, -k], 0),
                      torch.cat([i, r, -k, j], 0),
                      torch.cat([j, k, r, -i], 0),
                      torch.cat([k, -j, i, r], 0)], 1)


class QuaternionLinear(nn.Module):
    """A linear map from ``in_features`` to ``out_features`` (both multiples of 4) through the Hamilton
    product: ``in * out / 4`` weights and ``out`` biases."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True) -> None:
        super().__init__()
        if in_features % 4 or out_features % 4:
            raise ValueError(f"a quaternion layer needs sizes divisible by 4, not {in_features} -> {out_features}")
        self.in_features, self.out_features = in_features, out_features
        self.r, self.i, self.j, self.k = (nn.Parameter(torch.empty(in_features // 4, out_features // 4))
                                          for _ in range(4))
        self.bias = nn.Parameter(torch.zeros(out_features)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # Glorot over the assembled matrix: each of its entries is one block entry, up to sign
        std = math.sqrt(2.0 / (self.in_features + self.out_features))
        for block in (self.r, self.i, self.j, self.k):
            nn.init.normal_(block, std=std)

    @property
    def weight(self) -> torch.Tensor:
        """The assembled (in, out) matrix."""
        return hamilton_matrix(self.r, self.i, self.j, self.k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = x @ self.weight
        return out + self.bias if self.bias is not None else out

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class QuaternionEmbedding(nn.Module):
    """HABERTOR's vocabulary factorisation: each token a quaternion of size ``embedding_size`` (V x E
    weights), taken to the hidden size by a quaternion transformation (E x H / 4 weights), its four
    components concatenated into an ordinary vector."""

    def __init__(self, vocab_size: int, embedding_size: int, hidden_size: int, padding_idx: int | None = None) -> None:
        super().__init__()
        self.table = nn.Embedding(vocab_size, embedding_size, padding_idx=padding_idx)
        self.project = QuaternionLinear(embedding_size, hidden_size, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.project(self.table(ids))
