"""How much a detector's figure under an attack it was trained on overstates its robustness, op by op.

Run from the repository root after ``python -m bench.realism`` (it reuses its COLD records):
``.venv/bin/python -m bench.seen_in_training`` (about 15 minutes on 2 cores); writes
``bench/results/seen_in_training.json``.

A detector augmented with ``cloak perturb`` copies and then attacked by the same ops is tested in
distribution. For each op: tfidf-lr trained on COLD train plus a cloaked copy by every op but that one,
attacked by it (unseen), against tfidf-lr trained with every op, attacked by it too (seen); the
attack is the evaluator's default (the lexicon's and the mined terms, poster strength), on all 5,323
COLD test posts. The ratio of the unseen drop to the seen drop is how much the seen figure flatters the
detector; ``attacks report`` marks such attacks "seen" and leaves them out of a victim's ranking.
"""
from __future__ import annotations

import time
from pathlib import Path

from bench.common import (BIN, RESULTS, WORK, folder, machine_info, parser, print_summary, read_json, require, run,
                          write_result)
from cloak import available_ops

# fullwidth changes only Latin letters, which Chinese posts barely hold: attacking with it says nothing
OPS = [op for op in sorted(available_ops()) if op != "fullwidth"]


def augmented(train: Path, ops: list[str], folder: Path, work: Path) -> Path:
    """tfidf-lr trained on ``train`` and one cloaked copy of it by ``ops`` (trained once)."""
    if not (folder / "victim.json").exists():
        cloaked, both = work / f"{folder.name}.cloaked.jsonl", work / f"{folder.name}.train.jsonl"
        run([BIN / "cloak", "perturb", "--in", train, "--out", cloaked, "--ops", ",".join(ops), "--seed", "0", "-q"])
        both.write_bytes(train.read_bytes() + cloaked.read_bytes())
        run([BIN / "attacks", "train", "--model", "tfidf-lr", "--train", both, "--out", folder])
        cloaked.unlink()
        both.unlink()
    return folder


def figures(out: Path, victim: str, op: str) -> dict:
    f = read_json(out / "summary.json")["victims"][victim]["attacks"][f"cloak:{op}"]
    return {"drop_f1": f["drop"]["f1"], "drop_f1_interval": f["drop_interval"]["f1"],
            "drop_accuracy": f["drop"]["accuracy"],
            "drop_accuracy_interval": f["drop_interval"]["accuracy"], "coverage": f["coverage"]["share"]}


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "seen_in_training.json", work=WORK / "realism")
    ap.add_argument("--ops", default=",".join(OPS))
    args = ap.parse_args()
    started = time.perf_counter()
    train = require(args.work / "cold_train.jsonl", "python -m bench.realism")
    test = require(args.work / "cold_test.jsonl", "python -m bench.realism")
    ops = args.ops.split(",")
    work = folder(args.work / "seen")
    every = augmented(train, ops, work / "all-ops", work)
    run([BIN / "attacks", "evaluate", "--victim", every, "--data", test, "--ops", ",".join(ops), "--out",
         work / "eval-all-ops", "-q"])
    result = {"benchmark": "bench/seen_in_training.py", "machine": machine_info(("scikit-learn",)), "ops": {}}
    for op in ops:
        others = augmented(train, [o for o in ops if o != op], work / f"all-but-{op}", work)
        out = work / f"eval-all-but-{op}"
        run([BIN / "attacks", "evaluate", "--victim", others, "--data", test, "--ops", op, "--out", out, "-q"])
        seen, unseen = figures(work / "eval-all-ops", "all-ops", op), figures(out, others.name, op)
        result["ops"][op] = {"seen": seen, "unseen": unseen,
                             "unseen_over_seen_accuracy": round(unseen["drop_accuracy"] / seen["drop_accuracy"], 2)
                             if seen["drop_accuracy"] > 0 else None}
        write_result(args.out, result)
    result["seconds"] = round(time.perf_counter() - started, 1)
    write_result(args.out, result)
    rows = [(op, f"seen {r['seen']['drop_accuracy']:.3f}", f"unseen {r['unseen']['drop_accuracy']:.3f}")
            for op, r in result["ops"].items()]
    print_summary(rows, args.out, time.perf_counter() - started)


if __name__ == "__main__":
    main()
