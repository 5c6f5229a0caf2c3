"""How the MMBERT benchmarks score their trained models: each test set's figures, the drops under each
cloak, a paired bootstrap of every model's drop against the text-only twin's, and Xue et al. (2025)'s goal
of half the drop. Not a benchmark: ``bench.mmbert_cold`` and ``bench.mmbert_heldout`` score with it.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from bench.mmbert_data import TEST_OPS, TEST_SETS
from cloak.common.io import read_records

BOOTSTRAP = 2000  # resamples of the test posts
# The models every run trains: the run folder of the model evaluated, and the modalities (None: all three).
MODELS = {"mmbert": ("mmbert_stage3", None), "text_only": ("text_only", ("text",))}


def evaluate(model_dir: Path, files: dict, features: dict,
             sets: tuple[str, ...] = TEST_SETS) -> tuple[dict, dict[str, np.ndarray]]:
    """Figures on each test set (``files["test_NAME"]``, ``clean`` first), overall and on the posts its op
    changed; the drops against the same posts clean (the test files hold the same posts in the same order).
    Also returns the predictions, by test set. ``features``: the run's (its speech cache, where the test
    posts were spoken)."""
    from mmbert.inference import infer
    from mmbert.loading import load_model
    from mmbert.metrics import classification_metrics

    model, featurizer = load_model(str(model_dir), features)
    out, clean_predictions, by_set = {}, None, {}
    for name in sets:
        records = [r for _, r in read_records(str(files[f"test_{name}"]))]
        predictions = by_set[name] = infer(model, featurizer, records)["probs"].argmax(1)
        labels = [r["label"] for r in records]
        out[name] = {"all": classification_metrics(labels, predictions)}
        if name == "clean":
            clean_predictions = predictions
            continue
        changed = [i for i, r in enumerate(records) if r.get("source_text", r["text"]) != r["text"]]
        changed_labels = [labels[i] for i in changed]
        out[name]["changed"] = classification_metrics(changed_labels, predictions[changed])
        out[name]["clean_on_changed"] = classification_metrics(changed_labels, clean_predictions[changed])
        out[name]["drop_f1"] = round(out["clean"]["all"]["f1"] - out[name]["all"]["f1"], 4)
        out[name]["drop_f1_changed"] = round(out[name]["clean_on_changed"]["f1"] - out[name]["changed"]["f1"], 4)
    return out, by_set


def bootstrap_drops(labels: np.ndarray, predictions: dict[str, dict[str, np.ndarray]],
                    resamples: int = BOOTSTRAP, ops: tuple[str, ...] = TEST_OPS) -> dict:
    """95% intervals of each model's F1 drop under each op, and of text-only's drop minus each other
    model's, by resampling test posts (the same posts for every model and test set: a paired bootstrap,
    ``attacks.bootstrap``), so that a difference can be told from the noise of the test posts."""
    from attacks.bootstrap import interval, macro_f1, resamples as draws_of

    drops: dict[str, dict[str, list]] = {op: {m: [] for m in predictions} for op in ops}
    for draws in draws_of(len(labels), resamples):
        for model, p in predictions.items():
            clean = macro_f1(labels, p["clean"], 2, draws)
            for op in ops:
                drops[op][model].append(clean - macro_f1(labels, p[op], 2, draws))
    out = {"resamples": resamples}
    for op, by_model in drops.items():
        d = {m: np.concatenate(v) for m, v in by_model.items()}
        out[op] = {f"{m}_drop_f1": interval(v) for m, v in d.items()}
        for m in (m for m in d if m != "text_only"):
            out[op][f"text_only_minus_{m}"] = interval(d["text_only"] - d[m])
            out[op][f"share_{m}_drops_less"] = round(float(np.mean(d[m] < d["text_only"])), 4)
    return out


def predictions_text(labels: np.ndarray, predictions: dict[str, dict[str, np.ndarray]]) -> dict:
    """The gold labels and every model's predicted label on every test set, a digit a post (``"0110..."``): what
    ``bench.mmbert_verdict`` resamples across seeds, compact in the JSON."""
    def digits(values: np.ndarray) -> str:
        return "".join(map(str, values.tolist()))

    return {"labels": digits(labels), **{m: {k: digits(v) for k, v in p.items()} for m, p in predictions.items()}}


def half_the_drop(results: dict, ops: tuple[str, ...] = TEST_OPS) -> dict:
    """Per op: does MMBERT lose at most half the macro-F1 text-only loses?"""
    goal = {}
    for op in ops:
        mm_drop, text_drop = results["mmbert"][op]["drop_f1"], results["text_only"][op]["drop_f1"]
        goal[op] = {"mmbert_drop_f1": mm_drop, "text_only_drop_f1": text_drop,
                    "at_most_half": bool(text_drop > 0 and mm_drop <= text_drop / 2)}
    return goal


def print_table(report: dict) -> None:
    print(f"{'model':12} {'test':10} {'acc':>6} {'F1':>6} {'drop':>6} {'F1 changed':>10} {'drop changed':>12}")
    for model, by_set in report["results"].items():
        for name, r in by_set.items():
            print(f"{model:12} {name:10} {r['all']['accuracy']:6.3f} {r['all']['f1']:6.3f} "
                  f"{r.get('drop_f1', 0):6.3f} {r.get('changed', r['all'])['f1']:10.3f} "
                  f"{r.get('drop_f1_changed', 0):12.3f}")
    for op in (k for k in report["bootstrap_95"] if k != "resamples"):
        b = report["bootstrap_95"][op]
        print(f"{op}: 95% intervals of the F1 drop: text-only {b['text_only_drop_f1']}, MMBERT {b['mmbert_drop_f1']}, "
              f"text-only minus MMBERT {b['text_only_minus_mmbert']}")
