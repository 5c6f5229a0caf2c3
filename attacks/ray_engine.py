"""``attacks evaluate`` on a Ray cluster: the shards of one evaluation run by Ray actors, then merged.

The records are cut into ``n`` contiguous shards, each evaluated by ``attacks.evaluate.evaluate(...,
shard=(i, n))`` into ``OUT/ray-shards/i-of-n/``; ``attacks.evaluate.merge`` then writes ``OUT`` and the
``summary.json`` one local run writes. Each actor loads the victims once (when a shard first needs
them) and takes shard after shard. An actor that dies (a killed process, a lost node) is restarted and
its shard run again from what the shard's folder already holds, as a resumed local run would; the same
command run again after an interruption resumes from the shard folders, with their number kept.

Victims and ``OUT`` must be at the same paths on every node (a shared file system). Ray is an optional
extra (``pip install 'mmcloak[ray]'``); nothing else imports this module.
"""
from __future__ import annotations

import os
import re
from collections.abc import Sequence

from cloak.common.progress import progress_bar
from cloak.ray import cluster_cpus, connect, ray  # cloak.ray says how to install Ray where it is missing
from cloak.unveil import Unveiler

from .evaluate import Attack, evaluate, merge
from .victims.base import Victim, VictimFolder, inspect_victim, read_meta, victim_kind
from .victims.defended import DefendedFolder, defended_folders

SHARDS_DIR = "ray-shards"
SHARDS_PER_WORKER = 4  # more shards than actors: a slow shard holds one actor up, not the run
RETRIES = 3  # restarts of a dead actor, and tries of the shard it held


class ShardEvaluator:
    """A Ray actor's work: the victims, each loaded once (when a shard first needs it), and the shards
    given to it."""

    def __init__(self, victim_dirs: dict[str, str], device: str | None = None,
                 defence: Unveiler | str | None = None) -> None:
        folders = {name: inspect_victim(d) for name, d in victim_dirs.items()}
        folders.update(defended_folders(folders, defence) if defence else {})
        self.folders = {name: LoadedOnce(folder, device) for name, folder in folders.items()}

    def evaluate(self, records: Sequence[dict], attacks: Sequence[Attack], out_dir: str, data: dict,
                 shard: tuple[int, int], batch_size: int, label_names: dict[int, str] | None) -> tuple[int, int]:
        evaluate(self.folders, records, attacks, out_dir, data=data, shard=shard, batch_size=batch_size,
                 label_names=label_names, progress=False)
        return shard


class LoadedOnce:
    """A checked victim folder (``inspect_victim``) whose ``loaded()`` loads it at most once in this
    actor, its torch model moved to ``device``: the facts, and so the run's records, stay those of a
    local run."""

    def __init__(self, folder: VictimFolder | DefendedFolder, device: str | None) -> None:
        self.folder, self.device, self.victim = folder, device, None
        self.facts, self.num_labels = folder.facts, folder.num_labels

    def loaded(self) -> Victim:
        if self.victim is None:
            self.victim = self.folder.loaded()
            if self.device and self.victim.differentiable:  # every torch victim: its model on this actor's GPU
                self.victim.model_.to(self.device)
        return self.victim


def uses_torch(directory: str) -> bool:
    """Whether a saved victim is a torch model (every differentiable victim is)."""
    return victim_kind(read_meta(directory)["kind"]).differentiable


def shard_count(out_dir: str, records: int, workers: int) -> int:
    """The shards of a run into ``out_dir``: those its earlier run made (so that it resumes), else
    SHARDS_PER_WORKER a worker, at most one a record."""
    shards = os.path.join(out_dir, SHARDS_DIR)
    found = {int(m.group(1)) for name in (os.listdir(shards) if os.path.isdir(shards) else [])
             if (m := re.fullmatch(r"\d+-of-(\d+)", name))}
    if len(found) > 1:
        raise ValueError(f"{out_dir}/{SHARDS_DIR} holds shards of runs cut {len(found)} ways; delete it to start over")
    return found.pop() if found else max(1, min(records, SHARDS_PER_WORKER * workers))


def evaluate_on_ray(victim_dirs: dict[str, str], records: Sequence[dict], attacks: Sequence[Attack], out_dir: str,
                    *, data: dict | None = None, batch_size: int = 64, label_names: dict[int, str] | None = None,
                    workers: int | None = None, address: str | None = None, progress: bool | None = None,
                    defence: Unveiler | str | None = None) -> dict:
    """``attacks.evaluate.evaluate`` of the victims saved in ``victim_dirs`` (``{name: folder}``) on a Ray
    cluster (``address``; see ``cloak.ray.connect``), by ``workers`` actors (default: one per CPU, or one
    per GPU when a victim is a torch model and the cluster has GPUs); with ``defence`` (an ``Unveiler``, its
    terms mined already, or its spec), each victim also as NAME+unveil, as ``attacks evaluate --defence``
    runs it. Returns the summary,
    also in ``OUT/summary.json``, the same a local run writes."""
    connect(address)
    victim_dirs = {name: os.path.abspath(d) for name, d in victim_dirs.items()}
    out_dir = os.path.abspath(out_dir)
    gpus = int(ray.cluster_resources().get("GPU", 0))
    on_gpu = gpus > 0 and any(uses_torch(d) for d in victim_dirs.values())
    workers = workers or (gpus if on_gpu else cluster_cpus())
    n = shard_count(out_dir, len(records), workers)
    folders = [os.path.join(out_dir, SHARDS_DIR, f"{i}-of-{n}") for i in range(n)]
    actor = ray.remote(ShardEvaluator).options(num_cpus=1, num_gpus=1 if on_gpu else 0, max_restarts=RETRIES,
                                               max_task_retries=RETRIES)
    actors = [actor.remote(victim_dirs, "cuda" if on_gpu else None, defence) for _ in range(min(workers, n))]
    shared = ray.put(list(records)), ray.put(list(attacks))
    waiting, running = list(range(n))[::-1], {}

    def give(worker) -> None:
        i = waiting.pop()
        running[worker.evaluate.remote(*shared, folders[i], data or {}, (i, n), batch_size, label_names)] = worker

    try:
        for worker in actors:
            give(worker)
        with progress_bar(total=n, unit="shard", desc="evaluate on ray", progress=progress) as bar:
            while running:
                [done], _ = ray.wait(list(running), num_returns=1)
                worker = running.pop(done)
                try:
                    ray.get(done)
                except ray.exceptions.RayTaskError as e:  # the shard's own error: bad data, a victim that fails
                    raise e.cause if isinstance(e.cause, Exception) else e from None
                except ray.exceptions.RayActorError as e:
                    raise RuntimeError(f"a Ray worker died {RETRIES + 1} times over one shard ({e}); what is done "
                                       "is kept: rerun the same command to resume") from None
                bar.update()
                if waiting:
                    give(worker)
    finally:
        for worker in actors:
            ray.kill(worker)
    return merge(folders, out_dir)
