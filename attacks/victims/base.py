"""The victim contract: every detector mmcloak attacks, behind one interface.

After scikit-learn's classifiers and TextAttack's model wrappers::

    victim = make_victim("tfidf-lr")              # or "bert", "chinesebert", "mmbert", "llm", ...
    victim.fit(train_records, dev_records)        # records: {"text", "label", ...}
    victim.predict_proba(texts)                   # (n, n_classes), rows sum to 1
    victim.predict(texts)                         # (n,) labels
    victim.save("victims/tfidf-lr")               # victim.json + weights
    load_victim("victims/tfidf-lr")               # the same victim back

A victim is described by two dataclasses checked against their declarations (``cloak.common.params``): its
``config`` (what the model is: features, backbone, sizes) and its ``training`` (how it was trained:
epochs, learning rate, seed, ...); neither is ever rewritten. What ``fit`` learns or derives is fitted
state, named as scikit-learn names it, with a trailing underscore (``num_labels_``, ``model_``, ...:
``Fitted`` attributes), and reading it before ``fit`` (or loading) is a ``NotFittedError``. ``victim.json``
holds both, the kind, the number of labels, the versions of the libraries that made it and the SHA-256 of
every weight file: loading refuses a file that changed since it was saved, and never runs code from one (torch weights are safetensors,
scikit-learn models go through ``skops.io`` with an explicit list of trusted types).

Differentiable victims (every torch one) also give ``embed(texts) -> Embedded`` (each example's input
embeddings, its mask, and whatever else the model reads) and ``logits(embedded)``, so an attack can
perturb one example's embeddings without touching the shared embedding matrix, and
``saliency(texts, labels)`` (the loss gradient's weight on each character), by which the search ranks words.
"""
from __future__ import annotations

import abc
import dataclasses
import hashlib
import importlib
import json
import os
from collections import Counter
from collections.abc import Sequence
from importlib import metadata
from typing import Any, ClassVar

import numpy as np

from cloak.common.io import file_sha256 as sha256
from cloak.common.io import usual_permissions, write_atomic
from cloak.common.params import ParameterError, unknown_key, validate_fields

VICTIM_FILE = "victim.json"
FORMAT = 1


class VictimError(ValueError):
    """A victim folder that cannot be loaded (missing, from another version, or tampered with)."""


class NotFittedError(VictimError, AttributeError):
    """A victim asked for what only ``fit`` (or loading) gives it: scikit-learn's ``NotFittedError``, an
    AttributeError too, so that ``hasattr(victim, "model_")`` says whether it is fitted."""


class Fitted:
    """A fitted attribute (named, as scikit-learn names them, with a trailing underscore): set by ``fit`` or by
    loading; read before either, a ``NotFittedError`` that says what to do."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, victim: Victim | None, owner: type | None = None) -> Any:
        if victim is None:
            return self
        try:
            return victim.__dict__[self.name]
        except KeyError:
            raise NotFittedError(f"{victim.name} is not fitted yet (it has no {self.name}): call fit first, or "
                                 "load a saved one with load_victim") from None

    def __set__(self, victim: Victim, value: Any) -> None:
        victim.__dict__[self.name] = value


@dataclasses.dataclass
class Settings:
    """Base of a victim's ``config`` and ``training`` dataclasses: fields checked on creation against
    their types and the class's ``_parameter_constraints``; unknown keys refused by name."""

    _parameter_constraints: ClassVar[dict] = {}

    def __post_init__(self) -> None:
        validate_fields(self, type(self).__name__)

    @classmethod
    def from_dict(cls, values: dict | None, where: str) -> Settings:
        values = dict(values or {})
        known = [f.name for f in dataclasses.fields(cls)]
        for key in values:
            if key not in known:
                raise unknown_key(key, known, where)
        try:
            return cls(**values)
        except ParameterError as e:
            raise ParameterError(f"{where}: {str(e).split(': ', 1)[-1]}") from None

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class NoSettings(Settings):
    """For a victim that is not trained (an LLM behind an endpoint)."""


def versions(*packages: str) -> dict[str, str | None]:
    found = {}
    for name in ("mmcloak", *packages):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


class Victim(abc.ABC):
    """Base class of every detector. Subclasses set ``kind``, ``summary``, ``Config`` and ``Training`` and
    implement ``fit`` (which sets ``num_labels_`` and the subclass's own ``Fitted`` attributes) and
    ``predict_proba``; to be saved, ``_save_weights`` (returning the files written) and ``_load_weights``.
    Registered (``@register_victim``), it is made by ``make_victim(kind)`` and loaded by ``load_victim``; a
    kind of several names (the conventional pipelines) says them in ``names`` and ``from_name``, and one
    that reads folders another tool wrote (MMBERT) says how in ``read_folder``.

    What a detector can do beyond predicting is declared here, not probed for: ``differentiable`` (it
    gives input embeddings that FGM and PGD move), ``attentions`` (it gives attention weights, for the
    attention regularisers), ``has_gates`` (it gives GAttention's gates), ``has_token_spans`` (it says
    which characters each input position covers, for the gradient's weight on each character), and
    ``predict_records`` reads whatever of a record it uses besides the text (HABERTOR: the post's source)."""

    kind: ClassVar[str] = ""
    summary: ClassVar[str] = ""  # what the detector is, in a line (`attacks models`)
    differentiable: ClassVar[bool] = False
    attentions: ClassVar[bool] = False
    has_gates: bool = False
    has_token_spans: bool = False
    Config: ClassVar[type[Settings]] = NoSettings
    Training: ClassVar[type[Settings]] = NoSettings
    packages: ClassVar[tuple[str, ...]] = ()  # whose versions victim.json records
    num_labels_ = Fitted()  # the labels it knows: 0 .. num_labels_ - 1

    def __init__(self, config: Settings | dict | None = None, training: Settings | dict | None = None) -> None:
        self.config = config if isinstance(config, Settings) else self.Config.from_dict(config, f"{self.kind} config")
        self.training = training if isinstance(training, Settings) else \
            self.Training.from_dict(training, f"{self.kind} training")
        self.trained_on: dict | None = None  # the data it was fitted on (training_data): attacks train sets it
        self.fingerprint: str | None = None  # SHA-256 of its victim.json, once saved or loaded

    @property
    def name(self) -> str:
        """What the victim is called in reports (``tfidf-lr``, ``bert``, ...)."""
        return self.kind

    @property
    def num_labels(self) -> int:
        """The labels it knows, as a ``VictimFolder`` gives them (``num_labels_``: a NotFittedError before fit)."""
        return self.num_labels_

    @classmethod
    def names(cls) -> list[str]:
        """The names ``make_victim`` makes a victim of this kind by: the kind itself, for most."""
        return [cls.kind]

    @classmethod
    def from_name(cls, name: str, config: dict | None = None, training: dict | None = None) -> Victim:
        """The victim ``make_victim(name, config, training)`` makes, ``name`` one of ``names()``."""
        return cls(config, training)

    @classmethod
    def summary_of(cls, name: str) -> str:
        """What the victim ``name`` of this kind is, in a line (a kind of several names says which)."""
        return cls.summary

    @classmethod
    def folder_facts(cls, directory: str, meta: dict) -> dict:
        """What a report says of a saved victim of this kind beyond what every victim.json holds (a defended
        detector: its defence, and the detector behind it); {} for most."""
        return {}

    @classmethod
    def read_folder(cls, directory: str) -> dict | None:
        """For a kind that also reads folders another tool wrote, with no victim.json (MMBERT: those of
        ``mmbert train``): what ``directory`` holds, as victim.json would say it (kind, name, num_labels,
        config, training; ``settings`` where the config cannot say how it was made; ``fingerprint``), or
        None if it is no such folder."""
        return None

    def fitted_config(self) -> dict:
        """The config of the fitted model, as ``victim.json`` and the reports give it: the config given,
        but for what fit chose itself (a conventional victim's grid picks its classifier's params)."""
        return self.config.to_dict()

    def fit_results(self) -> dict:
        """What fit found beyond the model, for ``attacks train``'s training.json (a conventional victim's
        grid: the settings tried and chosen); {} for most."""
        return {}

    def settings_text(self) -> str:
        """The settings that differ from the kind's defaults, for a person reading its figures
        (``backbone bb/, head gattention; epochs 2, regularizer ear``); "defaults" when none do."""
        return settings_text(type(self), self.fitted_config(), self.training.to_dict())

    @property
    def facts(self) -> dict:
        """What a report says of the victim: kind, name, settings, what it was trained on (where recorded)
        and the fingerprint its outcomes are kept by (None until it is saved or loaded)."""
        return {"kind": self.kind, "name": self.name, "num_labels": self.num_labels, "config": self.fitted_config(),
                "training": self.training.to_dict(), "settings": self.settings_text(),
                "trained_on": self.trained_on, "fingerprint": self.fingerprint}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(config={self.config.to_dict()}, training={self.training.to_dict()})"

    def loaded(self) -> Victim:
        """The victim, ready to predict (it is: a ``VictimFolder`` loads one)."""
        return self

    # -- the contract ---------------------------------------------------------------------------

    @abc.abstractmethod
    def fit(self, train: Sequence[dict], dev: Sequence[dict] | None = None, *, out_dir: str | None = None,
            resume: bool = False, progress: bool | None = None) -> Victim:
        """Train on labelled records; ``dev`` (if given) picks the best epoch or setting. Victims that
        checkpoint while they train (torch ones) write to ``out_dir``."""

    @abc.abstractmethod
    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), num_labels) probabilities, each row summing to 1."""

    def predict_records(self, records: Sequence[dict]) -> np.ndarray:
        """``predict_proba`` of records: their texts, and whatever else of them the victim reads."""
        return self.predict_proba([r["text"] for r in records])

    def predict(self, texts: Sequence[str]) -> np.ndarray:
        return self.predict_proba(texts).argmax(1)

    def save(self, directory: str) -> None:
        """Weights, then ``victim.json`` (written last: a folder without it is not a finished victim)."""
        num_labels = self.num_labels_  # a NotFittedError before anything is written
        os.makedirs(directory, exist_ok=True)
        files = self._save_weights(directory)
        usual_permissions(os.path.join(directory, name) for name in files)
        meta = {"format": FORMAT, "kind": self.kind, "name": self.name, "num_labels": num_labels,
                "config": self.fitted_config(), "training": self.training.to_dict(),
                "versions": versions(*self.packages),
                "files": {name: sha256(os.path.join(directory, name)) for name in files},
                **({"trained_on": self.trained_on} if self.trained_on else {})}
        text = (json.dumps(meta, indent=1, ensure_ascii=False) + "\n").encode()
        write_atomic(os.path.join(directory, VICTIM_FILE), text)
        self.fingerprint = hashlib.sha256(text).hexdigest()

    # Saving is optional: a detector used only through the Python API need not write itself.
    def _save_weights(self, directory: str) -> list[str]:
        """Write the weights into ``directory``; returns the files written."""
        raise TypeError(f"{type(self).__name__} cannot be saved: it has no _save_weights")

    def _load_weights(self, directory: str) -> None:
        """Read what ``_save_weights`` wrote."""
        raise TypeError(f"{type(self).__name__} cannot be loaded: it has no _load_weights")

    @classmethod
    def load(cls, directory: str, meta: dict) -> Victim:
        """The victim saved in ``directory``, which ``meta`` (its victim.json, checked) describes."""
        victim = cls(meta.get("config"), meta.get("training"))
        victim.num_labels_ = int(meta["num_labels"])
        victim.trained_on = meta.get("trained_on")
        victim._load_weights(directory)
        victim.fingerprint = meta["fingerprint"]
        return victim


# Every kind of victim: its class, or (until first needed) the module whose import registers it.
_REGISTRY: dict[str, type[Victim] | str] = {}


def register_victim(cls: type[Victim] | None = None, *, kind: str | None = None,
                    module: str | None = None) -> type[Victim] | None:
    """Register a detector, so that ``make_victim``, ``victim_names``, ``load_victim`` and ``inspect_victim``
    know it: ``@register_victim`` on a ``Victim`` subclass (under its ``kind``), or
    ``register_victim(kind=KIND, module=MODULE)`` for a kind whose module registers its class when imported,
    which it is on first use (ours are so: they import torch or scikit-learn, which ``attacks --help`` should
    not wait for)."""
    if cls is None:
        if not (kind and module):
            raise ValueError("register_victim: give a Victim subclass, or both kind= and module=")
        _REGISTRY.setdefault(kind, module)  # a class registered already stays
        return None
    if not cls.kind:
        raise ValueError(f"{cls.__name__} needs a class attribute `kind`")
    _REGISTRY[cls.kind] = cls
    return cls


register_victim(kind="conventional", module="attacks.victims.conventional")
register_victim(kind="bert", module="attacks.victims.bert")
register_victim(kind="chinesebert", module="attacks.victims.chinesebert")
register_victim(kind="habertor", module="attacks.victims.habertor")
register_victim(kind="mmbert", module="attacks.victims.multimodal")
register_victim(kind="llm", module="attacks.victims.llm")
register_victim(kind="defended", module="attacks.victims.defended")
register_victim(kind="sklearn-pipeline", module="attacks.victims.sklearn_pipeline")


def register_installed() -> None:
    """The kinds other installed packages declare under the entry-point group ``mmcloak.victims``
    (``KIND = "package.module"``, the module registering its class), registered as ours are: so that the
    ``attacks`` commands know them too (``attacks train --model KIND``, a saved one in ``attacks evaluate``)."""
    for entry in metadata.entry_points(group="mmcloak.victims"):
        register_victim(kind=entry.name, module=entry.value)


register_installed()


def victim_kind(kind: str) -> type[Victim]:
    """The class registered for ``kind`` (importing its module first where it was registered by one)."""
    if kind not in _REGISTRY:
        raise unknown_key(kind, list(_REGISTRY), "", kind="victim kind")
    entry = _REGISTRY[kind]
    if isinstance(entry, str):
        importlib.import_module(entry)
        entry = _REGISTRY[kind]
        if isinstance(entry, str):
            raise TypeError(f"module {entry} registers no victim of kind {kind!r}")
    return entry


def victim_kinds() -> dict[str, type[Victim]]:
    """Every kind, each class imported."""
    return {kind: victim_kind(kind) for kind in list(_REGISTRY)}


def victim_names() -> list[str]:
    """Every name ``make_victim`` takes (every kind's module imported)."""
    return [name for cls in victim_kinds().values() for name in cls.names()]


def victim_class(name: str) -> type[Victim]:
    """The class of the victims ``make_victim(name)`` makes. Looks first in the kind of that name, then in
    the classes registered, then in the modules still to import, in order, importing only those it must."""
    waiting = [kind for kind, entry in _REGISTRY.items() if isinstance(entry, str)]
    first = [name] if name in _REGISTRY else []
    for kind in [*first, *(k for k in _REGISTRY if k not in waiting), *waiting]:
        cls = victim_kind(kind)
        if name in cls.names():
            return cls
    if name in _REGISTRY and not victim_kind(name).names():  # made otherwise (it needs a detector, a pipeline)
        raise ParameterError(f"victim kind {name!r} is not made by name: {victim_kind(name).summary}")
    raise unknown_key(name, victim_names(), "", kind="victim")


def make_victim(name: str, config: dict | None = None, training: dict | None = None) -> Victim:
    """A victim by name (``victim_names``), its config and training settings checked (unknown keys refused
    by name)."""
    return victim_class(name).from_name(name, config, training)


def read_meta(directory: str) -> dict:
    """What a victim folder holds: its ``victim.json``, its weight files checked against the hashes it
    records, plus its ``fingerprint``; for a folder another tool wrote, what a kind's ``read_folder`` says."""
    path = os.path.join(directory, VICTIM_FILE)
    if not os.path.isdir(directory):
        raise VictimError(f"victim folder not found: {directory}")
    if not os.path.isfile(path):
        for cls in victim_kinds().values():
            meta = cls.read_folder(directory)
            if meta is not None:
                return meta
        raise VictimError(f"{directory} has no {VICTIM_FILE}: not a saved victim (train one with `attacks train`)")
    try:
        with open(path, encoding="utf-8") as f:
            meta = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise VictimError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise VictimError(f"{path}: not a victim description of format {FORMAT}")
    try:
        victim_kind(str(meta.get("kind")))
    except ParameterError as e:
        raise VictimError(f"{path}: {e}") from None
    for name, digest in (meta.get("files") or {}).items():
        file = os.path.join(directory, name)
        # a file of the folder, in it or in a subfolder of it (a defended victim's detector/victim.json)
        if os.path.isabs(name) or ".." in name.split("/") or not os.path.isfile(file):
            raise VictimError(f"{directory}: weight file {name!r} is missing")
        if sha256(file) != digest:
            raise VictimError(f"{file} changed after the victim was saved (its SHA-256 differs from "
                              f"{VICTIM_FILE}'s); refusing to load it")
    # What outcomes of the folder are kept by: retrained or replaced, a folder has another victim.json (it
    # records the SHA-256 of every weight file).
    return {**meta, "fingerprint": sha256(path)}


def load_victim(directory: str) -> Victim:
    """The victim saved in ``directory`` (or a folder a kind reads though another tool wrote it: a trained
    MMBERT folder)."""
    meta = read_meta(directory)
    return victim_kind(meta["kind"]).load(directory, meta)


@dataclasses.dataclass(frozen=True)
class VictimFolder:
    """A saved victim, checked (weights against their hashes, kind known) but not loaded: what an
    evaluation needs to know of it before it writes anything."""

    path: str
    facts: dict  # as Victim.facts() gives them

    @property
    def num_labels(self) -> int:
        return int(self.facts["num_labels"])

    def loaded(self) -> Victim:
        """The victim itself, loaded from its folder."""
        return load_victim(self.path)


def inspect_victim(directory: str) -> VictimFolder:
    """Check a victim folder without loading its model (VictimError if it is not one, or was tampered with)."""
    meta = read_meta(directory)
    cls = victim_kind(meta["kind"])
    config, training = cls.Config.from_dict(meta.get("config"), directory), \
        cls.Training.from_dict(meta.get("training"), directory)
    return VictimFolder(directory, {
        "kind": meta["kind"], "name": meta.get("name", meta["kind"]), "num_labels": int(meta["num_labels"]),
        "config": config.to_dict(), "training": training.to_dict(),
        "settings": meta.get("settings") or settings_text(cls, config.to_dict(), training.to_dict()),
        "trained_on": meta.get("trained_on"), "fingerprint": meta["fingerprint"], **cls.folder_facts(directory, meta)})


def settings_text(cls: type[Victim], config: dict, training: dict) -> str:
    """The settings of a victim of class ``cls`` that differ from its defaults, as a person reads them."""
    parts = []
    for settings, defaults in ((config, cls.Config), (training, cls.Training)):
        default = {f.name: f.default for f in dataclasses.fields(defaults)
                   if f.default is not dataclasses.MISSING}
        changed = [f"{k.replace('_', ' ')} {_plain(v)}" for k, v in settings.items() if default.get(k, object()) != v]
        if changed:
            parts.append(", ".join(changed))
    return "; ".join(parts) or "defaults"


def _plain(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list)) else str(value)


def training_data(records: Sequence[dict], path: str | None = None) -> dict:
    """What a victim was trained on, for its victim.json: the file (path, SHA-256, bytes), the posts by
    label, and the cloaks they carried (records with ``cloak`` provenance, how many of them each op edited,
    and in which of its styles, as the edits show them: ``Op.edit_styles``), so a report can say which attacks
    the victim saw in training."""
    labels: dict[str, int] = {}
    cloaked, ops, styles = 0, Counter(), {}
    for record in records:
        key = str(record["label"])
        labels[key] = labels.get(key, 0) + 1
        provenance = record.get("cloak")
        if isinstance(provenance, dict) and provenance.get("edits"):
            cloaked += 1
            edits = [e for e in provenance["edits"] if isinstance(e, dict)]
            ops.update({str(e.get("op")) for e in edits})  # a record counts once an op
            for op, shown in _edit_styles(edits).items():
                styles.setdefault(op, Counter()).update(shown)
    facts: dict = {"records": len(records), "labels": dict(sorted(labels.items())),
                   "cloaked": {"records": cloaked, "ops": _by_count(ops),
                               "styles": {op: _by_count(styles[op]) for op in _by_count(ops) if op in styles}}}
    if path is not None and path != "-" and os.path.isfile(path):
        facts = {"path": path, "sha256": sha256(path), "bytes": os.path.getsize(path), **facts}
    return facts


def _edit_styles(edits: list[dict]) -> dict[str, set[str]]:
    """Per op, the styles a record's edits show (a record counts once a style)."""
    from cloak import Edit, available_ops

    known, found = available_ops(), {}
    for e in edits:
        op = known.get(str(e.get("op")))
        if op is None or not (isinstance(e.get("src"), str) and isinstance(e.get("dst"), str)):
            continue
        try:
            edit = Edit.from_dict(e)
        except (KeyError, TypeError, ValueError):  # not an edit of the record contract
            continue
        found.setdefault(op.name, set()).update(op.edit_styles(edit))
    return found


def _by_count(counts: Counter) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def labels_of(records: Sequence[dict], where: str = "records") -> np.ndarray:
    """The records' labels as ints, with at least two classes among them."""
    labels = np.array([r["label"] for r in records], dtype=np.int64)
    if len(labels) == 0:
        raise ValueError(f"{where}: no records")
    if labels.max() < 1:
        raise ValueError(f"{where} has one label (0) only: a classifier needs two")
    return labels


def texts_of(records: Sequence[dict]) -> list[str]:
    return [r["text"] for r in records]


def check_texts(texts: Any) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("predict_proba takes a list of texts, not one string")
    return list(texts)
