"""Paired bootstrap intervals: how far a figure could move by the luck of which posts were drawn.

A drop (clean macro-F1 - attacked macro-F1) on 300 posts can be a few thousandths by chance. Every
resample draws posts with replacement and takes *both* figures on the same draw (paired), so the
interval is that of the difference itself, not of two figures each noisy on its own. The draws are
fixed by the number of posts alone (seed 0), so every (victim, attack) of a folder is resampled alike —
differences between victims are paired too — and a summary is the same however often it is written.

Macro-F1 per resample is computed from confusion counts (one ``bincount`` for a block of resamples),
as :func:`attacks.metrics.detection_metrics` computes it (scikit-learn's macro F1, zero where a class is
neither present nor predicted); an unanswered post (-1) is wrong for its class and no class's false
positive.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

RESAMPLES = 1000
LEVEL = 0.95
BLOCK = 100  # resamples drawn at a time: (BLOCK, n) indices, bounded memory for large data


def resamples(n: int, count: int = RESAMPLES, seed: int = 0) -> Iterator[np.ndarray]:
    """Blocks of resampled post indices, (block, n) each, the same for the same ``n`` and ``seed``."""
    rng = np.random.default_rng(seed)
    for start in range(0, count, BLOCK):
        yield rng.integers(0, n, size=(min(BLOCK, count - start), n))


def macro_f1(labels: np.ndarray, predictions: np.ndarray, num_labels: int, draws: np.ndarray) -> np.ndarray:
    """Macro-F1 of each resample (a row of ``draws``): (len(draws),)."""
    width = num_labels + 1  # a last column for unanswered posts (-1)
    predicted = np.where(predictions < 0, num_labels, predictions)
    codes = labels[draws] * width + predicted[draws] + (np.arange(len(draws)) * num_labels * width)[:, None]
    counts = np.bincount(codes.ravel(), minlength=len(draws) * num_labels * width)
    confusion = counts.reshape(len(draws), num_labels, width).astype(np.float64)
    true_positives = confusion[:, np.arange(num_labels), np.arange(num_labels)]
    wrong = confusion[:, :, :num_labels].sum(1) - true_positives + confusion.sum(2) - true_positives
    denominator = 2 * true_positives + wrong
    f1 = np.divide(2 * true_positives, denominator, out=np.zeros_like(denominator), where=denominator > 0)
    return f1.mean(1)


def accuracy(labels: np.ndarray, predictions: np.ndarray, num_labels: int, draws: np.ndarray) -> np.ndarray:
    return (labels[draws] == predictions[draws]).mean(1)


FIGURES: dict[str, Callable[..., np.ndarray]] = {"f1": macro_f1, "accuracy": accuracy}


def interval(values: np.ndarray, level: float = LEVEL) -> list[float]:
    """The central ``level`` share of ``values``, [low, high]."""
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return [round(float(low), 6), round(float(high), 6)]


def paired_intervals(labels: np.ndarray, before: np.ndarray, after: np.ndarray, num_labels: int,
                     count: int = RESAMPLES) -> dict[str, list[float]]:
    """The interval of ``figure(before) - figure(after)`` for macro-F1 and accuracy, the two prediction
    vectors resampled together (a drop when ``before`` is clean and ``after`` attacked)."""
    labels, before, after = (np.asarray(a, dtype=np.int64) for a in (labels, before, after))
    out = {name: [] for name in FIGURES}
    for draws in resamples(len(labels), count):
        for name, figure in FIGURES.items():
            out[name].append(figure(labels, before, num_labels, draws) - figure(labels, after, num_labels, draws))
    return {name: interval(np.concatenate(values)) for name, values in out.items()}


def mean_difference_interval(labels: np.ndarray, first: list[np.ndarray], second: list[np.ndarray],
                             num_labels: int, count: int = RESAMPLES) -> list[float]:
    """The interval of mean macro-F1 over ``first``'s prediction vectors minus the mean over ``second``'s
    (two victims under the same attacks, on the same posts), all resampled together."""
    labels = np.asarray(labels, dtype=np.int64)
    differences = []
    for draws in resamples(len(labels), count):
        mean_first = np.mean([macro_f1(labels, np.asarray(p), num_labels, draws) for p in first], axis=0)
        mean_second = np.mean([macro_f1(labels, np.asarray(p), num_labels, draws) for p in second], axis=0)
        differences.append(mean_first - mean_second)
    return interval(np.concatenate(differences))


def excludes_zero(bounds: list[float] | None) -> bool:
    """Whether an interval says the difference is real (both ends on one side of zero)."""
    return bounds is not None and (bounds[0] > 0 or bounds[1] < 0)
