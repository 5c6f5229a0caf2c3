"""Conventional detectors (Wankmüller 2021, arXiv:2102.02111, §8; HABERTOR's baselines): scikit-learn
pipelines of features and a classifier, named ``FEATURES-CLASSIFIER`` (``tfidf-lr``, ``bow-svm``, ``emb-gbt``, ...).

Features:
- ``bow``: binary bag of words, jieba's words (seen in at least ``min_df`` posts);
- ``tfidf``: character 1-3-gram TF-IDF (sublinear term frequency), robust to segmentation errors;
- ``emb``: the mean of the posts' word vectors from a word2vec text file (``vectors``); only the
  vectors of words in the training posts are kept, inside the saved model.

Classifiers: ``lr`` logistic regression, ``svm`` linear SVM and ``rbf`` RBF SVM (both with calibrated
probabilities, Platt's sigmoid over 3 folds), ``nb`` multinomial naive Bayes (counts only: not with
``emb``), ``rf`` random forest, ``gbt`` gradient-boosted trees (LightGBM).

``training.grid`` runs Wankmüller (2021)'s five-fold cross-validated grids, chosen on macro-F1 (SVM: C {0.1, 1,
10}, and gamma {0.001, 0.01, 0.1} for RBF; boosting: 50 / 250 trees, depth 5 / 8, learning rate
{0.001, 0.01, 0.1}; and small grids of our own for the others); ``training.oversample`` raises every
minority class to a quarter of the majority by sampling with replacement, inside each fold.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import math
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin, clone

from cloak.common.io import write_atomic
from cloak.common.params import InstanceOf, Interval, Options, validate

from .base import Fitted, Settings, Victim, VictimError, check_texts, labels_of, register_victim, texts_of

MODEL_FILE = "model.skops"
# skops writes a dict item by item with its types (about 600 bytes a term): a character 1-3-gram
# vocabulary of COLD train made a 134 MB file that took 18 s to load. The terms go to a JSON list.
VOCABULARY_FILE = "vocabulary.json"
POSITIVE = Interval(float, 0, closed="neither")


def jieba_words(text: str) -> list[str]:
    """A post's words, as jieba segments them (spaces dropped)."""
    import jieba

    jieba.setLogLevel(logging.WARNING)  # its dictionary-loading messages are not the user's business
    return [w for w in jieba.lcut(text) if w.strip()]


def read_word_vectors(path: str, keep: set[str] | None = None) -> tuple[dict[str, int], np.ndarray]:
    """A word2vec text file (``count dim`` then ``word v1 ... vdim`` a line): (word -> row, vectors),
    only the words in ``keep`` if given."""
    words: dict[str, int] = {}
    rows: list[np.ndarray] = []
    with open(path, encoding="utf-8") as f:
        header = f.readline().split()
        if len(header) != 2 or not all(h.isdigit() for h in header):
            raise ValueError(f"{path}, line 1: expected a word2vec header 'COUNT DIM', got {' '.join(header)!r}")
        dim = int(header[1])
        for number, line in enumerate(f, 2):
            parts = line.rstrip("\n").rstrip(" ").split(" ")
            if len(parts) != dim + 1:
                raise ValueError(f"{path}, line {number}: expected a word and {dim} numbers, got {len(parts) - 1}")
            if (keep is None or parts[0] in keep) and parts[0] not in words:
                words[parts[0]] = len(rows)
                rows.append(np.asarray(parts[1:], dtype=np.float32))
    return words, (np.stack(rows) if rows else np.zeros((0, dim), np.float32))


class MeanWordVectors(TransformerMixin, BaseEstimator):
    """A post -> the mean vector of its words found in the vectors file (zeros when none is)."""

    def __init__(self, vectors: str | None = None) -> None:
        self.vectors = vectors

    def fit(self, texts: Sequence[str], y=None) -> MeanWordVectors:
        if not self.vectors or not os.path.isfile(self.vectors):
            raise ValueError(f"emb features need a word-vectors file in word2vec text format (--vectors FILE); "
                             f"got {self.vectors!r}")
        seen = {w for t in texts for w in jieba_words(t)}
        self.vocabulary_, self.vectors_ = read_word_vectors(self.vectors, seen)
        return self

    def transform(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.vectors_.shape[1]), dtype=np.float32)
        for i, text in enumerate(texts):
            rows = [self.vocabulary_[w] for w in jieba_words(text) if w in self.vocabulary_]
            if rows:
                out[i] = self.vectors_[rows].mean(0)
        return out


class Oversampled(ClassifierMixin, BaseEstimator):
    """A classifier trained on its data with every minority class raised to ``ratio`` of the majority
    by sampling with replacement (inside cross-validation, so a fold never sees its own duplicates)."""

    def __init__(self, estimator=None, ratio: float = 0.25, random_state: int = 0) -> None:
        self.estimator, self.ratio, self.random_state = estimator, ratio, random_state

    def fit(self, texts, y) -> Oversampled:
        y = np.asarray(y)
        rng = np.random.default_rng(self.random_state)
        classes, counts = np.unique(y, return_counts=True)
        target = math.ceil(self.ratio * counts.max())
        extra = [rng.choice(np.flatnonzero(y == c), target - n) for c, n in zip(classes, counts) if n < target]
        rows = np.concatenate([np.arange(len(y)), *extra]).astype(int)
        texts = np.asarray(texts, dtype=object)
        self.estimator_ = clone(self.estimator).fit(texts[rows].tolist(), y[rows])
        self.classes_ = self.estimator_.classes_
        return self

    def predict_proba(self, texts) -> np.ndarray:
        return self.estimator_.predict_proba(texts)

    def predict(self, texts) -> np.ndarray:
        return self.estimator_.predict(texts)


def bag_of_words(config: ConventionalConfig):
    from sklearn.feature_extraction.text import CountVectorizer

    return CountVectorizer(tokenizer=jieba_words, token_pattern=None, lowercase=False, binary=True,
                           min_df=config.min_df, dtype=np.float32)  # LightGBM takes floats only


def character_tfidf(config: ConventionalConfig):
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(analyzer="char", ngram_range=(1, 3), sublinear_tf=True, min_df=config.min_df)


def logistic_regression(params: dict, seed: int):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=params["C"], max_iter=2000)


def linear_svm(params: dict, seed: int):
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.svm import LinearSVC

    return CalibratedClassifierCV(LinearSVC(C=params["C"], max_iter=10_000, random_state=seed), cv=3)


def rbf_svm(params: dict, seed: int):
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.svm import SVC

    return CalibratedClassifierCV(SVC(kernel="rbf", C=params["C"], gamma=params["gamma"], random_state=seed),
                                  cv=3, ensemble=False)


def naive_bayes(params: dict, seed: int):
    from sklearn.naive_bayes import MultinomialNB

    return MultinomialNB(alpha=params["alpha"])


def random_forest(params: dict, seed: int):
    from sklearn.ensemble import RandomForestClassifier

    return RandomForestClassifier(n_estimators=params["n_estimators"], max_depth=params["max_depth"],
                                  random_state=seed)


def boosted_trees(params: dict, seed: int):
    from lightgbm import LGBMClassifier

    return LGBMClassifier(n_estimators=params["n_estimators"], max_depth=params["max_depth"],
                          learning_rate=params["learning_rate"], random_state=seed, verbose=-1)


@dataclasses.dataclass(frozen=True)
class Features:
    """A way of turning posts into features: what ``attacks models`` says of it, the scikit-learn step made
    from the victim's config, whether what it gives are counts (naive Bayes needs them), and the config
    fields it cannot do without (each with what to give)."""

    summary: str
    make: Callable[[ConventionalConfig], Any]
    counts: bool = True
    needs: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Classifier:
    """A classifier: what ``attacks models`` says of it, the scikit-learn estimator made from its
    hyperparameters and the seed, their declaration, defaults and Wankmüller (2021)'s grid (small grids of
    our own where Wankmüller has none), where they sit in the estimator (an SVM's inside its calibration),
    and whether it needs count features."""

    summary: str
    make: Callable[[dict, int], Any]
    params: dict[str, Any]
    defaults: dict[str, Any]
    grid: dict[str, list]
    inside: str = ""
    needs_counts: bool = False

    def grid_key(self, param: str) -> str:
        """Where a hyperparameter sits in the pipeline, for GridSearchCV."""
        return f"clf__{self.inside}{param}"


# The conventional detectors: each features x classifier pair is one (but those the classifier cannot read).
FEATURES = {
    "bow": Features("binary bag of jieba words", bag_of_words),
    "tfidf": Features("character 1-3-gram TF-IDF", character_tfidf),
    "emb": Features("mean word vectors (--vectors)", lambda config: MeanWordVectors(config.vectors), counts=False,
                    needs={"vectors": "a word-vectors file in word2vec text format (--vectors FILE)"}),
}
CLASSIFIERS = {
    "lr": Classifier("logistic regression", logistic_regression, {"C": POSITIVE}, {"C": 10.0},
                     {"C": [0.1, 1.0, 10.0]}),
    "svm": Classifier("linear SVM", linear_svm, {"C": POSITIVE}, {"C": 1.0}, {"C": [0.1, 1.0, 10.0]},
                      inside="estimator__"),
    "rbf": Classifier("RBF SVM", rbf_svm, {"C": POSITIVE, "gamma": [POSITIVE, Options("scale")]},
                      {"C": 10.0, "gamma": "scale"}, {"C": [0.1, 1.0, 10.0], "gamma": [0.001, 0.01, 0.1]},
                      inside="estimator__"),
    "nb": Classifier("naive Bayes", naive_bayes, {"alpha": Interval(float, 0)}, {"alpha": 0.1},
                     {"alpha": [0.01, 0.1, 1.0]}, needs_counts=True),
    "rf": Classifier("random forest", random_forest,
                     {"n_estimators": Interval(int, 1), "max_depth": [Interval(int, 1), None]},
                     {"n_estimators": 300, "max_depth": None}, {"n_estimators": [100, 300], "max_depth": [None, 50]}),
    "gbt": Classifier("gradient-boosted trees (LightGBM)", boosted_trees,
                      {"n_estimators": Interval(int, 1), "max_depth": Interval(int, 1), "learning_rate": POSITIVE},
                      {"n_estimators": 250, "max_depth": 8, "learning_rate": 0.1},
                      {"n_estimators": [50, 250], "max_depth": [5, 8], "learning_rate": [0.001, 0.01, 0.1]}),
}


def conventional_names() -> list[str]:
    """``FEATURES-CLASSIFIER`` for every pair that can be trained."""
    return list(_PAIRS)


_PAIRS = {f"{f}-{c}": (f, c) for f, c in itertools.product(FEATURES, CLASSIFIERS)
          if FEATURES[f].counts or not CLASSIFIERS[c].needs_counts}


@dataclasses.dataclass
class ConventionalConfig(Settings):
    """What the model is: features, classifier, the classifier's hyperparameters (``params``: those given;
    the classifier's defaults fill the rest when it is fitted), ``min_df`` and the word-vectors file for
    ``emb``."""

    features: str = "tfidf"
    classifier: str = "lr"
    params: dict = dataclasses.field(default_factory=dict)
    min_df: int = 2
    vectors: str | None = None
    _parameter_constraints = {"features": Options(*FEATURES), "classifier": Options(*CLASSIFIERS),
                              "params": InstanceOf(dict), "min_df": Interval(int, 1),
                              "vectors": [InstanceOf(str), None]}  # read at fit only: the model keeps them

    def __post_init__(self) -> None:
        super().__post_init__()
        features, classifier = FEATURES[self.features], CLASSIFIERS[self.classifier]
        for field, what in features.needs.items():
            if not getattr(self, field):
                raise ValueError(f"{self.features} features need {what}")
        if classifier.needs_counts and not features.counts:
            counted = " or ".join(f"{f}-{self.classifier}" for f, c in _PAIRS.values() if c == self.classifier)
            raise ValueError(f"{self.features}-{self.classifier}: {classifier.summary} needs counts, and "
                             f"{self.features} features are not (use {counted})")
        self.classifier_params()  # checked now, by name

    def classifier_params(self) -> dict:
        """The classifier's hyperparameters: those given, checked, over its defaults."""
        classifier = CLASSIFIERS[self.classifier]
        return {**classifier.defaults, **validate(self.params, classifier.params, f"{self.classifier} params")}


@dataclasses.dataclass
class ConventionalTraining(Settings):
    """How it is trained: the cross-validated grid or not, oversampling, seed, folds, parallel jobs."""

    grid: bool = False
    oversample: bool = False
    seed: int = 0
    folds: int = 5
    jobs: int = 1
    _parameter_constraints = {"seed": Interval(int, 0), "folds": Interval(int, 2), "jobs": Interval(int, 1)}


# Everything a saved pipeline may contain; skops loads these and nothing else.
TRUSTED_TYPES = {
    *(f"{__name__}.{name}" for name in ("MeanWordVectors", "Oversampled", "jieba_words")),
    "sklearn.pipeline.Pipeline", "sklearn.feature_extraction.text.CountVectorizer",
    "sklearn.feature_extraction.text.TfidfVectorizer", "sklearn.feature_extraction.text.TfidfTransformer",
    "sklearn.linear_model._logistic.LogisticRegression", "sklearn.calibration.CalibratedClassifierCV",
    "sklearn.calibration._CalibratedClassifier", "sklearn.calibration._SigmoidCalibration",
    "sklearn.svm._classes.LinearSVC", "sklearn.svm._classes.SVC", "sklearn.naive_bayes.MultinomialNB",
    "sklearn.ensemble._forest.RandomForestClassifier", "sklearn.tree._classes.DecisionTreeClassifier",
    "sklearn.tree._tree.Tree", "lightgbm.sklearn.LGBMClassifier", "lightgbm.basic.Booster",
    "collections.OrderedDict", "collections.defaultdict", "builtins.int", "builtins.float", "builtins.str",
    "builtins.slice", "numpy.float64", "numpy.float32", "numpy.int64", "numpy.int32", "numpy.dtype",
    "numpy.ndarray", "numpy.random.mtrand.RandomState", "numpy.random._mt19937.MT19937",
    "scipy.sparse._csr.csr_matrix", "scipy.sparse._csr.csr_array",
}


@register_victim
class ConventionalVictim(Victim):
    """A scikit-learn pipeline: features -> classifier (see the module docstring)."""

    kind = "conventional"
    Config = ConventionalConfig
    Training = ConventionalTraining
    packages = ("scikit-learn", "lightgbm", "skops", "jieba")
    model_ = Fitted()  # the fitted pipeline: set by fit, or read by load
    params_ = Fitted()  # the classifier's hyperparameters as fitted: config.params over its defaults, or the grid's
    grid_results_ = Fitted()  # what the grid tried and chose (None without the grid)

    @property
    def name(self) -> str:
        return f"{self.config.features}-{self.config.classifier}"

    @classmethod
    def names(cls) -> list[str]:
        return conventional_names()

    @classmethod
    def from_name(cls, name: str, config: dict | None = None, training: dict | None = None) -> ConventionalVictim:
        features, classifier = _PAIRS[name]
        return cls({**(config or {}), "features": features, "classifier": classifier}, training)

    @classmethod
    def summary_of(cls, name: str) -> str:
        features, classifier = _PAIRS[name]
        return f"{FEATURES[features].summary} + {CLASSIFIERS[classifier].summary}"

    def fitted_config(self) -> dict:
        """The config with the params the model was fitted with (the grid's choice where it ran), so that
        victim.json describes the saved model and loads it with them."""
        return {**self.config.to_dict(), "params": dict(self.params_)}

    def fit_results(self) -> dict:
        return {"grid": self.grid_results_}

    def pipeline(self, params: dict):
        from sklearn.pipeline import Pipeline

        config, seed = self.config, self.training.seed
        model = Pipeline([("features", FEATURES[config.features].make(config)),
                          ("clf", CLASSIFIERS[config.classifier].make(params, seed))])
        return Oversampled(model, 0.25, seed) if self.training.oversample else model

    def fit(self, train: Sequence[dict], dev: Sequence[dict] | None = None, *, out_dir: str | None = None,
            resume: bool = False, progress: bool | None = None) -> ConventionalVictim:
        """Fit on ``train`` (``dev`` is not needed: the grid cross-validates on the training posts)."""
        texts, labels = texts_of(train), labels_of(train, "the training records")
        params = self.config.classifier_params()
        model, self.grid_results_ = self.pipeline(params), None
        if self.training.grid:
            model, params = self._grid_search(model, params, texts, labels, progress)
        else:
            model.fit(texts, labels)
        self.num_labels_, self.model_, self.params_ = int(labels.max()) + 1, model, params
        return self

    def _grid_search(self, model, params: dict, texts: list[str], labels: np.ndarray, progress: bool | None):
        """The best pipeline of the grid's, refitted on every training post, and its params (the results go to
        ``grid_results_``)."""
        from sklearn.model_selection import GridSearchCV, StratifiedKFold

        classifier = CLASSIFIERS[self.config.classifier]
        prefix = "estimator__" if self.training.oversample else ""
        grid = {prefix + classifier.grid_key(p): values for p, values in classifier.grid.items()}
        folds = StratifiedKFold(self.training.folds, shuffle=True, random_state=self.training.seed)
        search = GridSearchCV(model, grid, scoring="f1_macro", cv=folds, n_jobs=self.training.jobs,
                              verbose=0 if progress is False else 1, error_score="raise")
        search.fit(texts, labels)
        chosen = {p: search.best_params_[prefix + classifier.grid_key(p)] for p in classifier.grid}
        self.grid_results_ = {"best_params": chosen, "best_cv_macro_f1": float(search.best_score_),
                              "candidates": [{"params": {p.rsplit("__", 1)[-1]: v for p, v in tried.items()},
                                              "cv_macro_f1": float(score)} for tried, score in
                                             zip(search.cv_results_["params"], search.cv_results_["mean_test_score"])]}
        return search.best_estimator_, {**params, **chosen}

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        return class_probabilities(self.model_, texts, self.num_labels_)

    def _save_weights(self, directory: str) -> list[str]:
        import skops.io

        vectorizer = _vectorizer(self.model_)
        vocabulary = vectorizer.vocabulary_
        write_atomic(os.path.join(directory, VOCABULARY_FILE),
                     json.dumps({term: int(i) for term, i in vocabulary.items()}, ensure_ascii=False).encode())
        del vectorizer.vocabulary_
        try:
            skops.io.dump(self.model_, os.path.join(directory, MODEL_FILE))
        finally:
            vectorizer.vocabulary_ = vocabulary
        return [MODEL_FILE, VOCABULARY_FILE]

    def _load_weights(self, directory: str) -> None:
        import skops.io

        path = os.path.join(directory, MODEL_FILE)
        found = set(skops.io.get_untrusted_types(file=path))
        refused = sorted(found - TRUSTED_TYPES)
        if refused and all(name.startswith("attacks.conventional.") for name in refused):
            raise VictimError(f"{path} was saved before the detectors moved to attacks.victims (its pipeline names "
                              f"{', '.join(refused)}): train it again")
        if refused:
            raise VictimError(f"{path} holds types that are not a conventional victim's: {', '.join(refused)}; "
                              "refusing to load it")
        model = skops.io.load(path, trusted=sorted(found))
        with open(os.path.join(directory, VOCABULARY_FILE), encoding="utf-8") as f:
            _vectorizer(model).vocabulary_ = json.load(f)
        # victim.json records the params the model was fitted with (every one, the defaults too)
        self.model_, self.params_, self.grid_results_ = model, self.config.classifier_params(), None


def class_probabilities(model, texts: Sequence[str], num_labels: int) -> np.ndarray:
    """A scikit-learn classifier's ``predict_proba`` of texts, a column for every label (0 for those it never
    saw in training)."""
    texts = check_texts(texts)
    out = np.zeros((len(texts), num_labels), dtype=np.float64)
    if texts:
        out[:, np.asarray(model.classes_, dtype=int)] = model.predict_proba(texts)
    return out


def _vectorizer(model):
    """The features step of a model: each of ours holds a vocabulary (words, n-grams or vector rows)."""
    pipeline = model.estimator_ if isinstance(model, Oversampled) else model
    return pipeline.named_steps["features"]

