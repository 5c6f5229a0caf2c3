"""A detector behind a defence: ``cloak unveil`` reads each post's cloaks back before the detector sees it.

    defended = defend(load_victim("victims/tfidf-lr"), "unveil:targets=lexicon+mined:mine_from=train.jsonl")
    defended.predict_proba(["你们这些拜仁"])     # the detector's probabilities for "你们这些白人"
    defended.save("victims/tfidf-lr+unveil")    # victim.json names the defence; the detector in detector/

Like scikit-learn's meta-estimators (a ``Pipeline`` of a transformer and a classifier), the detector is a
parameter and the defence's spec is the config: ``fit`` reads the training posts back as the defended
detector will read the posts it is asked about, then fits the detector on them. Every attack that works
on text (the cloak attacks, the search) queries the whole pipeline, so the search is an adaptive attack on
the unveiler; an attack on input embeddings would go around the defence, and is not run on it.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from hashlib import sha256

import numpy as np

from cloak.unveil import Unveiler

from .base import Settings, Victim, VictimFolder, inspect_victim, load_victim, register_victim

DETECTOR = "detector"  # the subfolder the defended detector is saved in


@dataclasses.dataclass
class DefenceConfig(Settings):
    defence: str = "unveil"  # the Unveiler's spec (Unveiler.spec): what is read back, and how


@register_victim
class DefendedVictim(Victim):
    """A detector with ``cloak unveil`` in front of it."""

    kind = "defended"
    summary = "a detector with cloak unveil in front of it (attacks train --defence, attacks evaluate --defence)"
    Config = DefenceConfig

    def __init__(self, config: Settings | dict | None = None, training: Settings | dict | None = None,
                 detector: Victim | None = None) -> None:
        super().__init__(config, training)
        self.detector = detector
        self.unveiler = Unveiler.from_spec(self.config.defence)

    @classmethod
    def names(cls) -> list[str]:
        return []  # made by defend(victim, spec), never by name alone: it needs its detector

    @classmethod
    def folder_facts(cls, directory: str, meta: dict) -> dict:
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
        return [f"{DETECTOR}/victim.json"]  # its hash covers the detector's own weights' hashes

    @classmethod
    def load(cls, directory: str, meta: dict) -> DefendedVictim:
        victim = cls(meta.get("config"), meta.get("training"), load_victim(os.path.join(directory, DETECTOR)))
        victim.num_labels_ = int(meta["num_labels"])
        victim.trained_on = meta.get("trained_on")
        victim.fingerprint = meta["fingerprint"]
        return victim


def defend(victim: Victim, defence: str = "unveil") -> DefendedVictim:
    """``victim`` with ``cloak unveil`` in front of it, set up by ``defence`` (an ``Unveiler`` spec:
    ``unveil:families=sound+shape:threshold=4``); fitted already if ``victim`` is. Its fingerprint, for a
    saved or loaded ``victim``, is that victim's and the defence's together."""
    defended = DefendedVictim({"defence": Unveiler.from_spec(defence).spec()}, None, victim)
    if hasattr(victim, "num_labels_"):
        defended.num_labels_ = victim.num_labels_
    if victim.fingerprint:
        defended.fingerprint = defended_fingerprint(victim.fingerprint, defended.config.defence)
    return defended


def in_front(defence: str) -> str:
    """A defended detector's settings as a report gives them: ``unveil in front``."""
    return f"{defence} in front"


def defended_fingerprint(detector: str, defence: str) -> str:
    """What the outcomes of a detector behind a defence are kept by: the detector's fingerprint and the
    defence's spec together (either changed, another victim)."""
    return sha256(f"{detector} {defence}".encode()).hexdigest()


@dataclasses.dataclass(frozen=True)
class DefendedFolder:
    """A saved detector with a defence in front, checked but not loaded (as ``VictimFolder``): what
    ``attacks evaluate --defence`` adds beside each victim it is given."""

    folder: VictimFolder
    defence: str  # the Unveiler's spec

    @property
    def num_labels(self) -> int:
        return self.folder.num_labels

    @property
    def facts(self) -> dict:
        detector = self.folder.facts
        return {"kind": DefendedVictim.kind, "name": f"{detector['name']}+unveil", "num_labels": self.num_labels,
                "config": {"defence": self.defence}, "training": {}, "settings": in_front(self.defence),
                "trained_on": detector.get("trained_on"), "defence": self.defence, "detector": detector,
                "fingerprint": defended_fingerprint(detector["fingerprint"], self.defence)}

    def loaded(self) -> DefendedVictim:
        return defend(self.folder.loaded(), self.defence)


def defended_folders(folders: dict[str, VictimFolder], defence: str) -> dict[str, DefendedFolder]:
    """Each saved victim of ``folders`` (``{name: inspect_victim(...)}``) with ``defence`` in front, as
    NAME+unveil: what ``attacks evaluate --defence`` adds, on this machine or on every Ray actor. One defended
    already is not defended twice."""
    spec = Unveiler.from_spec(defence).spec()
    return {f"{name}+unveil": DefendedFolder(folder, spec) for name, folder in folders.items()
            if not folder.facts.get("defence")}
