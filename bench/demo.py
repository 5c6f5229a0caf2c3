"""`make demo` as a user runs it: on a fresh virtual environment (pip install included) and again warm.

Run from the repository root: ``.venv/bin/python -m bench.demo``; writes ``bench/results/demo.json`` with
each run's wall time and peak memory, and the report's headline figures. The target is under two
minutes on 2 cores for the demo itself (the warm run).
"""
from __future__ import annotations

import shutil
import time

from bench.common import REPO, RESULTS, WORK, machine_info, measure, parser, print_summary, read_json, write_result


def main() -> None:
    args = parser(__doc__, out=RESULTS / "demo.json", work=WORK / "demo").parse_args()
    started = time.perf_counter()
    venv, demo = args.work / "venv", args.work / "demo_out"
    shutil.rmtree(venv, ignore_errors=True)
    runs = {}
    for name in ("fresh", "warm"):
        command = ["make", "demo", f"VENV={venv}", f"DEMO={demo}"]
        print(" ".join(str(c) for c in command), f"({name})", flush=True)
        runs[name] = measure(command, cwd=str(REPO))
        if runs[name]["exit"] != 0:
            raise SystemExit(f"make demo failed: {runs[name]['stderr']}")
    report = read_json(demo / "report.json")
    result = {"benchmark": "bench/demo.py", "machine": machine_info(("scikit-learn",)),
              "command": "make demo", "runs": runs, "headlines": report["headlines"],
              "matrix": [{"row": r["row"], "clean_f1": r["clean_f1"],
                          "change": {a: -c["drop"] for a, c in r["cells"].items() if "drop" in c}}
                         for r in report["matrix"]],
              "seconds": round(time.perf_counter() - started, 1)}
    write_result(args.out, result)
    print_summary([(f"make demo ({k})", f"{v['seconds']:.1f} s", f"peak {v['peak_mb']:.0f} MB")
                   for k, v in runs.items()], args.out, time.perf_counter() - started)


if __name__ == "__main__":
    main()
