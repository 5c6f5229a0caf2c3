"""Attention regularisers for the transformer victims (EAR and KLAR, Bonaldi et al. 2023,
arXiv:2309.02311, §3): where a detector looks.

- **EAR** (entropy attention regularisation, Attanasio et al. 2022): per layer, the entropy of each
  real token's head-averaged attention row (over the real tokens), averaged over the tokens; summed over
  the layers. The training loss is ``CE - alpha * EAR``: low-entropy attention, a detector staring at a
  few identity words, is penalised.
- **KLAR** (Kullback-Leibler attention regularisation): per layer, ``KL(a_i || t)`` of each real token's
  head-averaged attention row against a target that gives share ``lam`` to the relevant tokens (those
  covering a lexicon term) and ``1 - lam`` to the others, evenly within each set; averaged over the
  tokens and the layers. The loss is ``CE + alpha * KLAR``. A post with no relevant token (or nothing
  else) gets the even target over its real tokens.

Both take the attention weights of every layer, ``(batch, heads, n, n)`` each, rows summing to 1 over the
real tokens (eager attention; fused kernels do not return them).

``REGULARIZERS`` names them (and ``none``) for ``training.regularizer``: a victim asks the entry what it
needs (attention weights, relevant tokens) and what it adds to the loss. torch is imported where a term is
computed, so that ``attacks --help`` lists the names without loading it.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

TINY = 1e-12


def load_relevant(path: str | None):
    """The lexicon whose terms KLAR's relevant tokens cover: a term-per-line (or term<TAB>category)
    file, or the default lexicon."""
    from cloak.targets import Lexicon, default_lexicon

    return Lexicon.from_file(path) if path else default_lexicon()


def _rows(attention: torch.Tensor) -> torch.Tensor:
    """Head-averaged attention rows (b, n, n), in float."""
    return attention.float().mean(1)


def _mean_over_real(values: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
    """Each example's mean over its real tokens, then the mean over the batch."""
    per_example = (values * real).sum(1) / real.sum(1).clamp_min(1)
    return per_example.mean()


def ear_term(attentions: Sequence[torch.Tensor], mask: torch.Tensor) -> torch.Tensor:
    """The EAR term: summed over layers, the mean entropy of the real tokens' head-averaged attention."""
    import torch

    real = mask.float()
    total = torch.zeros((), device=mask.device)
    for attention in attentions:
        rows = _rows(attention)
        entropy = -(rows * rows.clamp_min(TINY).log()).sum(-1)  # (b, n): 0 * log 0 counts 0
        total = total + _mean_over_real(entropy, real)
    return total


def klar_target(mask: torch.Tensor, relevant: torch.Tensor, lam: float) -> torch.Tensor:
    """(b, n) target attention: ``lam`` spread over the relevant real tokens, ``1 - lam`` over the other
    real tokens, 0 on padding; even over the real tokens where either set is empty."""
    import torch

    real = mask.bool()
    chosen, other = relevant.bool() & real, ~relevant.bool() & real
    n_chosen, n_other = chosen.sum(1, keepdim=True).float(), other.sum(1, keepdim=True).float()
    split = torch.where(chosen, lam / n_chosen.clamp_min(1), (1 - lam) / n_other.clamp_min(1)) * real
    even = real.float() / real.sum(1, keepdim=True).clamp_min(1)
    both = (n_chosen > 0) & (n_other > 0)
    return torch.where(both, split, even)


def klar_term(attentions: Sequence[torch.Tensor], mask: torch.Tensor, relevant: torch.Tensor,
              lam: float) -> torch.Tensor:
    """The KLAR term: averaged over layers and real tokens, KL(head-averaged attention row || target)."""
    import torch

    real = mask.float()
    target = klar_target(mask, relevant, lam).unsqueeze(1)  # (b, 1, n): the same for every row
    total = torch.zeros((), device=mask.device)
    for attention in attentions:
        rows = _rows(attention)
        kl = (rows * (rows.clamp_min(TINY).log() - target.clamp_min(TINY).log())).sum(-1)  # (b, n)
        total = total + _mean_over_real(kl, real)
    return total / max(1, len(attentions))


def relevant_positions(texts: Sequence[str], token_spans: Sequence[Sequence[tuple[int, int] | None]],
                       lexicon, width: int) -> torch.Tensor:
    """(len(texts), width) booleans: the tokens whose characters overlap a lexicon term of their text."""
    import torch

    out = torch.zeros(len(texts), width, dtype=torch.bool)
    for row, (text, spans) in enumerate(zip(texts, token_spans)):
        terms = lexicon.find(text)
        for column, span in enumerate(spans):
            if span is not None and any(span[0] < end and start < span[1] for start, end in terms):
                out[row, column] = True
    return out


class Regularizer:
    """An attention regulariser of the training loss; this one, ``none``, adds nothing and reads no
    attention weights. ``alpha``: its weight when the training gives none."""

    reads_attentions = False  # the model must return every layer's attention weights (eager attention)
    needs_relevant = False  # each batch carries which of its tokens cover a lexicon term
    alpha = 0.0

    def term(self, attentions: Sequence[torch.Tensor], mask: torch.Tensor, relevant: torch.Tensor | None = None,
             *, alpha: float | None = None, lam: float = 0.4) -> torch.Tensor | float:
        """What it adds to the task loss (``alpha`` None: its own weight; ``lam``: KLAR's share)."""
        return 0.0


class EAR(Regularizer):
    """``-alpha * EAR``: the loss rewards attention entropy."""

    reads_attentions, alpha = True, 0.01

    def term(self, attentions: Sequence[torch.Tensor], mask: torch.Tensor, relevant: torch.Tensor | None = None,
             *, alpha: float | None = None, lam: float = 0.4) -> torch.Tensor:
        return -(self.alpha if alpha is None else alpha) * ear_term(attentions, mask)


class KLAR(Regularizer):
    """``alpha * KLAR``: the loss pays for attention away from the target on the relevant tokens."""

    reads_attentions, needs_relevant, alpha = True, True, 0.1

    def term(self, attentions: Sequence[torch.Tensor], mask: torch.Tensor, relevant: torch.Tensor | None = None,
             *, alpha: float | None = None, lam: float = 0.4) -> torch.Tensor:
        if relevant is None:
            raise ValueError("KLAR needs the relevant tokens of the batch")
        return (self.alpha if alpha is None else alpha) * klar_term(attentions, mask, relevant, lam)


REGULARIZERS: dict[str, Regularizer] = {"none": Regularizer(), "ear": EAR(), "klar": KLAR()}
