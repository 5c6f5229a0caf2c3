"""How much of COLD test the cloak attacks reach: the posts that carry a target term, and the posts each op changes.

Run from the repository root after ``python -m bench.robustness`` (whose report it reads):
``.venv/bin/python -m bench.coverage`` (about 5 minutes on 2 cores, most of it mining COLD train); writes
``bench/results/coverage.json``.

A cloak attack cloaks target terms; a post without one is never cloaked and dilutes every drop. Issue 35's goal:
at least 90% of COLD test's offensive posts carry a target. A post carries one when ``cloak perturb`` would find a
target in it (``Perturber.target_spans``: terms found leftmost-longest, outside URLs, @mentions, #topics# and
[emoticons]). Measured for the offensive and for the other posts (targets in every post would reach 100% of the
offensive ones and say nothing), with:

- the default lexicon alone;
- the lexicon and the terms mined from COLD train (``--mine-from train.jsonl``: what a user with a training set
  does; the test posts' labels are not used);
- the lexicon and the terms mined from the test posts themselves (``attacks evaluate``'s default without
  ``--mine-from``: the labels of the posts attacked choose the terms);
- the terms mined from COLD train alone, and the lexicon with them at other thresholds (``--z``, ``--min-count``):
  how coverage of the offensive posts trades against coverage of the others.

Then the robustness table's cloak settings (``bench.robustness``: the lexicon's terms, each op at its own share,
2 variants, seed 0, measured before the evaluator's defaults changed): the posts each op changed, of all and of
the offensive ones, cloaked again here by the attack's own perturber (no victim needed: whether a post changes
does not depend on who reads it), checked against the counts in ``bench/results/robustness_report/report.json``;
and each victim's mean macro-F1 drop in that report over every op, and over the ops that changed at least 5% of
the posts (``attacks evaluate``'s bar for an attack to count).
"""
from __future__ import annotations

import time

import numpy as np

from attacks.cloaking import CloakAttack
from attacks.evaluate import MIN_COVERAGE, coverage
from bench.common import RESULTS, cold_records, machine_info, parser, print_summary, read_json, require, write_result
from cloak import available_ops
from cloak.mining import build_targets, describe_targets
from cloak.rng import Rng
from cloak.targets import Lexicon, default_lexicon

GOAL = 0.9  # issue 35: the share of COLD test's offensive posts that should carry a target
DEFAULTS = (2.0, 5)  # cloak mine-terms' --z and --min-count
GRID = ((1.0, 5), (2.0, 2), (2.0, 10), (3.0, 5), (4.0, 5), (4.0, 10))
REPORT = RESULTS / "robustness_report" / "report.json"


def reach(targets: Lexicon, records: list[dict]) -> dict:
    """The posts holding a target of ``targets``, of the offensive and of the other ``records``."""
    from cloak import Perturber

    perturber = Perturber(targets=targets)
    hit = np.array([bool(perturber.target_spans(r["text"], Rng(0, 0, 0))) for r in records])
    offensive = np.array([r["label"] != 0 for r in records])
    return {"terms": len(targets), "offensive": int(hit[offensive].sum()), "offensive_posts": int(offensive.sum()),
            "offensive_share": round(float(hit[offensive].mean()), 4), "other": int(hit[~offensive].sum()),
            "other_posts": int((~offensive).sum()), "other_share": round(float(hit[~offensive].mean()), 4)}


def mined_reach(spec: str, labelled: list[dict], test: list[dict], z: float = DEFAULTS[0],
                min_count: int = DEFAULTS[1]) -> dict:
    """The reach of ``--targets spec`` mined from ``labelled`` (as ``cloak perturb`` builds them), how many terms
    mining added to the lexicon, and the seconds it took."""
    started = time.perf_counter()
    targets = build_targets(spec, labelled=labelled, z=z, min_count=min_count)
    seconds = round(time.perf_counter() - started, 1)
    return {**reach(targets, test), "mined": describe_targets(targets)["mined"], "z": z, "min_count": min_count,
            "seconds": seconds}


def target_reach(train: list[dict], test: list[dict]) -> dict[str, dict]:
    """Every setting's reach of COLD test, by name."""
    found = {"lexicon": reach(default_lexicon(), test),
             "lexicon+mined from COLD train": mined_reach("lexicon+mined", train, test),
             "lexicon+mined from COLD test": mined_reach("lexicon+mined", test, test),
             "mined from COLD train": mined_reach("mined", train, test)}
    for z, min_count in GRID:
        found[f"lexicon+mined from COLD train, z {z:g}, min count {min_count}"] = mined_reach(
            "lexicon+mined", train, test, z, min_count)
    return found


def robustness_coverage(test: list[dict], stored: dict) -> dict[str, dict]:
    """Per op, the posts the robustness table's cloak attack changes (any of its 2 variants, each post seeded by
    its position as ``attacks evaluate`` seeds it), and the count its report stored."""
    labels = np.array([r["label"] for r in test])
    found = {}
    for op in sorted(available_ops()):
        perturber = CloakAttack(ops=op, strength="op", variants=2, seed=0).perturber
        changed = np.array([any(perturber(r["text"], key=i, variant=k, protected=[tuple(s) for s in
                                                                                  r.get("protected") or ()]).edits
                                for k in range(2)) for i, r in enumerate(test)])
        found[op] = {**coverage(labels, changed), "report_changed": stored.get(f"cloak:{op}")}
    return found


def robustness_means(matrix: list[dict], ops: dict[str, dict]) -> dict[str, dict]:
    """Each cloak row's mean macro-F1 drop in the robustness report: over every op, and over the ops applied to
    at least ``MIN_COVERAGE`` of the posts."""
    applied = {f"cloak:{op}" for op, c in ops.items() if c["share"] >= MIN_COVERAGE}
    means = {}
    for row in matrix:
        drops = {a: c["drop"] for a, c in row["cells"].items() if a.startswith("cloak:")}
        if row["results"] == "cloak" and drops:
            means[row["victim"]] = {"every_op": round(float(np.mean(list(drops.values()))), 4),
                                    "applied_ops": round(float(np.mean([d for a, d in drops.items() if a in applied])),
                                                         4), "ops": len(drops),
                                    "applied": sum(a in applied for a in drops)}
    return means


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "coverage.json", cold=True)
    args = ap.parse_args()
    started = time.perf_counter()
    report = read_json(require(REPORT, "python -m bench.robustness"))
    train, test = cold_records(args.cold, "train"), cold_records(args.cold, "test")
    found = target_reach(train, test)
    stored = next({a: c["changed"] for a, c in row["cells"].items()} for row in report["matrix"]
                  if row["results"] == "cloak")
    ops = robustness_coverage(test, stored)
    write_result(args.out, {"benchmark": "bench/coverage.py", "machine": machine_info(),
                            "data": {"train": len(train), "test": len(test)}, "goal_offensive_share": GOAL,
                            "defaults": {"z": DEFAULTS[0], "min_count": DEFAULTS[1]}, "targets": found,
                            "robustness_settings": "--targets lexicon --strength op --variants 2 --seed 0",
                            "robustness_ops": ops, "robustness_means": robustness_means(report["matrix"], ops),
                            "seconds": round(time.perf_counter() - started, 1)})
    rows = [(name, f"{s['offensive_share']:.1%} offensive", f"{s['other_share']:.1%} other, {s['terms']} terms")
            for name, s in found.items()]
    rows += [(f"robustness: {op}", f"{c['offensive_share']:.1%} offensive", f"{c['changed']} changed "
              f"(report: {c['report_changed']})") for op, c in ops.items()]
    print_summary(rows, args.out, time.perf_counter() - started)


if __name__ == "__main__":
    main()
