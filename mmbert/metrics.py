"""Classification figures as in the paper's Table 1: accuracy and macro precision / recall / F1."""
from __future__ import annotations

import numpy as np
from sklearn.metrics import accuracy_score, precision_recall_fscore_support


def classification_metrics(labels, predictions) -> dict[str, float]:
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    precision, recall, f1, _ = precision_recall_fscore_support(labels, predictions, average="macro",
                                                               zero_division=0)
    return {"accuracy": float(accuracy_score(labels, predictions)), "precision": float(precision),
            "recall": float(recall), "f1": float(f1), "n": int(len(labels))}
