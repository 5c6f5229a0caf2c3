"""The folders of ``attacks evaluate`` as the report reads them: each summary, what was run, what each
attack declared of how it is shown, and the outcome files behind the figures."""
from __future__ import annotations

import dataclasses
import datetime
import json
import os
from collections.abc import Sequence

import numpy as np

from cloak.common.io import label_name

from ..attack import ReportedAs
from ..evaluate import META, SUMMARY, outcome_file

# Folders written before the evaluator recorded each attack's declaration: what the attacks of each built-in
# kind declared then. An attack of another kind in such a folder is a column of the matrix and no more.
_EPS = ReportedAs(figure="curve", axis="eps", axis_text="eps (L2 norm of the perturbation per post)", examples=None,
                  varies="eps")
DECLARED_BEFORE = {"cloak": ReportedAs(figure="ranked", prefix="cloak:", trained_ops=True, varies="ops"),
                   "search": ReportedAs(figure="counts", examples=0, varies="ops"),
                   "fgm": dataclasses.replace(_EPS, hidden=("steps", "alpha")),
                   "pgd": dataclasses.replace(_EPS, unset={"alpha": "2.5 eps / steps"})}


@dataclasses.dataclass
class Results:
    """One ``attacks evaluate`` folder: its summary, what was run, and the label its rows carry."""

    path: str
    label: str
    summary: dict
    run: dict
    written: str  # when summary.json was written (ISO time)

    def comparable(self, other: Results) -> bool:
        """Whether both attacked the same posts, so their figures pair post by post."""
        keys = ("sha256", "records", "limit", "shard")
        return all(self.summary["data"].get(k) == other.summary["data"].get(k) for k in keys)

    def outcomes(self, victim: str, name: str) -> list[dict]:
        """The lines of one of a victim's outcome files (``clean.jsonl``, or an attack's)."""
        with open(os.path.join(self.path, victim, name), encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

    def labels(self, victim: str) -> np.ndarray:
        return np.array([o["label"] for o in self.outcomes(victim, "clean.jsonl")])

    def clean(self, victim: str) -> tuple[np.ndarray, np.ndarray]:
        """Each post's gold label and its predicted label as written (-1 where unanswered), from one read."""
        outcomes = self.outcomes(victim, "clean.jsonl")
        return np.array([o["label"] for o in outcomes]), _predicted(outcomes)

    def predictions(self, victim: str, attack: str) -> np.ndarray:
        """Each post's predicted label under ``attack``; -1 where unanswered."""
        return _predicted(self.outcomes(victim, outcome_file(attack)))


def _predicted(outcomes: list[dict]) -> np.ndarray:
    return np.array([-1 if o["probs"] is None else int(np.argmax(o["probs"])) for o in outcomes])


def load_results(path: str, label: str | None = None) -> Results:
    """The folder ``attacks evaluate --out`` wrote, read for the report (its ``summary.json`` and run record);
    ``label`` names it in the report (the folder's name by default). An unfinished folder is refused."""
    summary_path, run_path = os.path.join(path, SUMMARY), os.path.join(path, META)
    if not os.path.isdir(path):
        raise FileNotFoundError(f"{path}: no such folder (give the --out folder of `attacks evaluate`)")
    if not os.path.isfile(summary_path):
        if os.path.isfile(run_path):
            raise ValueError(f"{path}: unfinished (`attacks evaluate` stopped before it wrote {SUMMARY}): rerun the "
                             "same command to finish it")
        raise FileNotFoundError(f"{path}: no {SUMMARY}: not a folder written by `attacks evaluate --out {path}`")
    with open(summary_path, encoding="utf-8") as f:
        summary = json.load(f)
    run = {}
    if os.path.isfile(run_path):
        with open(run_path, encoding="utf-8") as f:
            run = json.load(f)
    written = datetime.datetime.fromtimestamp(os.path.getmtime(summary_path), datetime.timezone.utc)
    return Results(path, label or os.path.basename(os.path.normpath(path)), summary, run,
                   written.isoformat(timespec="seconds"))


@dataclasses.dataclass(frozen=True)
class AttackInfo:
    """An attack as the folders recorded it: its kind, settings and how it is shown."""

    name: str
    kind: str
    settings: dict
    shown: ReportedAs

    @property
    def heading(self) -> str:
        """``cloak:homophone`` -> ``homophone``: its name in the report's headings."""
        return self.name.removeprefix(self.shown.prefix)


def declared(settings: dict) -> ReportedAs:
    """How an attack is shown: as its summary entry records it, else as its kind was before it was recorded."""
    if "reported_as" in settings:
        return ReportedAs.from_dict(settings["reported_as"])
    return DECLARED_BEFORE.get(settings.get("kind"), ReportedAs())


def attack_infos(results: Sequence[Results]) -> dict[str, AttackInfo]:
    """Every attack any folder holds (the first folder that holds it says what it is)."""
    infos: dict[str, AttackInfo] = {}
    for r in results:
        for name, settings in r.summary["attacks"].items():
            if name not in infos:
                infos[name] = AttackInfo(name, settings.get("kind", "?"), settings, declared(settings))
    return infos


def attack_groups(result: Results) -> list[dict]:
    """The attacks of a folder grouped by their settings, for a header a person reads: {"kind", "varies",
    "settings", "values": [what the setting it declares varying was, per attack of the group]}; settings it
    hides are left out, and one left None shows what that means (or is left out)."""
    groups: dict[str, dict] = {}
    for settings in result.summary["attacks"].values():
        shown = declared(settings)
        left_out = ("kind", "reported_as", shown.varies, *shown.hidden)
        rest = {k: shown.unset[k] if v is None else v for k, v in settings.items()
                if k not in left_out and (v is not None or k in shown.unset)}
        key = json.dumps([settings["kind"], shown.varies, rest], sort_keys=True)
        group = groups.setdefault(key, {"kind": settings["kind"], "varies": shown.varies, "settings": rest,
                                        "values": []})
        if shown.varies in settings:
            value = settings[shown.varies]
            group["values"].append(f"{value:g}" if isinstance(value, float) else str(value))
    return list(groups.values())


def victim_facts(result: Results, victim: str) -> dict:
    """What the folder recorded of a victim: kind, settings, training data and the cloaks it carried."""
    facts = result.summary["victims"][victim].get("facts") or \
        (result.run.get("victims", {}).get(victim) or {}).get("facts") or {}
    out = {"kind": facts.get("kind", "?"), "settings": facts.get("settings", "not recorded"),
           "trained_on": facts.get("trained_on"), "fingerprint": facts.get("fingerprint")}
    if facts.get("defence"):  # a detector behind a defence: the defence, and which detector
        out.update(defence=facts["defence"], detector={"fingerprint": (facts.get("detector") or {}).get("fingerprint")})
    return out


def trained_ops(facts: dict) -> set[str]:
    """The ops whose cloaks a victim's training data carried."""
    return set(((facts["trained_on"] or {}).get("train", {}).get("cloaked") or {}).get("ops", {}))


def names_of_labels(results: Sequence[Results], given: dict[int, str] | None = None) -> dict[str, str]:
    """Each label's name: ``given`` (``--label-names``), else as the folders recorded them, else the
    default (non-offensive / offensive, "offensive (label k)" beyond)."""
    found = {k for r in results for e in r.summary["victims"].values() for f in e["attacks"].values()
             for k in f.get("textattack_by_label", {})}
    names = {k: label_name(k) for k in sorted(found | {"0", "1"})}
    for r in results:
        names.update(r.summary["data"].get("label_names") or {})
    names.update({str(k): v for k, v in (given or {}).items()})
    return names
