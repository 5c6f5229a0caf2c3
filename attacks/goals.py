"""What a search attack is after, and how its outcomes are counted (TextAttack's goal functions, Morris et
al., "TextAttack: A Framework for Adversarial Attacks, Data Augmentation, and Adversarial Training in NLP",
2020).

A goal says of a post and the victim's probabilities:

- ``skipped(labels, clean)``: the posts not attacked, the goal being met before any edit (TextAttack skips
  them; they count neither as successes nor as failures);
- ``score(probs, labels)``: how close each text is to the goal, higher closer (an unanswered row, NaN, is
  as far as it gets); the search keeps the edits that raise it;
- ``reached(probs, labels)``: whether each text meets the goal (a success);
- ``saliency_label(label)``: the label whose loss the gradient ranking follows;
- ``check(facts)``: a ValueError where the goal cannot hold for a victim (``Victim.facts``: a label it does
  not know), raised before an evaluation writes anything.

``untargeted`` (the default) wants the gold label gone: a post the victim already gets wrong is skipped.
``targeted:label=K`` wants label K predicted: a post whose gold label is K, or that the victim already
puts in K, is skipped. ``targeted:label=1`` on non-offensive posts is the false-positive attack
moderators fear: a benign post edited until the detector flags it.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

from cloak.common.params import Interval, Named, Registry

GOALS = Registry("goal")
DEFAULT_GOAL = "untargeted"


class Goal(Protocol):
    name: str

    def spec(self) -> str: ...

    def skipped(self, labels: np.ndarray, clean: np.ndarray) -> np.ndarray: ...

    def score(self, probs: np.ndarray, labels: np.ndarray | int) -> np.ndarray: ...

    def reached(self, probs: np.ndarray, labels: np.ndarray | int) -> np.ndarray: ...

    def saliency_label(self, label: int) -> int: ...

    def check(self, facts: Mapping[str, Any]) -> None: ...


@GOALS.register
@dataclasses.dataclass
class Untargeted(Named):
    """The gold label no longer predicted."""

    name = "untargeted"

    def skipped(self, labels: np.ndarray, clean: np.ndarray) -> np.ndarray:
        return ~(answered(clean) & (np.nan_to_num(clean).argmax(-1) == labels))

    def score(self, probs: np.ndarray, labels: np.ndarray | int) -> np.ndarray:
        return np.where(answered(probs), -_at(probs, labels), -np.inf)

    def reached(self, probs: np.ndarray, labels: np.ndarray | int) -> np.ndarray:
        return ~(answered(probs) & (np.nan_to_num(probs).argmax(-1) == labels))

    def saliency_label(self, label: int) -> int:
        return label

    def check(self, facts: Mapping[str, Any]) -> None:
        return None


@GOALS.register
@dataclasses.dataclass
class Targeted(Named):
    """``label`` predicted (TextAttack's ``TargetedClassification``)."""

    name = "targeted"
    label: int = 1
    _parameter_constraints = {"label": Interval(int, 0)}

    def spec(self) -> str:
        return f"{self.name}:label={self.label}"  # the label named, default or not: outcomes are kept by it

    def skipped(self, labels: np.ndarray, clean: np.ndarray) -> np.ndarray:
        return ~answered(clean) | (labels == self.label) | self.reached(clean, labels)

    def score(self, probs: np.ndarray, labels: np.ndarray | int) -> np.ndarray:
        return np.where(answered(probs), _at(probs, self.label), -np.inf)

    def reached(self, probs: np.ndarray, labels: np.ndarray | int) -> np.ndarray:
        return answered(probs) & (np.nan_to_num(probs).argmax(-1) == self.label)

    def saliency_label(self, label: int) -> int:
        return self.label

    def check(self, facts: Mapping[str, Any]) -> None:
        known = facts.get("num_labels")
        if known is not None and self.label >= known:
            raise ValueError(f"goal {self.spec()}: {facts['name']} knows labels 0 to {known - 1}, not {self.label}")


def make_goal(spec: str | Goal) -> Goal:
    """A goal from its command-line form (``untargeted``, ``targeted:label=1``), or the goal itself."""
    return GOALS.make(spec)


def goal_of(settings: Mapping[str, Any]) -> Goal:
    """The goal an attack's recorded settings name (``untargeted`` for an attack without one: cloak, FGM)."""
    return make_goal(settings.get("goal", DEFAULT_GOAL))


def answered(probs: np.ndarray) -> np.ndarray:
    """Whether each row holds probabilities (an LLM whose answer named no label gives NaN)."""
    return ~np.isnan(probs).any(-1)


def _at(probs: np.ndarray, labels: np.ndarray | int) -> np.ndarray:
    """Each row's probability of its label (one label for all rows, or one a row)."""
    labels = np.broadcast_to(np.asarray(labels), probs.shape[:-1])
    return np.take_along_axis(probs, labels[..., None].astype(int), -1)[..., 0]
