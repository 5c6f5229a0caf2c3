"""The evaluator: every attack on every victim over one labelled data set, into a folder.

``OUT/<victim>/clean.jsonl`` holds each post's clean probabilities, ``OUT/<victim>/<attack>.jsonl``
(``fgm@0.5``, ``cloak-homophone``, ``cloak-homophone+emoji@full0.3``)
one outcome per post (adversarial text, edits, probabilities, queries), and ``OUT/summary.json``
every figure (:mod:`attacks.metrics`, clean vs attacked and the drop, and TextAttack's counts), with
the settings, what each attack declares of how the report shows it, the data's SHA-256 and the library
versions. Outcomes are appended a batch at a time:
a kill loses at most the batch under way, and the same command resumes where it stopped (a
finished (victim, attack) pair is not run again). The summary is computed from the outcome files
alone, so a resumed run writes the same one.

TextAttack's counts, by the attack's goal (``attacks.goals``; untargeted for every attack without one): a
post the goal already holds for is skipped (untargeted: the victim already gets it wrong; targeted: its
gold label is the target, or the victim already predicts it); a success is a post attacked that reaches the
goal (untargeted: the label flipped; targeted: the target predicted); success rate = successes /
(successes + failures); accuracy under attack = failures / all posts.
"""
from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Sequence

import numpy as np

from cloak.common.commands import check_out_folder
from cloak.common.progress import progress_bar
from cloak.common.io import dump_record, file_sha256, label_name, write_atomic

from .attack import Attack, ReportedAs
from .bootstrap import paired_intervals
from .goals import Goal, Untargeted, goal_of
from .metrics import detection_metrics, drops, prediction_counts
from .victims.base import Victim, VictimFolder, inspect_victim, versions

SUMMARY = "summary.json"
META = "run.json"  # what was run: data, attacks, versions, victims and the pairs skipped


def outcome_file(name: str) -> str:
    """``cloak:homophone+emoji`` -> ``cloak-homophone+emoji.jsonl`` (no colon: Windows refuses one)."""
    return name.replace(":", "-") + ".jsonl"


def run_attack(attack: Attack, victim: Victim, records: Sequence[dict], positions: Sequence[int],
               clean: np.ndarray) -> list[dict]:
    """One outcome per record, as its outcome file keeps it: {text, edits, probs, changed, queries, ...}."""
    return [o.to_dict() for o in attack.attack(victim, records, positions, clean)]


def evaluate(victims: dict[str, Victim | VictimFolder | str], records: Sequence[dict], attacks: Sequence[Attack],
             out_dir: str, *, data: dict | None = None, shard: tuple[int, int] | None = None, batch_size: int = 64,
             label_names: dict[int, str] | None = None, progress: bool | None = None) -> dict:
    """Run every attack on every victim (``{name: a victim, a checked folder (``inspect_victim``), or the
    path of a saved one}``) and return the summary (also written to ``OUT/summary.json``). ``records``
    need ``id``, ``text`` and ``label``.
    ``shard=(i, n)`` attacks the i-th of n contiguous blocks of the records (:func:`merge` joins them).

    Everything is checked before anything is written: each folder (its weights against their hashes),
    each record's label against each victim's labels, and an existing ``out_dir`` against this run (its
    data, its attacks' settings and its victims' fingerprints: a victim retrained into the same folder
    is another victim, whose outcomes the old ones must not stand for). A folder is loaded only if some
    of its outcomes are missing."""
    first, last = shard_bounds(len(records), shard)
    block_records = records[first:last]
    inspected = {name: inspect_victim(v) if isinstance(v, str) else v for name, v in victims.items()}
    for name, victim in inspected.items():
        if victim.num_labels is None:
            raise ValueError(f"victim {name}: not fitted (fit it, or give the folder of a saved one)")
        bad = first_unknown_label(records, victim.num_labels)
        if bad is not None:
            where = (data or {}).get("path") or "records"
            known = ", ".join(map(str, range(victim.num_labels)))
            raise ValueError(f"{where}, record {bad + 1} (id {records[bad].get('id')!r}): label "
                             f"{records[bad]['label']}, but victim {name} knows labels {known}")
    meta = {"data": {**(data or {}), "records": len(records), "shard": list(shard) if shard else None,
                     "label_names": {str(k): v for k, v in resolve_label_names(records, label_names).items()}},
            "attacks": {a.name: a.settings() for a in attacks},
            "reported_as": {a.name: dataclasses.asdict(reported_as(a)) for a in attacks},
            "versions": versions("torch", "scikit-learn"),
            "victims": {name: {"facts": victim.facts, "skipped": skip_reasons(name, victim.facts, attacks)}
                        for name, victim in inspected.items()}}
    _check_same_run(out_dir, meta)
    os.makedirs(out_dir, exist_ok=True)
    write_atomic(os.path.join(out_dir, META), _dumps(meta))  # from the start: a resumed run is checked too
    for name, victim in inspected.items():
        folder = os.path.join(out_dir, name)
        os.makedirs(folder, exist_ok=True)
        skipped = meta["victims"][name]["skipped"]
        files = ["clean.jsonl", *(outcome_file(a.name) for a in attacks if a.name not in skipped)]
        if all(_complete(os.path.join(folder, f), len(block_records)) for f in files):
            continue
        victim = victim.loaded()
        clean_path = os.path.join(folder, "clean.jsonl")
        _fill(clean_path, block_records, batch_size, lambda block, _: [
            {"probs": p} for p in victim.predict_proba([r["text"] for r in block])], f"{name}: clean", progress)
        clean = _probs(_read(clean_path))
        for attack in attacks:
            aname = attack.name
            if aname in skipped:
                continue

            def outcomes(block: list[dict], start: int, attack=attack) -> list[dict]:
                return run_attack(attack, victim, block, range(first + start, first + start + len(block)),
                                  clean[start:start + len(block)])

            _fill(os.path.join(folder, outcome_file(aname)), block_records, batch_size, outcomes, f"{name}: {aname}",
                  progress)
    return summarize(out_dir)


def skip_reasons(name: str, facts: dict, attacks: Sequence[Attack]) -> dict[str, str]:
    """The attacks that cannot run on victim ``name`` (of ``facts``), and why; an attack whose settings cannot
    hold for it refuses the run here, before anything is written."""
    reasons = {}
    for attack in attacks:
        try:
            reason = attack.skip_reason(facts)
        except ValueError as e:
            raise ValueError(f"{attack.name} cannot attack victim {name}: {e}") from None
        if reason:
            reasons[attack.name] = reason
    return reasons


def reported_as(attack: Attack) -> ReportedAs:
    """How the report shows ``attack``: what it declares, else a column of the robustness matrix and no more."""
    return getattr(attack, "reported_as", None) or ReportedAs()


def first_unknown_label(records: Sequence[dict], num_labels: int) -> int | None:
    """The index of the first record whose label a victim of ``num_labels`` labels does not know."""
    return next((i for i, r in enumerate(records) if not 0 <= int(r["label"]) < num_labels), None)


def resolve_label_names(records: Sequence[dict], given: dict[int, str] | None = None) -> dict[int, str]:
    """What each label is called in reports: ``given`` (``--label-names``), else the records' own
    ``label_name`` fields where every record of a label agrees, else non-offensive / offensive for labels 0
    and 1 (every figure here takes label 0 as the clean class) and "offensive (label k)" beyond."""
    names: dict[int, str] = {}
    seen: dict[int, set] = {}
    for record in records:
        if isinstance(record.get("label_name"), str):
            seen.setdefault(int(record["label"]), set()).add(record["label_name"])
    for label in sorted({int(r["label"]) for r in records} | set(given or {})):
        from_data = seen.get(label, set())
        names[label] = (given or {}).get(label) or (next(iter(from_data)) if len(from_data) == 1 else None) or \
            label_name(label)
    return names


def _check_same_run(out_dir: str, meta: dict) -> None:
    """Refuse to resume into a folder whose outcomes came from other data, from an attack of the same name
    run with other settings, or from another victim under the same name (retrained, or another model saved
    into its folder): they would be counted as this run's."""
    path = os.path.join(out_dir, META)
    check_out_folder("--out", out_dir)
    if not os.path.isfile(path):
        return
    with open(path, encoding="utf-8") as f:
        old = json.load(f)
    advice = f"attack into another --out folder, or delete {out_dir} to start over"
    for key in ("sha256", "records", "limit", "shard"):
        if old["data"].get(key) != meta["data"].get(key):
            raise ValueError(f"{out_dir} holds outcomes of other data ({key} was {old['data'].get(key)!r}, now "
                             f"{meta['data'].get(key)!r}): {advice}")
    for name, settings in meta["attacks"].items():
        before = old["attacks"].get(name)
        if before is not None and before != settings:
            changed = sorted(k for k in {*before, *settings} if before.get(k) != settings.get(k))
            raise ValueError(f"{out_dir} holds outcomes of {name} run with other settings ("
                             + ", ".join(f"{k} was {before.get(k)!r}, now {settings.get(k)!r}" for k in changed)
                             + f"): {advice}")
    for name, entry in meta["victims"].items():
        was = (old.get("victims", {}).get(name) or {}).get("facts", {}).get("fingerprint")
        now = entry["facts"].get("fingerprint")
        kept = os.path.join(out_dir, name)
        if was and now and was != now and os.path.isdir(kept) and os.listdir(kept):
            raise ValueError(f"{out_dir} holds outcomes of another victim named {name} (fingerprint {was[:12]}, now "
                             f"{now[:12]}: retrained, or another model saved in its folder): attack into another "
                             f"--out folder, or delete {os.path.join(out_dir, name)} to attack it afresh")


def summarize(out_dir: str) -> dict:
    """``summary.json`` from the folder's outcome files and ``run.json`` alone (so a resumed run, or a
    merge of shards, writes the same one as a run straight through)."""
    with open(os.path.join(out_dir, META), encoding="utf-8") as f:
        meta = json.load(f)
    summary = {k: meta[k] for k in ("data", "attacks", "versions")}
    declared = meta.get("reported_as", {})  # none in folders of older versions: the report knows what they held
    summary["attacks"] = {a: {**s, **({"reported_as": declared[a]} if a in declared else {})}
                          for a, s in meta["attacks"].items()}
    summary["victims"] = {}
    for name, victim in meta["victims"].items():
        clean_lines = _read(os.path.join(out_dir, name, "clean.jsonl"))
        labels, clean = np.array([o["label"] for o in clean_lines]), _probs(clean_lines)
        entry = summary["victims"][name] = {"facts": victim.get("facts", {}),
                                            "clean": _finite(detection_metrics(labels, clean)),
                                            "clean_predictions": prediction_counts(clean), "attacks": {}}
        for aname in meta["attacks"]:
            if aname in victim["skipped"]:
                entry["attacks"][aname] = {"skipped": victim["skipped"][aname]}
            else:
                outcomes = _read(os.path.join(out_dir, name, outcome_file(aname)))
                entry["attacks"][aname] = figures_of(labels, clean, outcomes, goal_of(meta["attacks"][aname]))
    write_atomic(os.path.join(out_dir, SUMMARY), _dumps(summary))
    return summary


def merge(shard_dirs: Sequence[str], out_dir: str) -> dict:
    """Join the folders of shards 0..n-1 of one evaluation into ``out_dir`` and summarise it."""
    metas = []
    for d in shard_dirs:
        path = os.path.join(d, META)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{d}: not an evaluation folder (no {META}; is the shard finished?)")
        with open(path, encoding="utf-8") as f:
            metas.append(json.load(f))
    shards = sorted((tuple(m["data"]["shard"] or (0, 1)), d, m) for d, m in zip(shard_dirs, metas))
    n = shards[0][0][1]
    if [s[0] for s in shards] != [(i, n) for i in range(n)]:
        raise ValueError(f"shards must be 0/{n} to {n - 1}/{n} once each, got "
                         f"{', '.join(f'{i}/{k}' for (i, k), _, _ in shards)}")
    for key in ("attacks", "victims"):
        if any(m[key] != metas[0][key] for m in metas):
            raise ValueError(f"the shards were run with different {key}: merge shards of one command only")
    if any({**m["data"], "shard": None} != {**metas[0]["data"], "shard": None} for m in metas):
        raise ValueError("the shards attacked different data")
    os.makedirs(out_dir, exist_ok=True)
    first = shards[0][2]
    for name, victim in first["victims"].items():
        os.makedirs(os.path.join(out_dir, name), exist_ok=True)
        for file in ["clean.jsonl", *(outcome_file(a) for a in first["attacks"] if a not in victim["skipped"])]:
            parts = [os.path.join(d, name, file) for _, d, _ in shards]
            expected = [shard_bounds(first["data"]["records"], s) for s, _, _ in shards]
            for part, (lo, hi) in zip(parts, expected):
                if not _complete(part, hi - lo):
                    raise ValueError(f"{part}: unfinished (rerun that shard's command first)")
            write_atomic(os.path.join(out_dir, name, file), b"".join(open(p, "rb").read() for p in parts))
    write_atomic(os.path.join(out_dir, META), _dumps({**first, "data": {**first["data"], "shard": None}}))
    return summarize(out_dir)


def shard_bounds(n: int, shard: tuple[int, int] | None) -> tuple[int, int]:
    """Shard i/n: the i-th of n contiguous blocks, as ``cloak perturb --shard`` splits its lines."""
    if shard is None:
        return 0, n
    i, k = shard
    return i * n // k, (i + 1) * n // k


def textattack_counts(attacked: np.ndarray, reached: np.ndarray, queries: np.ndarray) -> dict:
    """TextAttack's counts of the posts ``attacked`` (the others are skipped) and those whose attacked text
    ``reached`` the goal: success rate = successes / (successes + failures); accuracy under attack =
    failures / all posts; queries a post over the posts attacked."""
    successes, failures = int((attacked & reached).sum()), int((attacked & ~reached).sum())
    return {"successes": successes, "failures": failures, "skipped": int((~attacked).sum()),
            "success_rate": successes / (successes + failures) if successes + failures else None,
            "accuracy_under_attack": failures / len(attacked) if len(attacked) else None,
            "queries_per_example": float(queries[attacked].mean()) if attacked.any() else None}


def predictions_of(probs: np.ndarray) -> np.ndarray:
    """Each row's predicted label; -1 for an unanswered row (NaN)."""
    return np.where(np.isnan(probs).any(1), -1, np.nan_to_num(probs).argmax(1))


def figures_of(labels: np.ndarray, clean: np.ndarray, outcomes: list[dict], goal: Goal | None = None) -> dict:
    """Every figure of one (victim, attack): on all posts, on the posts it changed, and TextAttack's counts
    by the attack's ``goal`` (default: untargeted)."""
    goal = goal or Untargeted()
    attacked = _probs(outcomes, clean.shape[1])
    changed = np.array([o["changed"] for o in outcomes])
    before, after = detection_metrics(labels, clean), detection_metrics(labels, attacked)
    tried, reached = ~goal.skipped(labels, clean), goal.reached(attacked, labels)
    queries = np.array([o["queries"] for o in outcomes], dtype=float)
    share = [o["perturbed_share"] for o in outcomes if o["edits"]]
    figures = {"all": _finite(after), "drop": _finite(drops(before, after)),
               # the drop's paired bootstrap 95% interval: on a few hundred posts a drop of 0.003 is noise
               "drop_interval": paired_intervals(labels, predictions_of(clean), predictions_of(attacked),
                                                 clean.shape[1]),
               "changed": int(changed.sum()),
               "textattack": textattack_counts(tried, reached, queries),
               # an offensive post flipped evades the detector; a clean one flipped is a false alarm
               "textattack_by_label": {str(k): textattack_counts(tried[labels == k], reached[labels == k],
                                                                 queries[labels == k])
                                       for k in np.unique(labels).tolist()},
               "perturbed_share": float(np.mean(share)) if share else 0.0,
               "coverage": coverage(labels, changed)}
    figures["barely_applied"] = figures["coverage"]["share"] < MIN_COVERAGE
    if 0 < changed.sum() < len(labels):
        on_changed = (detection_metrics(labels[changed], clean[changed]),
                      detection_metrics(labels[changed], attacked[changed]))
        figures["on_changed"] = {"clean": _finite(on_changed[0]), "attacked": _finite(on_changed[1]),
                                 "drop": _finite(drops(*on_changed)),
                                 "drop_interval": paired_intervals(labels[changed], predictions_of(clean[changed]),
                                                                   predictions_of(attacked[changed]), clean.shape[1])}
    return figures


# An attack that changes fewer posts than this share has barely been applied (fullwidth on Chinese posts:
# 2 of 300): its "0.000" says nothing of the detector, so reports leave it out of averages and headlines.
MIN_COVERAGE = 0.05


def coverage(labels: np.ndarray, changed: np.ndarray) -> dict:
    """How many posts an attack reached: of all posts, and of the offensive ones (label other than 0)."""
    offensive = labels != 0
    return {"changed": int(changed.sum()), "posts": len(labels), "share": float(changed.mean()) if len(labels) else 0.0,
            "offensive_changed": int((changed & offensive).sum()), "offensive_posts": int(offensive.sum()),
            "offensive_share": float(changed[offensive].mean()) if offensive.any() else 0.0}


def _fill(path: str, records: Sequence[dict], batch_size: int, compute: Callable[[list[dict], int], list[dict]],
          desc: str, progress: bool | None) -> None:
    """Append an outcome line per record to ``path`` from where it stops, a batch at a time."""
    done = _complete_lines(path)
    if done >= len(records):
        return
    with open(path, "ab") as out, progress_bar(total=len(records), initial=done, desc=desc, unit="post",
                                               progress=progress) as bar:
        for start in range(done, len(records), batch_size):
            block = list(records[start:start + batch_size])
            lines = [dump_record({"id": r.get("id"), "label": int(r["label"]), **_plain(o),
                                  **({"perturbed_share": _touched(o["edits"]) / max(1, len(r["text"]))}
                                     if o.get("edits") else {})})
                     for r, o in zip(block, compute(block, start))]
            out.write(b"".join(lines))
            out.flush()
            bar.update(len(block))


def _complete_lines(path: str) -> int:
    """The finished lines of an outcome file, cutting off a line a kill left half-written."""
    if not os.path.exists(path):
        return 0
    with open(path, "rb") as f:
        data = f.read()
    keep = data.rfind(b"\n") + 1
    if keep < len(data):
        with open(path, "r+b") as f:
            f.truncate(keep)
    return data.count(b"\n", 0, keep)


def _complete(path: str, n: int) -> bool:
    return os.path.exists(path) and _complete_lines(path) >= n


def _read(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _touched(edits: list[dict]) -> int:
    """Characters of the original an attack touched: each replaced one, and one for each insertion."""
    return sum(max(1, e["end"] - e["start"]) for e in edits)


def _probs(outcomes: list[dict], width: int | None = None) -> np.ndarray:
    """The probabilities of outcome lines, (n, n_classes); an unanswered row (null) as NaN."""
    width = width or max((len(o["probs"]) for o in outcomes if o["probs"] is not None), default=2)
    return np.array([o["probs"] if o["probs"] is not None else [np.nan] * width for o in outcomes], dtype=np.float64)


def _plain(outcome: dict) -> dict:
    out = dict(outcome)
    probs = np.asarray(out["probs"], dtype=np.float64)
    out["probs"] = None if np.isnan(probs).any() else [round(float(x), 6) for x in probs]
    return out


def _finite(figures: dict) -> dict:
    """NaN (a figure the data cannot give) as null in JSON."""
    return {k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in figures.items()}


def _dumps(summary: dict) -> bytes:
    return (json.dumps(summary, indent=1, ensure_ascii=False) + "\n").encode()


def data_info(path: str) -> dict:
    return {"path": path, "sha256": file_sha256(path)}
