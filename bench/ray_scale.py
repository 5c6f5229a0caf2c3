"""Benchmark of ``cloak perturb --engine ray``: a local two-worker Ray cluster against ``--workers 2``.

Run from the repository root (``pip install -e '.[ray]'`` first)::

    .venv/bin/python -m bench.ray_scale                     # 1,000,000 COLD posts: about 10 minutes here
    .venv/bin/python -m bench.ray_scale --records 20000     # a smoke run

On one file of COLD train posts (cycled to ``--records``), back to back, as a user runs them:

1. ``cloak perturb --workers 2`` (this machine's processes);
2. ``cloak perturb --engine ray --address ADDR --workers 2`` against a Ray cluster started here on
   127.0.0.1 with two CPUs (its start is timed apart: a user's cluster is already running).

Each is the whole command from start to exit. Figures: records/s of each and their ratio (the goal:
Ray at least 0.8 of the local run, since on one machine Ray's overhead is the only difference), the
peak resident memory of each worker process (VmHWM polled from /proc) and of the command's own process,
the CPU time of Ray's driver (the one process that writes the file: its records per CPU-second bound
how many workers one output file can take), whether the two outputs are byte-identical, and from the
measured rate a worker, what 100M posts would take on N machines.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import psutil

# Read by Ray once, on import: keep 127.0.0.1 as it is (Ray would swap in this machine's network address).
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"

from bench.common import (BIN, MIX, REPO, RESULTS, cold_records, machine_info, measure, parser, print_summary,
                          write_cycled, write_result)
from cloak.common.io import file_sha256

GOAL = 0.8
PAPER_POSTS = 100_000_000
PAPER_MACHINES = (1, 10, 100)
PAPER_CORES = 16  # workers a machine in the estimate


def log(*parts) -> None:
    print(*parts, file=sys.stderr, flush=True)


def peak_kb(pid: int) -> int:
    """A process's peak resident memory so far (VmHWM), 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next((int(line.split()[1]) for line in f if line.startswith("VmHWM:")), 0)
    except OSError:
        return 0


def descendants(root: int) -> set[int]:
    try:
        return {p.pid for p in psutil.Process(root).children(recursive=True)}
    except psutil.NoSuchProcess:
        return set()


def titled(pids: set[int], title: str) -> set[int]:
    """Those of ``pids`` whose title (Ray sets it to ``ray::Class...``) contains ``title``."""
    found = set()
    for pid in pids:
        try:
            if title in " ".join(psutil.Process(pid).cmdline()):
                found.add(pid)
        except psutil.Error:
            pass
    return found


def run(cmd: list[str], workers_of) -> dict:
    """The command from start to exit (``bench.common.measure``), its CPU time, and the peak memory of it and
    of its workers (``workers_of(pid)``: their pids now), polled while it runs."""
    peaks: dict[int, int] = {}
    roles: dict[int, str] = {}

    def poll(child: int) -> None:
        for pid, role in [(child, "command"), *((p, "worker") for p in workers_of(child))]:
            hwm = peak_kb(pid)
            if hwm:
                peaks[pid], roles[pid] = max(peaks.get(pid, 0), hwm), role

    result = measure(cmd, cwd=REPO, watch=poll)
    if result["exit"] != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({result['exit']}): {result['stderr']}")
    workers = [round(kb / 1024, 1) for pid, kb in peaks.items() if roles[pid] == "worker"]
    return {"command": " ".join(Path(c).name if c.startswith("/") and "bin" in c else c for c in cmd),
            "wall_s": result["seconds"], "cpu_s": result["cpu_s"],
            "peak_rss_command_mb": round(max(kb for pid, kb in peaks.items() if roles[pid] == "command") / 1024, 1),
            "peak_rss_per_worker_mb": sorted(workers), "worker_processes_seen": len(workers)}


def local_and_ray(posts: str, tmp: str, ops: str, workers: int) -> dict:
    """The local command, then the same on a Ray cluster started here (its start timed apart)."""
    import ray
    from ray.cluster_utils import Cluster

    base = [str(BIN / "cloak"), "perturb", "--in", posts, "--ops", ops, "--workers", str(workers), "--quiet"]
    local = run([*base, "--out", os.path.join(tmp, "local.jsonl")], descendants)
    log(f"local --workers {workers}: {local['wall_s']} s")
    started = time.perf_counter()
    nodes = Cluster(initialize_head=True, head_node_args={
        "num_cpus": workers, "node_ip_address": "127.0.0.1", "include_dashboard": False,
        "object_store_memory": 1 << 30})
    cluster_start = time.perf_counter() - started
    try:
        on_ray = run([*base, "--out", os.path.join(tmp, "ray.jsonl"), "--engine", "ray", "--address", nodes.address],
                     lambda _: titled(descendants(os.getpid()), "MapBatches(_Cloak)"))
    finally:
        ray.shutdown()
        nodes.shutdown()
    log(f"ray, {workers} workers: {on_ray['wall_s']} s")
    outputs = [os.path.join(tmp, name) for name in ("local.jsonl", "ray.jsonl")]
    return {"local": local, "ray": on_ray, "cluster_start_s": cluster_start,
            "byte_identical": file_sha256(outputs[0]) == file_sha256(outputs[1]),
            "output_mb": round(os.path.getsize(outputs[1]) / 1e6, 1)}


def on_paper(per_worker: float, driver_ceiling: float) -> dict:
    """Minutes for 100M posts on N machines of PAPER_CORES workers: into one file (one driver), or a
    shard a machine (a driver each), at the measured rates."""
    def minutes(workers: int, drivers: int) -> float:
        return round(PAPER_POSTS / min(per_worker * workers, driver_ceiling * drivers) / 60, 1)
    return {f"{n}_machines": {"workers": n * PAPER_CORES, "one_file_minutes": minutes(n * PAPER_CORES, 1),
                              "a_shard_a_machine_minutes": minutes(n * PAPER_CORES, n)} for n in PAPER_MACHINES}


def figures(args, runs: dict, size: int, elapsed: float) -> dict:
    local, on_ray = runs["local"], runs["ray"]
    local_rate, ray_rate = args.records / local["wall_s"], args.records / on_ray["wall_s"]
    per_worker, driver_ceiling = ray_rate / args.workers, args.records / on_ray["cpu_s"]
    return {
        "benchmark": "bench/ray_scale.py",
        "machine": machine_info(("ray", "pyarrow", "pypinyin", "jieba")),
        "data": {"cold_dir": os.path.abspath(args.cold), "records": args.records, "input_mb": round(size / 1e6, 1),
                 "output_mb": runs["output_mb"]},
        "settings": {"ops": args.ops, "workers": args.workers, "variants": 1, "seed": 0,
                     "cluster": f"one Ray node on 127.0.0.1, {args.workers} CPUs, started in "
                                f"{runs['cluster_start_s']:.1f} s (not counted)"},
        "local": {**local, "records_per_s": round(local_rate, 1)},
        "ray": {**on_ray, "records_per_s": round(ray_rate, 1), "records_per_s_per_worker": round(per_worker, 1),
                "driver_records_per_cpu_s": round(driver_ceiling, 1)},
        "ray_vs_local": round(ray_rate / local_rate, 3),
        "goal": GOAL,
        "meets_goal": ray_rate / local_rate >= GOAL,
        "byte_identical": runs["byte_identical"],
        "paper_100m_posts": {**on_paper(per_worker, driver_ceiling),
                             "note": f"{PAPER_POSTS:,} posts at the measured rate a worker, {PAPER_CORES} workers a "
                                     "machine, capped by the drivers: one output file has one driver, whose records "
                                     "per CPU-second cap it (startup included); --shard i/n run from each machine "
                                     "gives a driver each"},
        "elapsed_s": round(elapsed, 1),
    }


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "ray_scale.json", cold=True)
    ap.add_argument("--records", type=int, default=1_000_000, help="Posts, COLD train cycled [1,000,000].")
    ap.add_argument("--workers", type=int, default=2, help="Worker processes, and the cluster's CPUs [2].")
    ap.add_argument("--ops", default=MIX, help=f"Ops [{MIX}, as bench.perturb's memory run].")
    args = ap.parse_args()
    started = time.perf_counter()
    train = cold_records(args.cold, "train")
    with tempfile.TemporaryDirectory(prefix="ray", dir="/tmp") as tmp:  # short: Ray's socket paths
        os.environ["RAY_TMPDIR"] = tmp
        posts = os.path.join(tmp, "posts.jsonl")
        size = write_cycled(posts, train, args.records)
        log(f"{args.records:,} COLD train posts ({len(train):,} distinct), {size / 1e6:.0f} MB")
        runs = local_and_ray(posts, tmp, args.ops, args.workers)
    result = figures(args, runs, size, time.perf_counter() - started)
    write_result(args.out, result)
    local, on_ray = result["local"], result["ray"]
    rows = [("local records/s", f"{local['records_per_s']:,.0f}", f"--workers {args.workers}"),
            ("ray records/s", f"{on_ray['records_per_s']:,.0f}", f"{args.workers} actors"),
            ("ray / local", str(result["ray_vs_local"]), f"goal >= {GOAL}"),
            ("byte-identical", str(result["byte_identical"]), ""),
            ("peak MB a worker", f"{local['peak_rss_per_worker_mb']} / {on_ray['peak_rss_per_worker_mb']}",
             "local / Ray"),
            ("driver CPU-s", str(on_ray["cpu_s"]), f"{on_ray['driver_records_per_cpu_s']:,.0f} records a CPU-s")]
    rows += [(f"100M posts, {name}", f"{row['one_file_minutes']} min",
              f"{row['a_shard_a_machine_minutes']} min a shard a machine")
             for name, row in result["paper_100m_posts"].items() if name != "note"]
    print_summary(rows, args.out, time.perf_counter() - started, value_width=24)


if __name__ == "__main__":
    main()
