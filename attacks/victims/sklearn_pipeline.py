"""Any fitted scikit-learn pipeline over raw texts as a victim, saved and attacked like the ones mmcloak trains.

    pipeline = make_pipeline(UnveilTransformer(), TfidfVectorizer(analyzer="char"), LogisticRegression())
    SklearnVictim(pipeline.fit(texts, labels)).save("victims/my-pipeline")
    # attacks evaluate --victim victims/my-pipeline --data test.jsonl --out results

``attacks train`` cannot make such a victim (it cannot know the pipeline): build and fit the pipeline in
Python, wrap it, and save it; ``load_victim`` and ``attacks evaluate`` take the folder as any other. The
pipeline is attacked whole (every attack on text queries its ``predict_proba`` with the posts as written),
so with an ``UnveilTransformer`` in front the search is an adaptive attack on the unveiler, as on a
defended victim. Its classes are the records' labels (0, 1, ...). The pipeline is saved with ``skops.io``
and loaded only if every type it holds is in ``TRUSTED_TYPES``: the conventional detectors' steps, the
unveiler's and the usual text steps; a pipeline of other steps is refused when saved, naming them (add them
to ``TRUSTED_TYPES`` in the process that saves and the one that loads, if you trust them).
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import NotFittedError as SklearnNotFittedError
from sklearn.utils.validation import check_is_fitted

from cloak.common.io import write_atomic

from . import conventional
from .base import Fitted, Settings, Victim, VictimError, labels_of, register_victim, texts_of

MODEL_FILE = "pipeline.skops"
# What a saved pipeline may hold: skops loads these and nothing else
TRUSTED_TYPES = {
    *conventional.TRUSTED_TYPES, "cloak.unveil.sklearn.UnveilTransformer", "builtins.bytes", "builtins.list",
    "builtins.bool", "builtins.tuple", "builtins.dict", "sklearn.pipeline.FeatureUnion",
    "sklearn.feature_extraction.text.HashingVectorizer", "sklearn.linear_model._stochastic_gradient.SGDClassifier",
    "sklearn.linear_model._ridge.RidgeClassifier", "sklearn.naive_bayes.ComplementNB",
    "sklearn.preprocessing._function_transformer.FunctionTransformer",
}


@dataclasses.dataclass
class PipelineConfig(Settings):
    """What the model is: the pipeline as scikit-learn prints it (its steps, and their params that differ from
    the defaults), recorded for reports; the model itself is the saved pipeline."""

    estimator: str = ""


@register_victim
class SklearnVictim(Victim):
    """A fitted scikit-learn pipeline (or any classifier) whose ``predict_proba`` takes raw texts."""

    kind = "sklearn-pipeline"
    summary = "a scikit-learn pipeline over raw texts, wrapped in Python (attacks.SklearnVictim(pipeline).save(DIR))"
    Config = PipelineConfig
    packages = ("scikit-learn", "skops")
    model_ = Fitted()  # the fitted pipeline: the one given, fit's, or the one loaded

    def __init__(self, pipeline: Any = None, config: Settings | dict | None = None,
                 training: Settings | dict | None = None) -> None:
        super().__init__(config if config is not None else {"estimator": _printed(pipeline)}, training)
        self.pipeline = pipeline
        if pipeline is not None and _is_fitted(pipeline):
            self._use(pipeline)

    @classmethod
    def names(cls) -> list[str]:
        return []  # made from a pipeline in Python, never by name

    def fit(self, train: Sequence[dict], dev: Sequence[dict] | None = None, *, out_dir: str | None = None,
            resume: bool = False, progress: bool | None = None) -> SklearnVictim:
        """Fit a clone of the pipeline on ``train``'s texts and labels (``dev`` is not used)."""
        if self.pipeline is None:
            raise ValueError("SklearnVictim needs a pipeline to fit: SklearnVictim(make_pipeline(...))")
        labels = labels_of(train, "the training records")
        self._use(clone(self.pipeline).fit(texts_of(train), labels), int(labels.max()) + 1)
        return self

    def _use(self, model: Any, num_labels: int = 0) -> None:
        """Predict with ``model``, fitted; its classes must be labels (0, 1, ...)."""
        classes = np.asarray(model.classes_)
        if classes.dtype.kind not in "iu" or classes.min() < 0:
            raise ValueError(f"the pipeline's classes must be the records' labels 0, 1, ...; got {classes.tolist()}")
        self.model_, self.num_labels_ = model, max(num_labels, int(classes.max()) + 1)

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        return conventional.class_probabilities(self.model_, texts, self.num_labels_)

    def _save_weights(self, directory: str) -> list[str]:
        import skops.io

        data = skops.io.dumps(self.model_)
        refused = sorted(set(skops.io.get_untrusted_types(data=data)) - TRUSTED_TYPES)
        if refused:
            raise VictimError(f"the pipeline holds types that load_victim does not trust: {', '.join(refused)}; add "
                              "them to attacks.victims.sklearn_pipeline.TRUSTED_TYPES (where it is saved and loaded) "
                              "if you trust them")
        write_atomic(os.path.join(directory, MODEL_FILE), data)
        return [MODEL_FILE]

    @classmethod
    def load(cls, directory: str, meta: dict) -> SklearnVictim:
        import skops.io

        path = os.path.join(directory, MODEL_FILE)
        found = set(skops.io.get_untrusted_types(file=path))
        refused = sorted(found - TRUSTED_TYPES)
        if refused:
            raise VictimError(f"{path} holds types that are not trusted: {', '.join(refused)}; refusing to load it "
                              "(add them to attacks.victims.sklearn_pipeline.TRUSTED_TYPES if you trust them)")
        victim = cls(None, meta.get("config"), meta.get("training"))
        victim._use(skops.io.load(path, trusted=sorted(found)), int(meta["num_labels"]))
        victim.trained_on = meta.get("trained_on")
        victim.fingerprint = meta["fingerprint"]
        return victim


def _is_fitted(estimator: Any) -> bool:
    try:
        check_is_fitted(estimator)
    except SklearnNotFittedError:
        return False
    return True


def _printed(estimator: Any) -> str:
    """The estimator as scikit-learn prints it, on one line."""
    return " ".join(repr(estimator).split()) if estimator is not None else ""
