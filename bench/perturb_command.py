"""The measurements of ``bench.perturb`` that run ``cloak perturb`` as a child process: not a benchmark itself.

Peak memory over a million records, ``--workers 2`` against ``--workers 1``, and the whole command
against the engine in this process.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import BIN, MIX, REPO, log, ratio, write_cycled
from cloak.common.io import count_lines, file_sha256
# The whole-command figure: this perturber, in the bench's process and as ``cloak perturb`` flags.
ENGINE = {"ops": "homophone", "targets": "all", "rate": 0.3}
COMMAND = [arg for key, value in ENGINE.items() for arg in (f"--{key}", str(value))]
MEMORY_TARGET_MB = 500

# A fresh process that runs the command given as argv, polls the peak resident memory of the whole
# process tree from /proc, and after it exits reports getrusage(RUSAGE_CHILDREN).ru_maxrss: the largest
# peak of any single descendant it (transitively) waited for, and nothing else, since it has no other
# children.
_WRAPPER = r"""
import json, os, resource, subprocess, sys, time

def status(pid):
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmHWM", "VmRSS", "PPid"):
                    out[key] = int(value.split()[0])
    except OSError:
        pass
    return out

def tree(root):
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    parents[int(name)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    pids, frontier = {root}, [root]
    while frontier:
        p = frontier.pop()
        kids = [c for c, pp in parents.items() if pp == p and c not in pids]
        pids.update(kids)
        frontier.extend(kids)
    return pids

start = time.perf_counter()
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
hwm_root = 0
peak_tree_rss = 0
hwm_any = 0
polls = 0
while child.poll() is None:
    polls += 1
    rss = 0
    for pid in tree(child.pid):
        s = status(pid)
        rss += s.get("VmRSS", 0)
        hwm_any = max(hwm_any, s.get("VmHWM", 0))
        if pid == child.pid:
            hwm_root = max(hwm_root, s.get("VmHWM", 0))
    peak_tree_rss = max(peak_tree_rss, rss)
    time.sleep(0.1)
stderr = child.stderr.read().decode("utf-8", "replace")
child.wait()
wall = time.perf_counter() - start
print(json.dumps({"returncode": child.returncode, "wall_s": wall, "stderr": stderr[-2000:],
                  "ru_maxrss_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
                  "polled_vmhwm_root_kb": hwm_root, "polled_vmhwm_any_kb": hwm_any,
                  "polled_peak_tree_rss_kb": peak_tree_rss, "polls": polls}))
"""


def run_cli(in_path: str, out_path: str, workers: int | str, env: dict, options: list[str] | None = None) -> dict:
    """``cloak perturb`` as a child process under ``_WRAPPER``; ``workers`` "auto" passes no flag (the default)."""
    cloak = str(BIN / "cloak")
    cmd = [cloak, "perturb", "--in", in_path, "--out", out_path, *(options or ["--ops", MIX]), "--quiet"]
    if not os.path.exists(cloak):
        cmd = [sys.executable, "-m", "cloak.cli", *cmd[1:]]
    if workers != "auto":
        cmd += ["--workers", str(workers)]
    got = subprocess.run([sys.executable, "-c", _WRAPPER, *cmd], capture_output=True, text=True,
                         env=env, cwd=REPO)
    if got.returncode != 0:
        raise RuntimeError(f"wrapper failed: {got.stderr[-2000:]}")
    info = json.loads(got.stdout.strip().splitlines()[-1])
    if info["returncode"] != 0:
        raise RuntimeError(f"cloak perturb failed ({info['returncode']}): {info['stderr']}")
    info["command"] = " ".join(Path(c).name if c.startswith("/") and c in (cloak, sys.executable)
                               else c for c in cmd)
    return info


def memory(train: list[dict], n: int, env: dict, tmp: str) -> dict:
    """``cloak perturb`` (the default mix, one process: its peak is the figure) over ``n`` COLD train posts."""
    big = os.path.join(tmp, "big.jsonl")
    t = time.perf_counter()
    size = write_cycled(big, train, n)
    log(f"memory: wrote {n:,} records ({size / 1e6:.0f} MB) in {time.perf_counter() - t:.1f} s; "
        "running cloak perturb ...")
    out = os.path.join(tmp, "big.out.jsonl")
    info = run_cli(big, out, 1, env)
    lines = count_lines(out)
    out_size = os.path.getsize(out)
    os.remove(out)
    os.remove(big)
    peak_kb = max(info["ru_maxrss_kb"], info["polled_vmhwm_root_kb"])
    figures = {
        "records": n, "input_mb": round(size / 1e6, 1), "output_mb": round(out_size / 1e6, 1),
        "output_records": lines, "command": info["command"],
        "peak_rss_mb": round(peak_kb / 1024, 1),
        "ru_maxrss_mb": round(info["ru_maxrss_kb"] / 1024, 1),
        "polled_vmhwm_mb": round(info["polled_vmhwm_root_kb"] / 1024, 1),
        "wall_s": round(info["wall_s"], 2),
        "records_per_s": round(n / info["wall_s"], 1),
        "target_mb": MEMORY_TARGET_MB,
        "meets_target": peak_kb / 1024 < MEMORY_TARGET_MB,
    }
    log(f"memory: peak {figures['peak_rss_mb']} MB, {figures['wall_s']} s, {figures['records_per_s']:,.0f} records/s")
    return figures


def workers(train: list[dict], n: int, rounds: int, env: dict, tmp: str) -> dict:
    """``--workers 2`` against ``--workers 1`` on ``n`` COLD train posts: speed, memory and byte-identity."""
    small = os.path.join(tmp, "small.jsonl")
    write_cycled(small, train, n)
    runs: dict[int, list[dict]] = {1: [], 2: []}
    digests: dict[int, set] = {1: set(), 2: set()}
    for _ in range(rounds):
        for w in (1, 2):
            o = os.path.join(tmp, f"small.w{w}.jsonl")
            info = run_cli(small, o, w, env)
            runs[w].append(info)
            digests[w].add(file_sha256(o))
            os.remove(o)
            log(f"workers {w}: {n / info['wall_s']:,.0f} records/s "
                f"(peak tree RSS {info['polled_peak_tree_rss_kb'] / 1024:.0f} MB)")

    def summary(w):
        walls = [i["wall_s"] for i in runs[w]]
        return {"wall_s_best": round(min(walls), 2), "wall_s_all": [round(x, 2) for x in walls],
                "records_per_s_best": round(n / min(walls), 1),
                "records_per_s_median": round(n / statistics.median(walls), 1),
                "peak_rss_largest_process_mb": round(max(i["ru_maxrss_kb"] for i in runs[w]) / 1024, 1),
                "peak_rss_process_tree_mb": round(max(i["polled_peak_tree_rss_kb"] for i in runs[w]) / 1024, 1),
                "sha256": sorted(digests[w])}
    w1, w2 = summary(1), summary(2)
    return {
        "records": n, "rounds": rounds, "workers_1": w1, "workers_2": w2,
        "speedup_best": ratio(w2["records_per_s_best"], w1["records_per_s_best"]),
        "speedup_median": ratio(w2["records_per_s_median"], w1["records_per_s_median"]),
        "byte_identical": len(digests[1]) == 1 and digests[1] == digests[2],
        "note": "wall time of the whole command, start-up and table loading included",
    }


def bench_cli(train: list[dict], n_memory: int, n_workers: int, worker_rounds: int, env: dict) -> tuple[dict, dict]:
    with tempfile.TemporaryDirectory(prefix="mmcloak-bench-") as tmp:
        return memory(train, n_memory, env, tmp), workers(train, n_workers, worker_rounds, env, tmp)


def engine_pass(perturber, texts: list[str]) -> float:
    """Seconds of the perturber over ``texts``, keyed as the command keys a record: by its line number."""
    t = time.perf_counter()
    for i, text in enumerate(texts):
        perturber(text, key=i + 1)
    return time.perf_counter() - t


def bench_command_vs_engine(train: list[dict], n: int, rounds: int, env: dict) -> dict:
    """``cloak perturb`` + COMMAND on ``n`` COLD train posts (cycled) as a child process, wall time from
    start to exit, beside the same perturber in this process on the same posts: its first pass (memos
    empty, as the command has them) and a warm pass, timed back to back in each round."""
    from cloak import Perturber

    with tempfile.TemporaryDirectory(prefix="mmcloak-bench-") as tmp:
        path = os.path.join(tmp, "posts.jsonl")
        write_cycled(path, train, n)
        with open(path, encoding="utf-8") as f:
            texts = [json.loads(line)["text"] for line in f]
        command, one_worker, cold, warm, digests = [], [], [], [], set()
        for r in range(rounds):
            out = os.path.join(tmp, "out.jsonl")
            info = run_cli(path, out, "auto", env, COMMAND)  # as a user runs it: one worker per CPU
            digests.add(file_sha256(out))
            command.append(info["wall_s"])
            one = run_cli(path, out, 1, env, COMMAND)
            digests.add(file_sha256(out))
            one_worker.append(one["wall_s"])
            p = Perturber(**ENGINE).prepare()
            cold.append(engine_pass(p, texts))
            warm.append(engine_pass(p, texts))
            log(f"command vs engine, round {r + 1}/{rounds}: command {n / command[-1]:,.0f} records/s "
                f"({n / one_worker[-1]:,.0f} with --workers 1), "
                f"engine first pass {n / cold[-1]:,.0f}/s, warm {n / warm[-1]:,.0f}/s")

    def rates(walls: list[float]) -> dict:
        return {"records_per_s_best": round(n / min(walls), 1),
                "records_per_s_median": round(n / statistics.median(walls), 1),
                "seconds_all": [round(w, 2) for w in walls]}
    return {"records": n, "rounds": rounds, "command": info["command"], "output_sha256": sorted(digests),
            "cpus": len(os.sched_getaffinity(0)), "whole_command": rates(command),
            "whole_command_workers_1": rates(one_worker), "engine_first_pass": rates(cold),
            "engine_warm": rates(warm),
            "command_vs_warm_engine_median": round(statistics.median(w / c for w, c in zip(warm, command)), 3),
            "command_workers_1_vs_warm_engine_median": round(
                statistics.median(w / c for w, c in zip(warm, one_worker)), 3),
            "note": "whole_command: wall time of the child process from start to exit (imports, table "
                    "loading, reading, JSON, writing included); engine: Perturber.__call__ alone, no "
                    "garbage-collector freeze, tables already loaded"}
