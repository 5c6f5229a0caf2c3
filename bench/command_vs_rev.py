"""``cloak perturb`` as a user runs it, at an earlier commit and at this checkout, back to back on the same COLD
posts: the same bytes, and the ratio of their speeds.

Run from the repository root: ``.venv/bin/python -m bench.command_vs_rev --rev 7156814`` (the commit before
Ray came: its quality bar is a local path unchanged and not slower); writes ``bench/results/command_vs_rev.json``.
The earlier code runs from a ``git worktree`` of that commit through this virtual environment (PYTHONPATH puts
it first), each side with a table cache of its own, warmed by one run that is not timed. The machine is shared,
so the rounds alternate between the two and the ratio is of their medians (the best beside it).
"""
from __future__ import annotations

import hashlib
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import MIX, REPO, RESULTS, cold_records, log, machine_info, measure, parser, print_summary, \
    ratio, write_cycled, write_result
from bench.perturb_command import COMMAND

SETTINGS = {"homophone on all words": COMMAND, "the six-op mix": ["--ops", MIX]}


def perturb(code: Path, in_path: Path, out_path: Path, options: list[str], cache: Path) -> dict:
    """One whole ``cloak perturb`` of ``code``'s checkout: seconds, peak MB, the output's SHA-256."""
    command = [sys.executable, "-m", "cloak.cli", "perturb", "--in", in_path, "--out", out_path, *options,
               "--seed", "0", "--workers", "2", "--quiet"]
    result = measure(command, env={"PYTHONPATH": str(code), "MMCLOAK_CACHE": str(cache)}, cwd=str(code))
    if result["exit"] != 0:
        raise SystemExit(f"cloak perturb at {code} failed: {result['stderr']}")
    return {**result, "sha256": hashlib.sha256(out_path.read_bytes()).hexdigest()}


def compare(sides: dict[str, Path], in_path: Path, options: list[str], rounds: int, work: Path) -> dict:
    """Both sides, warmed once, then ``rounds`` alternating timed runs each."""
    for name, code in sides.items():
        perturb(code, in_path, work / f"{name}.jsonl", options, work / f"cache-{name}")
    seconds: dict[str, list[float]] = {name: [] for name in sides}
    digests: dict[str, set] = {name: set() for name in sides}
    for i in range(rounds):
        for name, code in (sides.items() if i % 2 == 0 else reversed(sides.items())):
            result = perturb(code, in_path, work / f"{name}.jsonl", options, work / f"cache-{name}")
            seconds[name].append(result["seconds"])
            digests[name].add(result["sha256"])
    median = {name: statistics.median(s) for name, s in seconds.items()}
    return {"options": " ".join(options), "seconds_all": seconds, "seconds_median": median,
            "now_vs_then_speed_median": ratio(median["then"], median["now"]),
            "now_vs_then_speed_best": ratio(min(seconds["then"]), min(seconds["now"])),
            "sha256": {name: sorted(d) for name, d in digests.items()},
            "byte_identical": len(digests["then"] | digests["now"]) == 1}


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "command_vs_rev.json", cold=True)
    ap.add_argument("--rev", required=True, help="the earlier commit to compare with")
    ap.add_argument("--records", type=int, default=50_000, help="COLD train posts, cycled [50,000]")
    ap.add_argument("--rounds", type=int, default=3, help="timed runs a side and setting [3]")
    args = ap.parse_args()
    started = time.perf_counter()
    rev = subprocess.run(["git", "rev-parse", args.rev], cwd=REPO, capture_output=True, text=True,
                         check=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="mmcloak-rev-") as tmp:
        work = Path(tmp)
        subprocess.run(["git", "worktree", "add", "--detach", "-q", work / "then", rev], cwd=REPO, check=True)
        try:
            write_cycled(str(work / "posts.jsonl"), cold_records(args.cold, "train"), args.records)
            results = {}
            for name, options in SETTINGS.items():
                log(f"{name}: {args.records:,} posts, {args.rounds} rounds a side")
                results[name] = compare({"then": work / "then", "now": REPO}, work / "posts.jsonl", options,
                                        args.rounds, work)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", work / "then"], cwd=REPO, check=True)
    write_result(args.out, {"benchmark": "bench/command_vs_rev.py", "machine": machine_info(("pypinyin", "jieba")),
                            "then": rev, "records": args.records, "rounds": args.rounds, "settings": results,
                            "elapsed_s": round(time.perf_counter() - started, 1)})
    rows = [(name, f"{r['now_vs_then_speed_median']:.2f}x", f"now / then speed (median); byte-identical: "
                                                             f"{r['byte_identical']}") for name, r in results.items()]
    print_summary(rows, args.out, time.perf_counter() - started)


if __name__ == "__main__":
    main()
