"""The classification heads a BERT-family victim reads its encoder with (``config.head`` of ``bert`` and
``chinesebert``), as a table: what each one gives (GAttention's gates) and how many GAttention units
its model builds. torch-free, so that ``attacks --help`` lists the names without loading torch."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Head:
    """``gates``: it gives each token's GAttention gate z (``attacks predict --gates``)."""

    gates: bool

    def units(self, gattention_heads: int) -> int:
        """The GAttention units its model builds (``gattention_heads`` of the config; 0: a linear head)."""
        return gattention_heads if self.gates else 0


HEADS = {
    "linear": Head(gates=False),  # a linear layer on the first token ([CLS] / <s>)
    # GAttention (Jarquín-Vásquez et al., Findings of EMNLP 2025) over the last layer: attacks.nn.gattention
    "gattention": Head(gates=True),
}
DEFAULT_HEAD = "linear"
