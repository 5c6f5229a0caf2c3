"""One registry of victims, and scikit-learn's contract for them: a detector defined outside the package
(here, in this file) is made by name, trained by `attacks train`, saved, loaded and evaluated like ours;
fitted state has a trailing underscore and is a NotFittedError before fit; configs are never rewritten;
folders saved before all this still load."""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections import Counter

import numpy as np
import pytest
from click.testing import CliRunner

from attacks import (NotFittedError, inspect_victim, load_victim, make_victim, register_victim, victim_class,
                     victim_names)
from attacks.victims.base import Fitted, Settings, Victim, check_texts, labels_of
from cloak.common.io import write_atomic

from .conftest import DATA, read_jsonl


@dataclasses.dataclass
class Smoothing(Settings):
    alpha: float = 1.0


@register_victim
class CharacterVotes(Victim):
    """A toy detector: each character votes for the label it was seen with most in training (add-alpha
    smoothed log-odds), the post's score the mean of its characters' votes."""

    kind = "test-character-votes"
    summary = "characters voting by their training log-odds (a toy, defined in a test)"
    Config = Smoothing
    votes_ = Fitted()  # character -> log-odds of offensive

    def fit(self, train, dev=None, **_):
        labels = labels_of(train)
        counts = [Counter(), Counter()]
        for record, label in zip(train, labels):
            counts[int(label > 0)].update(set(record["text"]))
        a = self.config.alpha
        self.votes_ = {c: float(np.log((counts[1][c] + a) / (counts[0][c] + a))) for c in {*counts[0], *counts[1]}}
        self.num_labels_ = 2
        return self

    def predict_proba(self, texts):
        scores = np.array([np.mean([self.votes_.get(c, 0.0) for c in t] or [0.0]) for t in check_texts(texts)])
        offensive = 1 / (1 + np.exp(-4 * scores))
        return np.stack([1 - offensive, offensive], 1)

    def _save_weights(self, directory):
        write_atomic(os.path.join(directory, "votes.json"), json.dumps(self.votes_, ensure_ascii=False).encode())
        return ["votes.json"]

    def _load_weights(self, directory):
        with open(os.path.join(directory, "votes.json"), encoding="utf-8") as f:
            self.votes_ = json.load(f)


def write(path, rows) -> str:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def test_a_victim_registered_outside_the_package_is_made_trained_saved_loaded_and_evaluated(sample_path, tmp_path):
    from attacks.cli import main

    assert "test-character-votes" in victim_names() and victim_class("test-character-votes") is CharacterVotes
    victim = make_victim("test-character-votes", {"alpha": 0.5})
    assert isinstance(victim, CharacterVotes) and victim.config.alpha == 0.5
    with pytest.raises(ValueError, match="unknown parameter 'alhpa'; did you mean 'alpha'"):
        make_victim("test-character-votes", {"alhpa": 1})
    rows = read_jsonl(sample_path)
    train, data = write(tmp_path / "train.jsonl", rows[:200]), write(tmp_path / "test.jsonl", rows[200:260])
    runner = CliRunner()
    result = runner.invoke(main, ["models"])
    assert "test-character-votes" in result.output and "a toy, defined in a test" in result.output
    folder = str(tmp_path / "votes")
    result = runner.invoke(main, ["train", "--model", "test-character-votes", "--train", train, "--out", folder])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "votes" / "victim.json").read_text())["kind"] == "test-character-votes"
    loaded = load_victim(folder)
    texts = [r["text"] for r in rows[200:260]]
    np.testing.assert_array_equal(loaded.predict_proba(texts),
                                  make_victim("test-character-votes").fit(rows[:200]).predict_proba(texts))
    assert inspect_victim(folder).facts["settings"] == "defaults"
    result = runner.invoke(main, ["evaluate", "--victim", folder, "--data", data, "--attacks", "cloak", "--ops",
                                  "homophone", "--out", str(tmp_path / "eval"), "-q"])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "eval" / "summary.json").read_text())
    assert summary["victims"]["votes"]["facts"]["kind"] == "test-character-votes"
    assert set(summary["victims"]["votes"]["attacks"]) == {"cloak:homophone"}


@pytest.mark.parametrize("name,config", [("tfidf-lr", {}), ("bow-nb", {}), ("llm", None),
                                         ("bert", {"backbone": "no-such-backbone"}),
                                         ("chinesebert", {"backbone": "no-such-backbone"}),
                                         ("habertor", {}), ("mmbert", {}), ("test-character-votes", {})])
def test_a_victim_not_fitted_says_so(name, config):
    """`make_victim('tfidf-lr').predict_proba(['你好'])` raised "TypeError: 'NoneType' object cannot be
    interpreted as an integer"; every kind now says it is not fitted, and saving it writes nothing."""
    victim = make_victim(name, config)
    if name == "llm":  # nothing to fit: its labels are the prompt's
        assert victim.num_labels_ == 2
        return
    assert not hasattr(victim, "num_labels_")
    with pytest.raises(NotFittedError, match=r"is not fitted yet \(it has no \w+_\): call fit first"):
        victim.predict_proba(["你好"])
    with pytest.raises(NotFittedError):
        victim.save("never-written")
    assert not os.path.exists("never-written")


def test_fit_never_rewrites_the_config(sample_path):
    rows = read_jsonl(sample_path)[:120]
    victim = make_victim("tfidf-rbf", {"params": {"C": 2}})
    assert victim.config.params == {"C": 2}
    victim.fit(rows)
    assert victim.config.params == {"C": 2}  # what fit derived is fitted state
    assert victim.params_ == {"C": 2.0, "gamma": "scale"} and victim.fitted_config()["params"] == victim.params_
    with pytest.raises(ValueError, match="'gamma' must be"):
        make_victim("tfidf-rbf", {"params": {"gamma": -1}})


def test_a_folder_saved_before_the_registry_still_loads(tmp_path):
    """tests/data/saved_bow-lr: bow-lr, oversampled, saved by the code before the registry (commit c7c7ab2)."""
    folder = shutil.copytree(DATA / "saved_bow-lr", tmp_path / "bow-lr")
    victim = load_victim(str(folder))
    assert victim.name == "bow-lr" and victim.num_labels_ == 2 and victim.params_ == {"C": 10.0}
    rows = read_jsonl(DATA.parent.parent / "samples" / "cold" / "cold_test_300.jsonl")[:3]
    np.testing.assert_allclose(victim.predict_proba([r["text"] for r in rows])[:, 1],
                               [0.86908513, 0.9911651, 0.94664705], atol=1e-7)
    facts = inspect_victim(str(folder)).facts
    assert facts["fingerprint"] == victim.fingerprint and facts["settings"].endswith("min df 3; oversample True, seed 2")


def test_a_victim_of_an_installed_package_is_found_by_its_entry_point(tmp_path, monkeypatch):
    """A package declares `[project.entry-points."mmcloak.victims"] KIND = "module"`: the attacks commands
    know the kind, its module imported only when it is first needed."""
    import sys
    from importlib import metadata

    from attacks.victims import base

    (tmp_path / "installed_detector.py").write_text(
        "from tests.test_victim_registry import CharacterVotes\n"
        "from attacks import register_victim\n\n\n"
        "@register_victim\n"
        "class Installed(CharacterVotes):\n"
        "    kind = 'test-installed'\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    entry = metadata.EntryPoint("test-installed", "installed_detector", "mmcloak.victims")
    monkeypatch.setattr(metadata, "entry_points", lambda group: [entry] if group == "mmcloak.victims" else [])
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))  # the registry as it was, after the test
    base.register_installed()
    assert "installed_detector" not in sys.modules  # registered by its path, not imported
    assert make_victim("test-installed").kind == "test-installed" and "installed_detector" in sys.modules
    del sys.modules["installed_detector"]
