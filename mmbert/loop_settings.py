"""How the epoch loop (``mmbert.loop``) trains, declared once: the fields every trainer here shares
(epochs, batch size, early stopping, seed, checkpoints, warm-up) and their limits.

The torch detectors' training settings (``attacks.victims.neural.NeuralTraining``) and HABERTOR's
pre-training inherit these fields, with their own defaults; the run configuration's ``train`` section
(``mmbert.presets.RUN_CONFIG``) takes their limits from here. No torch: a run configuration is checked
before anything heavy loads.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from cloak.common.params import Interval, validate_fields


@dataclass
class LoopSettings:
    """How to train (not what): epochs, batch size, early stopping after ``patience`` epochs without
    improvement, seed, a checkpoint every ``checkpoint_minutes`` within an epoch, warm-up share."""

    epochs: int
    batch_size: int = 32
    patience: int = 3
    seed: int = 0
    checkpoint_minutes: float = 10
    warmup_ratio: float = 0.0
    _parameter_constraints: ClassVar[dict] = {
        "epochs": Interval(int, 1), "batch_size": Interval(int, 1), "patience": Interval(int, 1),
        "seed": Interval(int, 0), "checkpoint_minutes": Interval(float, 0),
        "warmup_ratio": Interval(float, 0, 1, closed="left")}

    def __post_init__(self) -> None:
        validate_fields(self, type(self).__name__)

    @classmethod
    def of(cls, settings: Mapping[str, Any], **given: Any) -> LoopSettings:
        """The loop's fields taken from a larger set of training settings (``given`` over them)."""
        merged = {**settings, **given}
        return LoopSettings(**{f.name: merged[f.name] for f in fields(LoopSettings) if f.name in merged})
