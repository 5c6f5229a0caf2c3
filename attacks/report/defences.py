"""The defences view: each detector with and without ``cloak unveil`` in front (``attacks evaluate --defence``),
and trained on cloaked posts or not, on the same attacks, so that a person sees which defence to pick and what
it costs on clean posts.

A row is a (folder, victim) of the matrix; its defence is what its facts say: ``unveil`` (a defended victim),
``augmentation`` (trained on cloaked posts), both, or none. Every row is judged on the same cloak attacks, by
the ranking's rule (``figures.counted``): those every row ran, that changed at least 5% of the posts, whose op
no row saw in training (an augmented detector attacked by its own ops is tested in distribution, which flatters
it) and, where a row has unveil in front, made by foreign ops (unveil reads the project's own cloaks back with
the tables that made them: DESIGN §9c(3)), so defences are compared on cloaks from other sources; by the mean
macro-F1 drop over them with its paired bootstrap 95% interval. A defended row beside its detector (the same
folder, the detector's fingerprint) also gets what the defence changed: clean macro-F1 (the defence's cost on
clean posts) and the mean drop, each with its interval; and the search, which queries the whole pipeline, is the
adaptive attack on the defence, given as its own column."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..bootstrap import excludes_zero, interval, macro_f1, resamples
from .figures import counted
from .results import Results

Predictions = tuple[np.ndarray, np.ndarray, list]  # gold labels, clean predictions, each attack's predictions


def defence_of(facts: dict) -> str:
    """What a row's victim has against cloaks: unveil in front, training on cloaked posts, both, or none."""
    cloaked = (((facts.get("trained_on") or {}).get("train") or {}).get("cloaked") or {}).get("records")
    parts = (["augmentation"] if cloaked else []) + (["unveil"] if facts.get("defence") else [])
    return " + ".join(parts) or "none"


def defence_rows(results: Sequence[Results], rows: Sequence[dict], attacks: Sequence[str]) -> dict | None:
    """The view's data, or None where no row has unveil in front (nothing to compare)."""
    if not any(row["facts"].get("defence") for row in rows):
        return None
    by_label = {r.label: r for r in results}
    judged = [a for a in attacks if all(a in counted(row, attacks) for row in rows)]
    searches = [a for a in attacks if any((row["cells"].get(a) or {}).get("figure") == "counts" for row in rows)]
    read: dict[tuple[str, str], Predictions] = {}  # outcome files read once, for a row and the row defended

    def predictions(row: dict) -> Predictions:
        key = (row["results"], row["victim"])
        if key not in read:
            read[key] = _predictions(by_label[row["results"]], row["victim"], judged)
        return read[key]

    out = []
    for row in rows:
        result = by_label[row["results"]]
        entry = {"row": row["row"], "defence": defence_of(row["facts"]), "clean_f1": row["clean_f1"],
                 "spec": row["facts"].get("defence"),
                 **_mean_drop(result, predictions(row), judged),
                 "search": {a: _search_cell(row["cells"].get(a)) for a in searches}}
        base = _base_row(row, rows)
        if base is not None:
            entry["against"] = {"row": base["row"], **_change(result, predictions(base), predictions(row), judged)}
        out.append(entry)
    return {"attacks": judged, "searches": searches, "rows": out}


def _search_cell(cell: dict | None) -> dict | None:
    if not cell or "skipped" in cell:
        return None
    return {"drop": cell["drop"], "interval": cell["interval"], "success_rate": cell["success_rate"]}


def _base_row(row: dict, rows: Sequence[dict]) -> dict | None:
    """The row of the detector a defended row has in front of it: the same folder, that detector's fingerprint."""
    detector = row["facts"].get("detector")
    if not detector:
        return None
    return next((r for r in rows if r["results"] == row["results"] and r is not row
                 and r["facts"].get("fingerprint") == detector.get("fingerprint")), None)


def _predictions(result: Results, victim: str, attacks: Sequence[str]) -> Predictions:
    labels, predicted = result.clean(victim)
    return labels, predicted, [result.predictions(victim, a) for a in attacks]


def _width(result: Results, labels: np.ndarray) -> int:
    return max(len(result.summary["data"].get("label_names") or {}), int(labels.max()) + 1, 2)


def _drops(labels, clean, attacked, width, draws) -> np.ndarray:
    """The mean macro-F1 drop over the attacks of each resample."""
    before = macro_f1(labels, clean, width, draws)
    return np.mean([before - macro_f1(labels, p, width, draws) for p in attacked], axis=0)


def _mean_drop(result: Results, predictions: Predictions, attacks: Sequence[str]) -> dict:
    if not attacks:
        return {"mean_drop": None, "mean_drop_interval": None}
    labels, clean, attacked = predictions
    width = _width(result, labels)
    everyone = np.arange(len(labels))[None, :]
    values = np.concatenate([_drops(labels, clean, attacked, width, d) for d in resamples(len(labels))])
    return {"mean_drop": float(_drops(labels, clean, attacked, width, everyone)[0]),
            "mean_drop_interval": interval(values)}


def _change(result: Results, base: Predictions, defended: Predictions, attacks: Sequence[str]) -> dict:
    """What the defence changed, defended minus base, on the same posts resampled together: clean macro-F1, and
    the mean drop over ``attacks``; each with its interval and whether that interval holds zero."""
    labels, clean_a, attacked_a = base
    _, clean_b, attacked_b = defended
    width = _width(result, labels)
    clean, drop = [], []
    for draws in resamples(len(labels)):
        clean.append(macro_f1(labels, clean_b, width, draws) - macro_f1(labels, clean_a, width, draws))
        if attacks:
            drop.append(_drops(labels, clean_b, attacked_b, width, draws) - _drops(labels, clean_a, attacked_a, width,
                                                                                 draws))
    everyone = np.arange(len(labels))[None, :]
    out = {"clean_change": float(macro_f1(labels, clean_b, width, everyone)[0]
                                 - macro_f1(labels, clean_a, width, everyone)[0]),
           "clean_interval": interval(np.concatenate(clean))}
    out["clean_noise"] = not excludes_zero(out["clean_interval"])
    if attacks:
        out["drop_change"] = float(_drops(labels, clean_b, attacked_b, width, everyone)[0]
                                   - _drops(labels, clean_a, attacked_a, width, everyone)[0])
        out["drop_interval"] = interval(np.concatenate(drop))
        out["drop_noise"] = not excludes_zero(out["drop_interval"])
    return out
