"""Embedding-space attacks on a differentiable victim: FGM and PGD (HABERTOR, Tran
et al., EMNLP 2020, arXiv:2010.08865, eq. 2).

Each example's input embeddings ``s`` (what ``victim.embed`` gives: one post's tokens, not the
shared embedding matrix) move to ``s + delta`` with ``||delta||_2 <= eps``, the norm taken per example
over all its real tokens' embeddings:

- FGM: one step along the gradient of the loss of the gold label, ``delta = eps * g / ||g||_2``;
- PGD: ``steps`` steps of size ``alpha`` (default ``2.5 * eps / steps``, Madry et al.), each projected
  back onto the eps-ball. It starts from the FGM point and keeps, per example, its strongest iterate
  (a flipped label first, then the highest loss), so PGD is never weaker than FGM at the same eps.

At ``eps = 0`` both give exactly the clean probabilities. Padding positions are never moved.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from cloak.common.params import Interval, param, validate_fields

from .attack import Outcome, ReportedAs, register_attack
from .victims.base import Victim, check_texts, victim_kind

if TYPE_CHECKING:
    import torch


class NotDifferentiable(TypeError):
    """An embedding attack asked of a victim without input embeddings (conventional, LLM)."""


# In the report: a curve of accuracy against eps, one for FGM and one for PGD; FGM's one step is eps itself.
_CURVE = {"figure": "curve", "axis": "eps", "axis_text": "eps (L2 norm of the perturbation per post)",
          "examples": None, "varies": "eps"}
FGM_REPORTED = ReportedAs(**_CURVE, hidden=("steps", "alpha"))
PGD_REPORTED = ReportedAs(**_CURVE, unset={"alpha": "2.5 eps / steps"})


@dataclasses.dataclass
class EmbeddingAttack:
    """FGM when ``steps`` is 1, PGD with more (see the module docstring)."""

    eps: float = 1.0
    steps: int = 1
    alpha: float | None = None
    batch_size: int = 32
    _parameter_constraints = {"eps": Interval(float, 0), "steps": Interval(int, 1),
                              "alpha": [Interval(float, 0, closed="neither"), None], "batch_size": Interval(int, 1)}

    def __post_init__(self) -> None:
        validate_fields(self, self.kind)

    @property
    def kind(self) -> str:
        return "fgm" if self.steps == 1 else "pgd"

    @property
    def name(self) -> str:
        return f"{self.kind}@{self.eps:g}"

    @property
    def reported_as(self) -> ReportedAs:
        return FGM_REPORTED if self.steps == 1 else PGD_REPORTED

    def settings(self) -> dict:
        return {"kind": self.kind, "eps": self.eps, "steps": self.steps, "alpha": self.alpha}

    def skip_reason(self, facts: dict) -> str | None:
        if not victim_kind(facts["kind"]).differentiable:
            return f"{facts['name']} is not differentiable: no input embeddings to perturb"
        return None

    def attack(self, victim: Victim, records: Sequence[dict], positions: Sequence[int],
               clean: np.ndarray) -> list[Outcome]:
        """One outcome per record: its text as it is, the probabilities on its perturbed embeddings."""
        probs = self.probabilities(victim, [r["text"] for r in records], [r["label"] for r in records])
        return [Outcome(r["text"], [], p, changed=True, queries=self.steps) for r, p in zip(records, probs)]

    def probabilities(self, victim: Victim, texts: Sequence[str], labels: Sequence[int]) -> np.ndarray:
        """The victim's probabilities (n, n_classes) on each text's perturbed embeddings."""
        if not victim.differentiable:
            raise NotDifferentiable(f"{victim.name} has no input embeddings to perturb (conventional and LLM "
                                    "victims take cloaking and search attacks only)")
        texts, labels = check_texts(texts), np.asarray(labels, dtype=int)
        if len(texts) != len(labels):
            raise ValueError(f"{len(texts)} texts but {len(labels)} labels")
        victim.model_.eval()  # dropout off: at eps = 0 the prediction is the clean one
        out = [self._attack_batch(victim, texts[i:i + self.batch_size], labels[i:i + self.batch_size])
               for i in range(0, len(texts), self.batch_size)]
        return np.concatenate(out).astype(np.float64) if out else np.zeros((0, victim.num_labels))

    def _attack_batch(self, victim: Victim, texts: list[str], labels: np.ndarray) -> np.ndarray:
        import torch  # on use: the evaluator imports this module for victims without torch too
        import torch.nn.functional as F

        with torch.no_grad():
            embedded = victim.embed(texts)
        gold = torch.as_tensor(labels, device=embedded.embeds.device)
        real = embedded.mask.unsqueeze(-1).to(embedded.embeds.dtype)  # (b, n, 1): padding stays put

        def loss_and_logits(delta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            logits = victim.logits(embedded.perturbed(delta))
            return F.cross_entropy(logits, gold, reduction="none"), logits

        def step(delta: torch.Tensor, size: float) -> torch.Tensor:
            delta = delta.detach().requires_grad_(True)
            loss, _ = loss_and_logits(delta)
            (grad,) = torch.autograd.grad(loss.sum(), delta)
            grad = grad * real
            return delta.detach() + size * grad / _norm(grad).clamp_min(1e-12)

        delta = torch.zeros_like(embedded.embeds)
        if self.eps == 0:
            with torch.no_grad():
                return torch.softmax(loss_and_logits(delta)[1].float(), -1).cpu().numpy()
        delta = step(delta, self.eps)  # the FGM point
        with torch.no_grad():
            best_loss, best_logits = loss_and_logits(delta)
        if self.kind == "pgd":
            alpha = self.alpha if self.alpha is not None else 2.5 * self.eps / self.steps
            best_flipped = best_logits.argmax(-1) != gold
            for _ in range(self.steps - 1):
                delta = step(delta, alpha)
                delta = delta * (self.eps / _norm(delta).clamp_min(self.eps))  # back onto the eps-ball
                with torch.no_grad():
                    loss, logits = loss_and_logits(delta)
                flipped = logits.argmax(-1) != gold
                better = (flipped & ~best_flipped) | ((flipped == best_flipped) & (loss > best_loss))
                best_loss = torch.where(better, loss, best_loss)
                best_logits = torch.where(better.unsqueeze(-1), logits, best_logits)
                best_flipped = best_flipped | flipped
        return torch.softmax(best_logits.float(), -1).cpu().numpy()


def _norm(x: torch.Tensor) -> torch.Tensor:
    """Each example's L2 norm over all its tokens' embeddings, shaped to broadcast: (b, 1, 1)."""
    return x.flatten(1).norm(dim=1).view(-1, *([1] * (x.dim() - 1)))


def fgm(victim: Victim, texts: Sequence[str], labels: Sequence[int], eps: float, batch_size: int = 32) -> np.ndarray:
    """The victim's probabilities under FGM at ``eps``."""
    return EmbeddingAttack(eps=eps, batch_size=batch_size).probabilities(victim, texts, labels)


def pgd(victim: Victim, texts: Sequence[str], labels: Sequence[int], eps: float, steps: int = 10,
        alpha: float | None = None, batch_size: int = 32) -> np.ndarray:
    """The victim's probabilities under PGD at ``eps`` (``steps`` steps of size ``alpha``)."""
    return EmbeddingAttack(eps=eps, steps=steps, alpha=alpha, batch_size=batch_size).probabilities(victim, texts,
                                                                                                  labels)


@dataclasses.dataclass
class EmbeddingOptions:
    """``attacks evaluate``'s options of FGM and PGD."""

    eps: str = param("0,0.1,0.25,0.5,1,2", "FGM / PGD budgets (L2 norm per post over its tokens' embeddings).",
                     metavar="E,E,...")
    steps: int = param(10, "PGD steps.")
    _parameter_constraints = {"steps": Interval(int, 2)}

    def __post_init__(self) -> None:
        validate_fields(self, "FGM / PGD options")

    def sweep(self, steps: int) -> list[EmbeddingAttack]:
        """One attack per eps of ``eps`` (numbers separated by commas)."""
        try:
            budgets = [float(x) for x in self.eps.split(",") if x.strip()]
        except ValueError:
            raise ValueError(f"--eps must be numbers separated by commas, not {self.eps!r}") from None
        if not budgets:
            raise ValueError("--eps needs at least one number")
        return [EmbeddingAttack(eps=eps, steps=steps) for eps in budgets]


register_attack("fgm", lambda options, records: options.sweep(steps=1), EmbeddingOptions)
register_attack("pgd", lambda options, records: options.sweep(steps=options.steps), EmbeddingOptions)
