"""A claim settled under a protocol committed before the test (DESIGN §9b): the protocol file, read and
checked once; its SHA-256 and the commit that added it, which every output of the claim records and the
verdict compares; and the figures the verdict gives, with their paired bootstrap intervals.

Not a benchmark itself: ``bench.mmbert_claim`` (which runs the protocol), ``bench.llm_detector`` (the
``llm`` victim chosen the same way) and ``bench.mmbert_verdict`` (which judges it) use it.

The intervals: every resample draws test posts with replacement (``attacks.bootstrap``: the draws depend
on the number of posts alone, so every model, seed and test set is resampled alike, a paired bootstrap);
in each, a model's figure is the mean over its seeds, and a difference or a ratio is taken between those
means. Seeds vary the training only: the interval is over posts, the spread over seeds is given apart.
"""
from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from bench.common import REPO, relative
from cloak.common.params import InstanceOf, Interval, Options, ParameterError, validate

RATE = Interval(float, 0, closed="neither")
SHARE = Interval(float, 0, 1, closed="left")
COUNT = Interval(int, 1)
# Every key of a protocol file and what it may hold; a misspelt key or a value out of range is refused.
PROTOCOL = {
    "name": InstanceOf(str), "claim": InstanceOf(str),
    "data": {"sample_seed": Interval(int, 0), "post_chars": InstanceOf(list), "train_posts": COUNT,
             "dev_posts": COUNT, "validation_posts": COUNT, "earlier_test_posts": COUNT,
             "test_posts": Options("all remaining"), "cloak_seed": Interval(int, 0)},
    "attacks": {"ops": InstanceOf(list), "targets": Options("lexicon", "mined", "lexicon+mined"),
                "strength": Options("op", "whole", "poster"), "held_out_terms": SHARE},
    "training": {"backbone": InstanceOf(str), "backbone_layers": COUNT, "max_length": COUNT, "batch_size": COUNT,
                 "patience": COUNT, "tts": Options("espeak-ng", "kokoro-onnx", "tone"), "whisper": InstanceOf(str),
                 "epochs": {"stage1": COUNT, "stage2": COUNT, "stage3": COUNT},
                 "stage1_loss": Options("mse", "contrastive"), "stage2_rates": Options("paper", "small"),
                 "stage3_lr": RATE, "augmented_bert_epochs": COUNT},
    "seeds": InstanceOf(list),
    "candidates": InstanceOf(dict), "choose": {"seed": Interval(int, 0), "rule": InstanceOf(str)},
    "router_variants": InstanceOf(dict),
    "models": InstanceOf(dict),
    "bootstrap": {"resamples": COUNT, "level": Interval(float, 0, 1, closed="neither")},
    "met": {"ratio_at_most": RATE, "clean_margin": Interval(float, 0), "rule": InstanceOf(str)},
    "llm": {"model": InstanceOf(str), "scoring": Options("logprob"), "prompts": InstanceOf(list),
            "validation_posts": COUNT, "choose": InstanceOf(str)},
}
STAGE3 = {"text_mask": SHARE, "term_mask": SHARE, "term_holdout": SHARE}
ROUTER = {"aux_loss_weight": Interval(float, 0), "feed_forward": Options("experts", "modality")}
# An addendum: arms added to a protocol's one test, committed before it is read, without changing the protocol
# (every output of its runs records the protocol's SHA-256). ``extends`` names that protocol by path and hash.
ADDENDUM = {"name": InstanceOf(str), "extends": {"path": InstanceOf(str), "sha256": InstanceOf(str)},
            "arms": {"bert_unveil": InstanceOf(str)}, "defence": InstanceOf(str)}


class Protocol(dict):
    """A protocol file's settings (a dict), with where it is (``path``) and its ``sha256``."""

    path: Path
    sha256: str

    @property
    def record(self) -> dict:
        """What an output made under it records: the file (relative to the repository) and its SHA-256."""
        return {"path": relative(self.path), "sha256": self.sha256}


def load_protocol(path: Path) -> Protocol:
    """The protocol at ``path``, checked against ``PROTOCOL``; one line naming the file if it is not one."""
    def settings(checked: dict) -> None:
        for name, setting in checked["candidates"].items():
            validate(setting, STAGE3, f"candidates.{name}")
        for name, setting in checked["router_variants"].items():
            validate(setting, ROUTER, f"router_variants.{name}")

    return _read(path, PROTOCOL, settings, "a protocol")


def load_addendum(path: Path, protocol: Protocol) -> Protocol:
    """The addendum at ``path`` (checked against ``ADDENDUM``), which must extend ``protocol`` as it stands."""
    def whole(checked: dict) -> None:
        from cloak.unveil import Unveiler

        missing = [k for k in ADDENDUM if k not in checked] + [
            f"arms.{arm}" for arm in ADDENDUM["arms"] if arm not in checked.get("arms", {})]
        if missing:
            raise ParameterError(f"missing {', '.join(missing)}")
        try:
            Unveiler.from_spec(checked["defence"])
        except ValueError as e:
            raise ParameterError(f"defence: {e}") from None

    addendum = _read(path, ADDENDUM, whole, "an addendum")
    same_protocol(addendum["extends"], protocol, f"the addendum {relative(Path(path))}")
    return addendum


def _read(path: Path, schema: dict, check, what: str) -> Protocol:
    """A YAML file checked against ``schema`` and by ``check``, with its path and SHA-256."""
    import yaml

    text = Path(path).read_bytes()
    try:
        values = yaml.safe_load(text)
        checked = validate(values if isinstance(values, dict) else {}, schema, "")
        check(checked)
    except (yaml.YAMLError, ParameterError) as e:
        raise SystemExit(f"{path}: not {what}: {e}") from None
    protocol = Protocol(checked)
    protocol.path, protocol.sha256 = Path(path), hashlib.sha256(text).hexdigest()
    return protocol


def committed(protocol: Protocol) -> str:
    """The commit that last changed the protocol file; stops if the file has changes not committed (the test is
    read only under a protocol fixed in the history before it)."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    where = str(Path(protocol.path).resolve())
    commit = git("log", "-1", "--format=%H", "--", where)
    if not commit or git("status", "--porcelain", "--", where):
        raise SystemExit(f"{relative(protocol.path)} is not committed as it stands: commit the protocol (alone) "
                         "before the test is read")
    return commit


def same_protocol(recorded: dict, protocol: Protocol, what: str) -> None:
    """Stop unless ``recorded`` (an output's ``protocol``) names this very file by its SHA-256."""
    if not recorded or recorded.get("sha256") != protocol.sha256:
        raise SystemExit(f"{what} was made under another protocol (SHA-256 {(recorded or {}).get('sha256')}, "
                         f"{relative(protocol.path)} has {protocol.sha256}): its figures do not answer this one")


# --------------------------------------------------------------------------------------------- figures

def resampled(labels: np.ndarray, predictions: dict[str, list[dict[str, np.ndarray]]], resamples: int,
              seed: int = 0) -> dict[str, dict[str, np.ndarray]]:
    """Per model, per test set: macro-F1 over the posts as given (``[0]``) and in each resample (``[1:]``), the
    mean over the model's seeds. ``predictions[model]``: one {test set: labels predicted} a seed."""
    from attacks.bootstrap import macro_f1
    from attacks.bootstrap import resamples as draws_of

    everything = np.arange(len(labels))[None]
    blocks = [everything, *draws_of(len(labels), resamples, seed)]
    out = {}
    for model, seeds in predictions.items():
        out[model] = {name: np.concatenate([np.mean([macro_f1(labels, run[name], 2, draws) for run in seeds], axis=0)
                                            for draws in blocks]) for name in seeds[0]}
    return out


def figure(values: np.ndarray, level: float) -> dict:
    """The point (``values[0]``, on the posts as given) and the ``level`` interval of the resamples."""
    from attacks.bootstrap import interval

    return {"value": round(float(values[0]), 4), "interval": interval(values[1:], level)}


def ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """``numerator / denominator`` resample by resample (NaN where the denominator is not above zero: a twin
    that lost nothing has no ratio)."""
    return np.divide(numerator, denominator, out=np.full_like(numerator, np.nan), where=denominator > 0)


def ratio_figure(values: np.ndarray, level: float) -> dict:
    """``figure`` of a ratio, its interval over the resamples where it exists, and how many did not."""
    from attacks.bootstrap import interval

    finite = values[1:][np.isfinite(values[1:])]
    return {"value": None if not np.isfinite(values[0]) else round(float(values[0]), 4),
            "interval": interval(finite, level) if len(finite) else None,
            "resamples_without": int(len(values) - 1 - len(finite))}


def absolute(f1: dict[str, np.ndarray], level: float) -> dict:
    """A model's macro-F1 on every test set and its drop under every cloak, each with its interval."""
    sets = [k for k in f1 if k != "clean"]
    return {"macro_f1": {k: figure(v, level) for k, v in f1.items()},
            "drop": {k: figure(f1["clean"] - f1[k], level) for k in sets}}


def compared(f1: dict[str, dict[str, np.ndarray]], model: str, baseline: str, level: float) -> dict:
    """``model`` against ``baseline``: clean macro-F1 (model minus baseline), and under each cloak the
    baseline's drop minus the model's and the model's drop as a share of the baseline's."""
    a, b = f1[model], f1[baseline]
    out = {"clean_minus_baseline": figure(a["clean"] - b["clean"], level)}
    for op in (k for k in a if k != "clean"):
        drop, base = a["clean"] - a[op], b["clean"] - b[op]
        out[op] = {"baseline_drop_minus_drop": figure(base - drop, level),
                   "macro_f1_minus_baseline": figure(a[op] - b[op], level),
                   "drop_share_of_baselines": ratio_figure(ratio(drop, base), level)}
    return out


def claim_parts(f1: dict[str, dict[str, np.ndarray]], protocol: Protocol, model: str = "mmbert",
                baseline: str = "twin") -> dict:
    """The claim's three parts for ``model`` against ``baseline`` under homophones (``f1``: ``resampled``'s):
    its drop at most ``ratio_at_most`` of the baseline's, the interval of the baseline's drop minus its own
    above zero, its clean macro-F1 no more than ``clean_margin`` below the baseline's."""
    from attacks.bootstrap import interval

    met, level = protocol["met"], protocol["bootstrap"]["level"]
    a, b = f1[model], f1[baseline]
    drop, base = a["clean"] - a["homophone"], b["clean"] - b["homophone"]
    shares = ratio(drop, base)
    difference = interval((base - drop)[1:], level)
    parts = {"at_most_the_ratio": bool(base[0] > 0 and drop[0] <= met["ratio_at_most"] * base[0]),
             "interval_excludes_zero": bool(difference[0] > 0),
             "clean_within_margin": bool(a["clean"][0] >= b["clean"][0] - met["clean_margin"])}
    finite = shares[1:][np.isfinite(shares[1:])]
    return {"drop": round(float(drop[0]), 4), "baseline_drop": round(float(base[0]), 4),
            "ratio": round(float(shares[0]), 4) if np.isfinite(shares[0]) else None,
            "ratio_interval": interval(finite, level) if len(finite) else None,
            "baseline_drop_minus_drop": difference, "clean": round(float(a["clean"][0]), 4),
            "baseline_clean": round(float(b["clean"][0]), 4), **parts, "parts_met": sum(parts.values()),
            "holds": all(parts.values())}


def seed_spread(labels: np.ndarray, seeds: list[dict[str, np.ndarray]]) -> dict:
    """Each seed's clean macro-F1 and drops, and their standard deviation over the seeds."""
    from mmbert.metrics import classification_metrics

    f1 = [{k: classification_metrics(labels, p)["f1"] for k, p in run.items()} for run in seeds]
    rows = {"clean_macro_f1": [run["clean"] for run in f1],
            **{f"drop_{k}": [run["clean"] - run[k] for run in f1] for k in f1[0] if k != "clean"}}
    return {k: {"seeds": [round(x, 4) for x in v], "sd": round(float(np.std(v, ddof=1)) if len(v) > 1 else 0.0, 4)}
            for k, v in rows.items()}


def digits(values: Iterable[int]) -> str:
    """Predicted labels a digit a post, as the outputs keep them (-1, unanswered, as ``x``)."""
    return "".join("x" if v < 0 else str(v) for v in values)


def undigits(text: str) -> np.ndarray:
    """``digits`` read back."""
    return np.array([-1 if c == "x" else int(c) for c in text], dtype=np.int64)
