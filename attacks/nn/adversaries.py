"""HABERTOR's adversarial training (Tran et al., EMNLP 2020, arXiv:2010.08865, §4.5), as a table:
``ADVERSARIES`` names how a batch's token embeddings are perturbed for ``training.adv``.

- ``none``: not at all;
- ``fgm``: by a fixed scalar eps along the loss's gradient (Tran et al.'s Table 5 comparison);
- ``adaptive``: by a learnable per-dimension eps (``AdaptiveNoise``), learnt at its own lr, paid for by
  ``lambda_eps * ||eps||`` and projected into [eps_low, eps_high] after every step.

A victim asks its entry whether it perturbs, by how much (``scale``), what the loss pays for it and
what else training needs (the noise module, its parameter group, the projection). torch is imported
where the noise is made, so that ``attacks --help`` lists the names without loading it.
"""
from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import torch
    from torch import nn

    from .habertor_model import AdaptiveNoise


class AdversarialSettings(Protocol):
    """What the adversaries read of a victim's training settings (``HabertorTraining``)."""

    eps: float
    eps_low: float
    eps_high: float
    lambda_eps: float
    eps_lr: float


class Adversary:
    """``adv: none``: no perturbation, nothing to learn or pay; the base of those that perturb."""

    perturbs = False

    def noise(self, width: int, t: AdversarialSettings) -> AdaptiveNoise | None:
        """The module the model carries for it (None: nothing to learn)."""
        return None

    def penalty(self, model: nn.Module, t: AdversarialSettings) -> torch.Tensor | float:
        """What the loss pays for the noise's size."""
        return 0.0

    def parameter_groups(self, groups: list[dict], model: nn.Module, t: AdversarialSettings) -> list[dict]:
        return groups

    def after_step(self, model: nn.Module) -> None:
        """Called after every optimiser step."""


class GradientStep(Adversary, abc.ABC):
    """An adversary that moves the token embeddings along the gold loss's gradient (FGM)."""

    perturbs = True

    @abc.abstractmethod
    def scale(self, model: nn.Module, t: AdversarialSettings) -> torch.Tensor | float:
        """The length of the step along the gradient's direction."""


class FixedFGM(GradientStep):
    """``adv: fgm``: a fixed scalar eps."""

    def scale(self, model: nn.Module, t: AdversarialSettings) -> float:
        return t.eps


class AdaptiveFGM(GradientStep):
    """``adv: adaptive``: a learnable per-dimension eps (see the module docstring)."""

    def noise(self, width: int, t: AdversarialSettings) -> AdaptiveNoise:
        from .habertor_model import AdaptiveNoise

        return AdaptiveNoise(width, t.eps_low, t.eps_high)

    def scale(self, model: nn.Module, t: AdversarialSettings) -> torch.Tensor:
        return model.noise.eps

    def penalty(self, model: nn.Module, t: AdversarialSettings) -> torch.Tensor:
        return t.lambda_eps * model.noise.eps.norm()

    def parameter_groups(self, groups: list[dict], model: nn.Module, t: AdversarialSettings) -> list[dict]:
        noise = model.noise.eps
        groups[0]["params"] = [p for p in groups[0]["params"] if p is not noise]
        return [*groups, {"params": [noise], "lr": t.eps_lr, "weight_decay": 0.0, "name": "eps"}]

    def after_step(self, model: nn.Module) -> None:
        model.noise.project()


ADVERSARIES: dict[str, Adversary] = {"adaptive": AdaptiveFGM(), "fgm": FixedFGM(), "none": Adversary()}
DEFAULT_ADVERSARY = "adaptive"  # Tran et al.'s (2020)
