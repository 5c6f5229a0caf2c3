"""A detector behind a defence: ``cloak unveil`` reads each post's cloaks back before the detector sees it.

    defended = defend(load_victim("victims/tfidf-lr"), "unveil:targets=lexicon+mined:mine_from=train.jsonl")
    defended.predict_proba(["你们这些拜仁"])     # the detector's probabilities for "你们这些白人"
    defended.save("victims/tfidf-lr+unveil")    # victim.json names the defence; the detector in detector/,
                                                # what the unveiler reads with in defence/

Like scikit-learn's meta-estimators (a ``Pipeline`` of a transformer and a classifier), the detector is a
parameter and the defence's spec is the config: ``fit`` reads the training posts back as the defended
detector will read the posts it is asked about, then fits the detector on them. Every attack that works
on text (the cloak attacks, the search) queries the whole pipeline, so the search is an adaptive attack on
the unveiler; an attack on input embeddings would go around the defence, and is not run on it.

A saved one holds all it predicts with (DESIGN.md 9c(4)): ``defence/`` keeps the unveiler as
``Unveiler.save`` writes it (the terms it reads back, mined ones as mined when it was trained; its scorer's
model; the settings that read them), hashed in victim.json like the detector, so a folder moved or copied
predicts the same, a file changed in it is refused, and the file the terms were mined from is never read
again.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from hashlib import sha256

import numpy as np

from cloak.unveil import Unveiler

from .base import Settings, Victim, VictimError, VictimFolder, inspect_victim, load_victim, register_victim

DETECTOR = "detector"  # the subfolder the defended detector is saved in
DEFENCE = "defence"  # the subfolder the unveiler is saved in (Unveiler.save)


@dataclasses.dataclass
class DefenceConfig(Settings):
    defence: str = "unveil"  # the Unveiler's spec (Unveiler.spec) as given: what is read back, and how


@register_victim
class DefendedVictim(Victim):
    """A detector with ``cloak unveil`` in front of it."""

    kind = "defended"
    summary = "a detector with cloak unveil in front of it (attacks train --defence, attacks evaluate --defence)"
    Config = DefenceConfig

    def __init__(self, config: Settings | dict | None = None, training: Settings | dict | None = None,
                 detector: Victim | None = None, unveiler: Unveiler | None = None) -> None:
        """``unveiler``: the one ``config.defence`` makes, built already (its terms mined) or loaded from a
        saved folder; made from the spec when not given."""
        super().__init__(config, training)
        self.detector = detector
        self.unveiler = unveiler if unveiler is not None else Unveiler.from_spec(self.config.defence)

    @classmethod
    def names(cls) -> list[str]:
        return []  # made by defend(victim, spec), never by name alone: it needs its detector

    @classmethod
    def folder_facts(cls, directory: str, meta: dict) -> dict:
        _check_saved_defence(directory, meta)  # checked with the folder, before an evaluation writes anything
        detector = inspect_victim(os.path.join(directory, DETECTOR))
        return {"settings": in_front(meta["config"]["defence"]), "defence": meta["config"]["defence"],
                "detector": detector.facts}

    @property
    def name(self) -> str:
        return f"{self.detector.name}+unveil" if self.detector is not None else self.kind

    def settings_text(self) -> str:
        return in_front(self.config.defence)

    @property
    def facts(self) -> dict:
        return {**super().facts, "defence": self.config.defence, "detector": self.detector.facts}

    def unveiled(self, texts: Sequence[str]) -> list[str]:
        """The texts as the detector reads them, their cloaks read back."""
        return [u.text for u in self.unveiler.unveil_batch(list(texts))]

    def fit(self, train: Sequence[dict], dev: Sequence[dict] | None = None, *, out_dir: str | None = None,
            resume: bool = False, progress: bool | None = None) -> DefendedVictim:
        if self.detector is None:
            raise ValueError("a defended victim needs its detector: defend(make_victim(...), spec)")

        def read_back(records):
            return None if records is None else [
                {**r, "text": t} for r, t in zip(records, self.unveiled([r["text"] for r in records]))]

        self.detector.fit(read_back(train), read_back(dev), out_dir=out_dir and os.path.join(out_dir, DETECTOR),
                          resume=resume, progress=progress)
        self.num_labels_ = self.detector.num_labels_
        return self

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        return self.detector.predict_proba(self.unveiled(texts))

    def predict_records(self, records: Sequence[dict]) -> np.ndarray:
        texts = self.unveiled([r["text"] for r in records])
        return self.detector.predict_records([{**r, "text": t} for r, t in zip(records, texts)])

    def _save_weights(self, directory: str) -> list[str]:
        self.detector.save(os.path.join(directory, DETECTOR))
        saved = self.unveiler.save(os.path.join(directory, DEFENCE))
        # the detector's victim.json's hash covers its own weights' hashes
        return [f"{DETECTOR}/victim.json", *(f"{DEFENCE}/{name}" for name in saved)]

    @classmethod
    def load(cls, directory: str, meta: dict) -> DefendedVictim:
        _check_saved_defence(directory, meta)
        victim = cls(meta.get("config"), meta.get("training"), load_victim(os.path.join(directory, DETECTOR)),
                     Unveiler.load(os.path.join(directory, DEFENCE)))
        victim.num_labels_ = int(meta["num_labels"])
        victim.trained_on = meta.get("trained_on")
        victim.fingerprint = meta["fingerprint"]
        return victim


def _check_saved_defence(directory: str, meta: dict) -> None:
    """Refuse a defended victim saved without its unveiler's files (by an older mmcloak, which mined its terms
    again from the file named in its spec, wherever it was loaded)."""
    if not any(name.startswith(f"{DEFENCE}/") for name in meta.get("files", {})):
        raise VictimError(f"{directory}: saved by an older mmcloak, whose defended victims kept no {DEFENCE}/ (the "
                          "terms and model the unveiler reads with): train it again with attacks train --defence")


def defend(victim: Victim, defence: str | Unveiler = "unveil") -> DefendedVictim:
    """``victim`` with ``cloak unveil`` in front of it, set up by ``defence`` (an ``Unveiler``, or its spec:
    ``unveil:families=sound+shape:threshold=4``); fitted already if ``victim`` is. Its fingerprint, for a
    saved or loaded ``victim``, is that victim's and the unveiler's digest (its settings, terms and model)
    together: the terms mined from a file that has since changed make another defended victim."""
    unveiler = defence if isinstance(defence, Unveiler) else Unveiler.from_spec(defence)
    defended = DefendedVictim({"defence": unveiler.spec()}, None, victim, unveiler)
    if hasattr(victim, "num_labels_"):
        defended.num_labels_ = victim.num_labels_
    if victim.fingerprint:
        defended.fingerprint = defended_fingerprint(victim.fingerprint, unveiler.digest())
    return defended


def in_front(defence: str) -> str:
    """A defended detector's settings as a report gives them: ``unveil in front``."""
    return f"{defence} in front"


def defended_fingerprint(detector: str, unveiler: str) -> str:
    """What the outcomes of a detector behind a defence are kept by: the detector's fingerprint and the
    unveiler's digest (``Unveiler.digest``) together (either changed, another victim)."""
    return sha256(f"{detector} {unveiler}".encode()).hexdigest()


@dataclasses.dataclass(frozen=True)
class DefendedFolder:
    """A saved detector with a defence in front, checked but not loaded (as ``VictimFolder``): what
    ``attacks evaluate --defence`` adds beside each victim it is given. The unveiler is built once, its
    terms mined before the run writes anything, and every defended folder (on every Ray actor too) reads
    with it: the file they were mined from is not read again."""

    folder: VictimFolder
    unveiler: Unveiler

    @property
    def defence(self) -> str:
        """The unveiler's spec."""
        return self.unveiler.spec()

    @property
    def num_labels(self) -> int:
        return self.folder.num_labels

    @property
    def facts(self) -> dict:
        detector = self.folder.facts
        return {"kind": DefendedVictim.kind, "name": f"{detector['name']}+unveil", "num_labels": self.num_labels,
                "config": {"defence": self.defence}, "training": {}, "settings": in_front(self.defence),
                "trained_on": detector.get("trained_on"), "defence": self.defence, "detector": detector,
                "fingerprint": defended_fingerprint(detector["fingerprint"], self.unveiler.digest())}

    def loaded(self) -> DefendedVictim:
        return defend(self.folder.loaded(), self.unveiler)


def defended_folders(folders: dict[str, VictimFolder], defence: str | Unveiler) -> dict[str, DefendedFolder]:
    """Each saved victim of ``folders`` (``{name: inspect_victim(...)}``) with ``defence`` (an ``Unveiler``,
    or its spec) in front, as NAME+unveil: what ``attacks evaluate --defence`` adds, on this machine or on
    every Ray actor. The unveiler is made ready first (its terms mined, its model loaded): a defence that
    cannot be built is refused here, before anything is written. One defended already is not defended twice."""
    unveiler = defence if isinstance(defence, Unveiler) else Unveiler.from_spec(defence)
    unveiler.prepare()
    return {f"{name}+unveil": DefendedFolder(folder, unveiler) for name, folder in folders.items()
            if not folder.facts.get("defence")}
