"""Every figure of a detector on labelled posts, clean or attacked: the one place they are computed
(``attacks train``, the evaluator and the benchmarks all call :func:`detection_metrics`).

- accuracy and macro precision / recall / F1 over the predicted labels (argmax of the probabilities);
- ranking figures of the offensive score, 1 - p(label 0) (the probability of the one offensive class
  in binary data): AUC, average precision, and HABERTOR's operating points (§5) — the false-positive
  rate when the threshold lets through at most 5% of the offensive posts (``fpr_at_5_fnr``) and the
  false-negative rate when at most 5% of the clean posts are flagged (``fnr_at_5_fpr``).

A row of NaN probabilities (an LLM whose answer named no label) is a wrong prediction for the label
figures and is left out of the ranking figures; ``unanswered`` counts such rows.
"""
from __future__ import annotations

import numpy as np
from sklearn.metrics import (accuracy_score, average_precision_score, precision_recall_fscore_support, roc_auc_score,
                             roc_curve)

RATE = 0.05


def detection_metrics(labels, probs) -> dict[str, float]:
    """``labels`` (n,) and ``probs`` (n, n_classes) -> accuracy, precision, recall, f1 (macro), auc,
    average_precision, fpr_at_5_fnr, fnr_at_5_fpr, n, unanswered. A figure the data cannot give (AUC
    with one class present) is NaN."""
    labels, probs = np.asarray(labels, dtype=int), np.asarray(probs, dtype=np.float64)
    if probs.ndim != 2 or len(probs) != len(labels):
        raise ValueError(f"probs must be (n, n_classes) for {len(labels)} labels, got shape {probs.shape}")
    answered = ~np.isnan(probs).any(axis=1)
    predictions = np.where(answered, np.nan_to_num(probs).argmax(axis=1), -1)
    precision, recall, f1, _ = precision_recall_fscore_support(labels, predictions, labels=range(probs.shape[1]),
                                                               average="macro", zero_division=0)
    figures: dict[str, float] = {"accuracy": float(accuracy_score(labels, predictions)), "precision": float(precision),
                                 "recall": float(recall), "f1": float(f1), "n": int(len(labels))}
    offensive, score = (labels[answered] != 0).astype(int), 1.0 - probs[answered, 0]
    figures.update(auc=float("nan"), average_precision=float("nan"), fpr_at_5_fnr=float("nan"),
                   fnr_at_5_fpr=float("nan"), unanswered=int((~answered).sum()))
    if len(np.unique(offensive)) == 2:
        fpr, tpr, _ = roc_curve(offensive, score)
        figures.update(auc=float(roc_auc_score(offensive, score)),
                       average_precision=float(average_precision_score(offensive, score)),
                       fpr_at_5_fnr=float(fpr[tpr >= 1 - RATE].min()),
                       fnr_at_5_fpr=float(1 - tpr[fpr <= RATE].max()))
    return figures


def drops(clean: dict[str, float], attacked: dict[str, float]) -> dict[str, float]:
    """How far each figure moved from clean to attacked (positive: worse for the detector)."""
    worse_when_higher = {"fpr_at_5_fnr", "fnr_at_5_fpr"}
    return {k: (attacked[k] - clean[k]) if k in worse_when_higher else (clean[k] - attacked[k])
            for k in clean if k not in ("n", "unanswered") and k in attacked}


def prediction_counts(probs) -> dict[str, int]:
    """How many posts a victim put in each label; unanswered posts (NaN rows) as "-1"."""
    probs = np.asarray(probs, dtype=np.float64)
    predicted = np.where(np.isnan(probs).any(1), -1, np.nan_to_num(probs).argmax(1))
    found, counts = np.unique(predicted, return_counts=True)
    return {str(k): int(c) for k, c in zip(found.tolist(), counts.tolist())}
