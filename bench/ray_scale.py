"""Benchmark of ``cloak perturb --engine ray``: a local two-worker Ray cluster against ``--workers 2``.

Run from the repository root (``pip install -e '.[ray]'`` first)::

    .venv/bin/python bench/ray_scale.py                     # 1,000,000 COLD posts: about 10 minutes here
    .venv/bin/python bench/ray_scale.py --records 20000     # a smoke run

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

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# Read by Ray once, on import: keep 127.0.0.1 as it is (Ray would swap in this machine's network address).
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"

from bench.machine import machine_info  # noqa: E402
from bench.perturb import MIX, write_jsonl  # noqa: E402

GOAL = 0.8
PAPER_POSTS = 100_000_000
PAPER_MACHINES = (1, 10, 100)
PAPER_CORES = 16  # workers a machine in the estimate


def log(*parts) -> None:
    print(*parts, file=sys.stderr, flush=True)


def _status(pid: int) -> dict[str, int]:
    found = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmHWM", "VmRSS"):
                    found[key] = int(value.split()[0])
    except OSError:
        pass
    return found


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


def run(cmd: list[str], env: dict, workers_of) -> dict:
    """The command from start to exit, its CPU time, and the peak memory of it and of its workers
    (``workers_of(pid)``: their pids now), polled every 0.2 s."""
    peaks: dict[int, int] = {}
    roles: dict[int, str] = {}
    stop = threading.Event()
    with tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        child = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err, cwd=REPO)

        def poll() -> None:
            while not stop.is_set():
                for pid, role in [(child.pid, "command"), *((p, "worker") for p in workers_of(child.pid))]:
                    hwm = _status(pid).get("VmHWM", 0)
                    if hwm:
                        peaks[pid], roles[pid] = max(peaks.get(pid, 0), hwm), role
                stop.wait(0.2)
        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        stop.set()
        poller.join()
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
    if status != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({status}): {stderr[-3000:]}")
    workers = [round(kb / 1024, 1) for pid, kb in peaks.items() if roles[pid] == "worker"]
    return {"command": " ".join(Path(c).name if c.startswith("/") and "bin" in c else c for c in cmd),
            "wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "peak_rss_command_mb": round(max(kb for pid, kb in peaks.items() if roles[pid] == "command") / 1024, 1),
            "peak_rss_per_worker_mb": sorted(workers), "worker_processes_seen": len(workers)}


def sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cold", default=str(REPO.parent / "shared" / "data" / "cold"),
                    help="COLD folder with train.csv [default: ../shared/data/cold]")
    ap.add_argument("--records", type=int, default=1_000_000, help="Posts, COLD train cycled [1,000,000].")
    ap.add_argument("--workers", type=int, default=2, help="Worker processes, and the cluster's CPUs [2].")
    ap.add_argument("--ops", default=MIX, help=f"Ops [{MIX}, as bench/perturb.py's memory run].")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "ray_scale.json"))
    args = ap.parse_args()

    import ray
    from ray.cluster_utils import Cluster

    from cloak.convert import read_dataset

    started = time.perf_counter()
    train = list(read_dataset("cold", os.path.join(args.cold, "train.csv")))
    cloak = str(Path(sys.executable).with_name("cloak"))
    with tempfile.TemporaryDirectory(prefix="ray", dir="/tmp") as tmp:  # short: Ray's socket paths
        os.environ["RAY_TMPDIR"] = tmp
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
        posts = os.path.join(tmp, "posts.jsonl")
        size = write_jsonl(posts, train, args.records)
        log(f"{args.records:,} COLD train posts ({len(train):,} distinct), {size / 1e6:.0f} MB")
        base = [cloak, "perturb", "--in", posts, "--ops", args.ops, "--workers", str(args.workers), "--quiet"]

        local_out = os.path.join(tmp, "local.jsonl")
        local = run([*base, "--out", local_out], env, descendants)
        log(f"local --workers {args.workers}: {local['wall_s']} s, {args.records / local['wall_s']:,.0f} records/s")

        t = time.perf_counter()
        nodes = Cluster(initialize_head=True, head_node_args={
            "num_cpus": args.workers, "node_ip_address": "127.0.0.1", "include_dashboard": False,
            "object_store_memory": 1 << 30})
        cluster_start = time.perf_counter() - t
        ray_out = os.path.join(tmp, "ray.jsonl")
        try:
            on_ray = run([*base, "--out", ray_out, "--engine", "ray", "--address", nodes.address], env,
                         lambda _: titled(descendants(os.getpid()), "MapBatches(_Cloak)"))
        finally:
            ray.shutdown()
            nodes.shutdown()
        log(f"ray, {args.workers} workers: {on_ray['wall_s']} s, {args.records / on_ray['wall_s']:,.0f} records/s")
        identical = sha256(local_out) == sha256(ray_out)
        output_mb = round(os.path.getsize(ray_out) / 1e6, 1)

    local_rate, ray_rate = args.records / local["wall_s"], args.records / on_ray["wall_s"]
    per_worker = ray_rate / args.workers
    driver_ceiling = args.records / on_ray["cpu_s"]  # records the driver takes a CPU-second

    def minutes(workers: int, drivers: int) -> float:
        return round(PAPER_POSTS / min(per_worker * workers, driver_ceiling * drivers) / 60, 1)
    paper = {f"{n}_machines": {"workers": n * PAPER_CORES, "one_file_minutes": minutes(n * PAPER_CORES, 1),
                               "a_shard_a_machine_minutes": minutes(n * PAPER_CORES, n)} for n in PAPER_MACHINES}
    result = {
        "benchmark": "bench/ray_scale.py",
        "machine": machine_info(("ray", "pyarrow", "pypinyin", "jieba")),
        "data": {"cold_dir": os.path.abspath(args.cold), "records": args.records, "input_mb": round(size / 1e6, 1),
                 "output_mb": output_mb},
        "settings": {"ops": args.ops, "workers": args.workers, "variants": 1, "seed": 0,
                     "cluster": f"one Ray node on 127.0.0.1, {args.workers} CPUs, started in {cluster_start:.1f} s "
                                "(not counted)"},
        "local": {**local, "records_per_s": round(local_rate, 1)},
        "ray": {**on_ray, "records_per_s": round(ray_rate, 1), "records_per_s_per_worker": round(per_worker, 1),
                "driver_records_per_cpu_s": round(driver_ceiling, 1)},
        "ray_vs_local": round(ray_rate / local_rate, 3),
        "goal": GOAL,
        "meets_goal": ray_rate / local_rate >= GOAL,
        "byte_identical": identical,
        "paper_100m_posts": {**paper, "note": f"{PAPER_POSTS:,} posts at the measured rate a worker, "
                                              f"{PAPER_CORES} workers a machine, capped by the drivers: one output "
                                              "file has one driver, whose records per CPU-second cap it (startup "
                                              "included); --shard i/n run from each machine gives a driver each"},
        "elapsed_s": round(time.perf_counter() - started, 1),
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2, ensure_ascii=False)
        f.write("\n")
    print(f"{args.records:,} COLD posts, --ops {args.ops}: local --workers {args.workers} {local_rate:,.0f} records/s, "
          f"Ray ({args.workers} workers) {ray_rate:,.0f} records/s: {result['ray_vs_local']}x "
          f"(goal >= {GOAL}); byte-identical: {identical}")
    print(f"peak RSS a worker: local {local['peak_rss_per_worker_mb']} MB, Ray {on_ray['peak_rss_per_worker_mb']} MB; "
          f"Ray driver {on_ray['peak_rss_command_mb']} MB, {on_ray['cpu_s']} CPU-s ({driver_ceiling:,.0f} records "
          "a CPU-second)")
    for name, row in paper.items():
        print(f"100M posts, {name} x {PAPER_CORES} workers: {row['one_file_minutes']} min into one file, "
              f"{row['a_shard_a_machine_minutes']} min with a shard (and a driver) a machine")
    print(f"wrote {args.out} in {result['elapsed_s']} s")


if __name__ == "__main__":
    main()
