"""Classification figures as in Xue et al. (2025)'s Table 1: accuracy and macro precision / recall / F1."""
from __future__ import annotations

import numpy as np
from sklearn.metrics import accuracy_score, precision_recall_fscore_support

from cloak.common.io import label_name


def classification_metrics(labels, predictions) -> dict[str, float]:
    """Accuracy, macro precision, recall and F1 (scikit-learn's, a class never predicted counting 0) and ``n``."""
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    precision, recall, f1, _ = precision_recall_fscore_support(labels, predictions, average="macro",
                                                               zero_division=0)
    return {"accuracy": float(accuracy_score(labels, predictions)), "precision": float(precision),
            "recall": float(recall), "f1": float(f1), "n": int(len(labels))}


USEFUL_F1 = 0.5  # a two-class detector at chance scores about 0.5 macro-F1


def useless_reason(f1: float, n: int, predicted: dict[str, int] | None, where: str,
                   names: dict | None = None) -> str | None:
    """Why a detector is useless, or None: on ``n`` posts (``where``: dev posts, clean test posts) it put
    ``predicted[label]`` posts in each label — one label for every answered post — or scored macro-F1
    ``f1`` below 0.5. Its figures under attack mean nothing (a constant detector loses nothing to any
    attack), so training warns and the report leaves it out of "holds up best". ``names``: what each label
    is called (see :func:`cloak.common.io.label_name`)."""
    answered = {k: c for k, c in (predicted or {}).items() if k != "-1" and c}
    if len(answered) == 1 and n > 1:
        (label, count), = answered.items()
        return f"it calls every one of the {count} {where} {label_name(label, names)}"
    if f1 < USEFUL_F1:
        return f"its macro-F1 on the {n} {where} is {f1:.3f}, below {USEFUL_F1} (chance for two labels)"
    return None
