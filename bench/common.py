"""What every benchmark shares: paths, whole commands timed, the machine, the results file, COLD.

A benchmark is a module ``bench/NAME.py`` run from the repository root as
``.venv/bin/python -m bench.NAME --help``; it writes its figures to ``bench/results/NAME.json`` (with
``write_result``) and its working files under ``WORK`` (the repository's ``bench`` folder's ``work``), and
has a line in a ``make bench*`` target after the benchmarks whose output it reads. It imports what it
shares from here, never from another benchmark (what one family shares and nothing else needs is a
module that writes no figures: ``speech_measures``, ``perturb_realism``, ``perturb_command``,
``mmbert_data``, ``mmbert_evaluation``; ``textattack_search`` is ``search_attack``'s side in TextAttack's
environment). ``tests/test_bench_rules.py`` holds them to it. The shape of one::

    '''One line saying what it measures.

    Run from the repository root after ``python -m bench.OTHER`` (if it needs its output):
    ``.venv/bin/python -m bench.NAME``; writes ``bench/results/NAME.json``. ...how, on what...
    '''
    from bench.common import BIN, RESULTS, machine_info, parser, print_summary, run, write_result

    def main() -> None:
        ap = parser(__doc__, out=RESULTS / "NAME.json", cold=True)
        args = ap.parse_args()
        started = time.perf_counter()
        step = run([BIN / "attacks", "evaluate", ...])       # a whole command: its text, seconds, peak MB
        write_result(args.out, {"benchmark": "bench/NAME.py", "machine": machine_info(("torch",)), ...})
        print_summary([(name, value, note), ...], args.out, time.perf_counter() - started)

    if __name__ == "__main__":
        main()

What is here:

- Paths: ``REPO``, ``RESULTS`` (``bench/results``), ``WORK`` (``bench/work``), ``BIN`` (the running
  virtual environment's ``bin``: ``BIN / "attacks"``). The data sets are the folders the environment
  variables ``MMCLOAK_COLD`` and ``MMCLOAK_SWSR`` name, or ``--cold`` / ``--swsr``; a benchmark without
  one it needs stops in one line naming the variable. ``portable`` writes a path as the results record
  it: relative to the repository, or as ``$MMCLOAK_COLD/...``, never a folder of this machine.
- Commands: ``measure`` (a command's exit code, wall and CPU time, peak memory and last stderr line; a
  ``watch`` called while it runs polls what it started),
  ``run`` (the same, printed first, stopped with the command's error if it fails, and recorded in
  a ``steps`` dict under a name where one is given), ``run_once`` (unless its output is there), ``shown`` (a command as text, repository paths
  relative), ``victim_flags``, ``log`` (a progress line with the time), ``timed`` (a call and its seconds).
- Order: ``require(path, command)`` stops a benchmark with one line naming the command that makes
  what it needs (``make bench*`` runs them in order).
- Results: ``parser`` (the argument parser every benchmark starts from; ``weight_files`` checks its
  ``--weights``; ``encoder_options`` adds a fine-tuning benchmark's encoder options), ``machine_info``
  (what it ran on, and the command), ``write_result`` (the JSON, atomically, its paths made ``portable``),
  ``read_json``, ``print_summary`` (the closing table), ``relative``, ``ratio``.
- Data: ``folder`` (made if missing), ``cold_records`` (a COLD split as records), ``records`` (a JSONL
  file's), ``cold_work`` (a work folder with COLD's splits converted into it), ``write_cycled`` (records
  over and over to a given count, the large inputs of the ``cloak perturb`` runs, which use the op mix
  ``MIX``), ``cold_jsonl``
  (converted once by ``cloak convert`` into a work folder), ``corpus`` (the texts the shared backbone
  learns from), ``backbone_log``, ``backbone_info`` (any encoder folder), ``resumable``,
  ``epoch_seconds``; JSON Lines are written with ``cloak.common.io.write_records``.
- Figures: ``share_interval`` (a share of items and its bootstrap 95% interval, resampling the posts they
  belong to), ``share_difference`` (two shares of the same posts, their difference's paired interval), ``cpu_rate`` (items a CPU-second of one function, the machine's other load aside).
- ``attacks evaluate`` summaries: ``CONVENTIONAL`` (the conventional victims the tables attack),
  ``cold_test`` (the COLD test records ``bench.robustness`` converts, which others attack too),
  ``victim_table``, ``search_figures``, ``kept_timings``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from importlib import metadata
from pathlib import Path

from cloak.common.io import write_atomic, write_records

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
WORK = REPO / "bench" / "work"
# The data sets: (option, environment variable, what the folder holds)
DATA_SETS = (("cold", "MMCLOAK_COLD", "COLD's train.csv, dev.csv, test.csv"),
             ("swsr", "MMCLOAK_SWSR", "SWSR's SexComment.csv"),
             ("c2tu", "MMCLOAK_C2TU", "C²TU's test sets (toxicloakcn_cloaked.json, ..., outputs/)"))
BIN = Path(sys.executable).parent
CONVENTIONAL = "tfidf-lr,tfidf-svm,tfidf-nb,tfidf-gbt,bow-lr,bow-gbt,emb-gbt"
MIX = "homophone,emoji,split,abbrev,pinyin,english"  # the ops of the large cloak perturb runs


# ---------------------------------------------------------------------------------------------- commands

def portable(text: str) -> str:
    """``text`` with this machine's folders in it written as a reader has them: the data sets' and weights'
    folders as ``$MMCLOAK_COLD`` (...), paths inside the repository relative to it, the temporary folder as
    ``$TMPDIR`` and the home folder as ``~``."""
    for variable in ("MMCLOAK_COLD", "MMCLOAK_SWSR", "MMCLOAK_C2TU", "MMCLOAK_WEIGHTS"):
        folder = os.environ.get(variable)
        if folder and not Path(folder).resolve().is_relative_to(REPO):
            text = text.replace(str(Path(folder).resolve()), f"${variable}")
    text = text.replace(str(REPO) + "/", "").replace(str(REPO), ".")
    return text.replace(tempfile.gettempdir() + "/", "$TMPDIR/").replace(str(Path.home()) + "/", "~/")


def shown(command: Iterable) -> str:
    """A command as text, its paths ``portable``."""
    return portable(" ".join(str(a) for a in command))


def measure(command: list, env: dict | None = None, cwd: str | None = None,
            watch: Callable[[int], None] | None = None) -> dict:
    """Run a command; its exit code, wall time, CPU time (user + system), peak resident memory (MB) and
    last stderr line. ``watch(pid)`` is called every 0.2 s while it runs (to poll the processes it starts)."""
    stop = threading.Event()

    def poll(pid: int) -> None:
        while not stop.is_set():
            watch(pid)
            stop.wait(0.2)

    started = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([str(a) for a in command], stdout=subprocess.DEVNULL, stderr=err,
                                env={**os.environ, **(env or {})}, cwd=cwd)
        poller = threading.Thread(target=poll, args=(proc.pid,), daemon=True) if watch else None
        if poller:
            poller.start()
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
        stop.set()
        if poller:
            poller.join()
        err.seek(0)
        lines = err.read().decode("utf-8", "replace").strip().splitlines()
    return {"exit": os.waitstatus_to_exitcode(status), "seconds": round(seconds, 2),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 2), "peak_mb": round(usage.ru_maxrss / 1024, 1),
            "stderr": lines[-1] if lines else ""}


def run(command: list, steps: dict | None = None, name: str | None = None) -> dict:
    """A step of a benchmark: print the command, run it as a user would, stop the benchmark if it fails.

    Returns ``{"command": ..., **measure(command)}``, also kept as ``steps[name]`` when ``steps`` is given.
    """
    text = shown(command)
    print(text, flush=True)
    result = {"command": text, **measure(command)}
    if steps is not None:
        steps[name or text] = result
    if result["exit"] != 0:
        raise SystemExit(f"{name or text} failed: {result['stderr']}")
    return result


def run_once(name: str, output: Path, command: list, steps: dict) -> Path:
    """``run`` the command unless ``output`` is already there (a rerun continues where it stopped); ``output``.
    The step's record is kept beside it (``OUTPUT.step.json``), with the commit that made it, so that a
    rerun's result lists the steps an earlier run made too; an output an earlier commit made is reused with a
    note, since the code that makes it may have changed since (delete the output to make it again)."""
    record, commit = Path(f"{output}.step.json"), _git_state()["commit"]
    if not Path(output).exists():
        made = {**run(command, steps, name), "commit": commit}
        steps[name] = made
        record.write_text(json.dumps(made, ensure_ascii=False), encoding="utf-8")
    elif record.exists():
        steps[name] = json.loads(record.read_text(encoding="utf-8"))
        made_at = steps[name].get("commit")
        if commit and made_at != commit:
            print(f"note: {output} reused, made at commit {str(made_at)[:7]} (now {commit[:7]}); "
                  "delete it to make it again with this code", flush=True)
    return output


def mined_terms(work: Path, steps: dict) -> Path:
    """``cloak mine-terms`` on the work folder's COLD train: the terms file the unveil benchmarks read back to."""
    return run_once("mine terms", work / "terms.tsv", [BIN / "cloak", "mine-terms", "--train", work / "train.jsonl",
                                                    "--out", work / "terms.tsv"], steps)


def ngram_model(work: Path, steps: dict) -> Path:
    """``cloak fit-lm`` on the work folder's COLD train: the n-gram model ``cloak unveil`` scores with."""
    model = work / "cold.lm.gz"
    return run_once("fit the n-gram model", model, [BIN / "cloak", "fit-lm", "--train", work / "train.jsonl",
                                                    "--out", model], steps)


def log(message: str) -> None:
    """A progress line, with the time of day."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def timed(make):
    """What ``make()`` returns, and the seconds it took."""
    started = time.perf_counter()
    return make(), time.perf_counter() - started


def victim_flags(folders: Iterable) -> list:
    """``--victim A --victim B ...`` for ``attacks evaluate``."""
    return [x for folder in folders for x in ("--victim", folder)]


def require(path: Path, command: str) -> Path:
    """``path``, which another benchmark makes; if it is not there, stop with one line naming that benchmark."""
    if not Path(path).exists():
        raise SystemExit(f"{relative(path)} is missing: run `{command}` first")
    return path


# ----------------------------------------------------------------------------------------------- results

def parser(doc: str, *, out: Path | None = None, cold: bool = False, swsr: bool = False, c2tu: bool = False,
           work: Path | None = None, weights: bool = False) -> argparse.ArgumentParser:
    """The argument parser a benchmark starts from: its docstring's first paragraph as the description,
    and the options most share (``--cold``, ``--swsr``, ``--c2tu``, ``--work``, ``--out``, ``--weights``) where
    asked for."""
    ap = BenchParser(prog=f"python -m bench.{Path(sys.argv[0]).stem}", description=doc.split("\n\n")[0])
    for name, variable, holds in DATA_SETS:
        if {"cold": cold, "swsr": swsr, "c2tu": c2tu}[name]:
            ap.add_argument(f"--{name}", type=Path, default=os.environ.get(variable),
                            help=f"the folder of {holds} (default: ${variable})")
    if work is not None:
        ap.add_argument("--work", type=Path, default=work, help="working files")
    if out is not None:
        ap.add_argument("--out", type=Path, default=out, help="the figures (JSON)")
    if weights:
        ap.add_argument("--weights", type=Path, default=os.environ.get("MMCLOAK_WEIGHTS"),
                        help="the real Whisper and Kokoro weights, a folder made by `make weights` "
                             "(default: $MMCLOAK_WEIGHTS)")
    return ap


class BenchParser(argparse.ArgumentParser):
    """A benchmark's argument parser: COLD or C²TU's sets, which every benchmark that takes them reads, given
    neither by option (``--cold``) nor by variable (``MMCLOAK_COLD``) stops it at once, in one line naming the
    variable (SWSR, which some runs of a benchmark do not read, is checked where it is read: ``corpus``)."""

    def parse_args(self, args=None, namespace=None):
        parsed = super().parse_args(args, namespace)
        for name in ("cold", "c2tu"):
            if name in vars(parsed) and getattr(parsed, name) is None:
                self.error(missing_data(name))
        return parsed


def missing_data(name: str) -> str:
    """The line a benchmark stops with when it has no folder for the data set ``name`` (``cold``, ``swsr``,
    ``c2tu``)."""
    _, variable, holds = next(d for d in DATA_SETS if d[0] == name)
    return f"no {name.upper()} data: pass --{name} DIR or set {variable} to the folder of {holds}"


def encoder_options(ap: argparse.ArgumentParser) -> None:
    """The options of a benchmark that fine-tunes ``bert`` and its kin on an encoder: ``--backbone`` (any
    transformers encoder folder), ``--backbone-layers``, ``--lr``, ``--max-length``, ``--checkpoint-minutes``."""
    ap.add_argument("--backbone", type=Path, default=WORK / "backbone",
                    help="any transformers encoder folder (default: the small backbone of bench.backbone)")
    ap.add_argument("--backbone-layers", type=int, default=None, metavar="N", help="keep its first N layers [all]")
    ap.add_argument("--lr", type=float, default=1e-4,
                    help="1e-4 for the small from-scratch backbone; 2e-5 (Wankmüller's) for a pretrained one")
    ap.add_argument("--max-length", type=int, default=128, help="tokens read of a post (head + tail)")
    ap.add_argument("--checkpoint-minutes", type=float, default=10,
                    help="a checkpoint this often within an epoch (and at its end): what a kill can lose")


def weight_files(ap: argparse.ArgumentParser, weights: Path | None, *names: str) -> list[Path]:
    """The files ``names`` of the ``--weights`` folder; a usage error naming how to make them if one is missing."""
    make = f"fetch them with `mmcloak-weights all {weights or 'weights'}` (or `make weights`)"
    if not weights:
        ap.error(f"no weights: pass --weights DIR or set MMCLOAK_WEIGHTS; {make}")
    files = [Path(weights) / name for name in names]
    for path in files:
        if not path.is_file():
            ap.error(f"{path} not found; {make}")
    return files


def version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _git_state() -> dict:
    def git(*args):
        try:
            return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                                  timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": git("rev-parse", "HEAD") or None,
            "modified_files": dirty.splitlines() if dirty else []}


def machine_info(packages: Iterable[str] = ()) -> dict:
    """What a benchmark ran on: machine, load, package versions, date and commit."""
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    return {
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu_model": _cpu_model(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "loadavg_at_start": load,
        "packages": {name: version(name) for name in ("mmcloak", *packages)},
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": shown(["python", "-m", f"bench.{Path(sys.argv[0]).stem}", *sys.argv[1:]]),
        "git": _git_state(),
    }


def write_result(path: Path, result: dict, indent: int = 1) -> None:
    """The figures as JSON, written atomically (a reader sees the old file or the new one), every path in
    them ``portable``."""
    write_atomic(path, (json.dumps(_portable_values(result), indent=indent, ensure_ascii=False) + "\n").encode())


def _portable_values(value):
    if isinstance(value, str):
        return portable(value)
    if isinstance(value, dict):
        return {k: _portable_values(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_portable_values(v) for v in value]
    return value


def read_json(path: Path, default: dict | None = None) -> dict:
    """A JSON file; ``default`` where it is not there (a rerun adding to earlier figures)."""
    if default is not None and not Path(path).exists():
        return default
    return json.loads(Path(path).read_text(encoding="utf-8"))


def print_summary(rows: list[tuple[str, str, str]], out, seconds: float, value_width: int = 16) -> None:
    """The closing table every benchmark prints: one row per figure (name, value, note)."""
    width = max((len(r[0]) for r in rows), default=0)
    print()
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:<{value_width}}  {note}")
    print(f"\nwrote {out} in {seconds:.0f} s")


def ratio(a: float | None, b: float | None) -> float | None:
    """``a / b`` to two decimals, or None where either is missing (or zero)."""
    return round(a / b, 2) if a and b else None


def file_tag(name: str) -> str:
    """A name (an op spec, a label) as part of a file name: ``homophone:common_share=0`` ->
    ``homophone_common_share-0``."""
    return name.replace(":", "_").replace("=", "-").replace(", ", "_").replace(" ", "-")


def relative(path: Path) -> str:
    """A path as the results record it (``portable``): relative to the repository where it is inside it."""
    return portable(str(Path(path).resolve()))


# -------------------------------------------------------------------------------------------------- data

def folder(path: Path) -> Path:
    """``path``, a folder made (with its parents) if it is not there yet."""
    path.mkdir(parents=True, exist_ok=True)
    return path


def cold_records(cold: Path, split: str) -> list[dict]:
    """A COLD split (``train``, ``dev`` or ``test``) as records."""
    from cloak.convert import read_dataset

    return list(read_dataset("cold", str(Path(cold) / f"{split}.csv")))


def records(path: Path) -> list[dict]:
    """The records of a JSONL file."""
    from cloak.common.io import read_records

    return [record for _, record in read_records(str(path))]


def cold_work(args, splits: tuple[str, ...] = ("train", "test")) -> tuple[Path, dict]:
    """A benchmark's work folder (``--work``, made if missing) with COLD's ``splits`` converted into it
    (``SPLIT.jsonl``), and the steps record they began."""
    work, steps = folder(args.work), {}
    for split in splits:
        cold_jsonl(args.cold, split, work / f"{split}.jsonl", steps)
    return work, steps


def write_cycled(path: str, records: list[dict], n: int) -> int:
    """``n`` records, ``records`` over and over (ids made unique by the round); returns the file's bytes."""
    write_records(path, ({"id": f"{r['id']}-{i // len(records)}", "text": r["text"], "label": r["label"]}
                         for i in range(n) for r in [records[i % len(records)]]))
    return os.path.getsize(path)


def cold_jsonl(cold: Path, split: str, out: Path, steps: dict | None = None) -> Path:
    """A COLD split converted to records by ``cloak convert`` into ``out``, once (a rerun reuses it)."""
    return run_once(f"convert {split}", out, [BIN / "cloak", "convert", "--from", "cold", "--in",
                                             Path(cold) / f"{split}.csv", "--out", out], {} if steps is None else steps)


def corpus(cold: Path, swsr: Path, seed: int) -> list[str]:
    """The shared backbone's pre-training texts: COLD train and SWSR, distinct, in a seeded order."""
    from cloak.convert import read_dataset

    if swsr is None:
        raise SystemExit(missing_data("swsr"))
    texts = [r["text"] for r in cold_records(cold, "train")]
    texts += [r["text"] for r in read_dataset("swsr", str(Path(swsr) / "SexComment.csv"))]
    distinct = sorted(set(texts))
    random.Random(seed).shuffle(distinct)
    return distinct


def backbone_log(backbone: Path) -> tuple[list[dict], dict]:
    """A backbone's training log (an entry an epoch) and its best epoch: the lowest held-out masked-LM loss."""
    log = read_json(require(backbone / "log.json", "python -m bench.backbone"))
    return log, min(log, key=lambda e: e["dev_mlm_loss"])


def backbone_info(backbone: Path, layers: int | None = None) -> dict:
    """What a run's encoder is, for its figures: its folder, shape and the layers kept; and, for a backbone
    pre-trained here (one with a ``log.json``: ``bench.backbone``), its best epoch and held-out masked-LM
    loss. Any transformers encoder folder will do (multilingual-e5-small has no log)."""
    config = read_json(require(Path(backbone) / "config.json", "python -m bench.backbone, or pass --backbone DIR"))
    info = {"path": relative(backbone), "model_type": config.get("model_type"),
            **{k: config.get(k) for k in ("hidden_size", "num_hidden_layers", "vocab_size")},
            "layers_used": layers or config.get("num_hidden_layers")}
    if (Path(backbone) / "log.json").exists():
        _, best = backbone_log(Path(backbone))
        info.update(best_dev_mlm_loss=best["dev_mlm_loss"], epochs=best["epoch"])
    return info


def resumable(out: Path) -> bool:
    """Whether a torch training run into ``out`` (``mmbert.loop``) stopped after a checkpoint: rerun with resume."""
    return (Path(out) / "checkpoint" / "trainer_state.json").exists()


def epoch_seconds(log: list[dict]) -> float | None:
    """Mean seconds an epoch of a ``mmbert.loop`` log (training and the dev pass; a resumed epoch counts whole)."""
    seconds = [e["seconds"] for e in log if "seconds" in e]
    return round(sum(seconds) / len(seconds), 2) if seconds else None


# ------------------------------------------------------------------------------------------------- figures

def share_interval(hits: list[int], totals: list[int]) -> dict:
    """The share sum(hits) / sum(totals) of items counted post by post (``hits[i]`` of ``totals[i]`` in post
    i), with its 95% bootstrap interval: posts drawn with replacement (``attacks.bootstrap``'s draws), the
    share taken on each draw."""
    import numpy as np

    from attacks.bootstrap import interval, resamples

    hit, total = np.asarray(hits, dtype=float), np.asarray(totals, dtype=float)
    if not len(total) or total.sum() == 0:
        return {"share": None, "items": 0, "interval": None}
    draws = [hit[rows].sum(1) / np.maximum(1, total[rows].sum(1)) for rows in resamples(len(total))]
    return {"share": round(float(hit.sum() / total.sum()), 4), "items": int(total.sum()),
            "interval": [round(x, 4) for x in interval(np.concatenate(draws))]}


def share_difference(first: list[int], second: list[int], totals: list[int] | None = None) -> dict:
    """The difference of two shares taken on the same posts (``first[i]`` and ``second[i]`` of post i's
    ``totals[i]`` items; without ``totals``, each post 0 or 1), with its paired 95% bootstrap interval: each
    draw of posts takes both."""
    import numpy as np

    from attacks.bootstrap import interval, resamples

    a, b = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    t = np.ones_like(a) if totals is None else np.asarray(totals, dtype=float)
    draws = [(a[rows].sum(1) - b[rows].sum(1)) / np.maximum(1, t[rows].sum(1)) for rows in resamples(len(a))]
    return {"difference": round(float((a.sum() - b.sum()) / max(1.0, t.sum())), 4),
            "interval": [round(x, 4) for x in interval(np.concatenate(draws))]}


def auc_interval(labels: list[int], scores: list[float], groups: list | None = None) -> dict:
    """ROC AUC of ``scores`` for the labels that are not 0, with its 95% bootstrap interval: items drawn with
    replacement, or, given ``groups`` (an item's post, say), whole groups drawn, their items together."""
    return auc_difference(labels, scores, None, groups)


def auc_difference(labels: list[int], first: list[float], second: list[float] | None,
                   groups: list | None = None) -> dict:
    """ROC AUC of ``first`` less that of ``second`` on the same items (or ``first``'s alone, ``second``
    None), with its paired 95% bootstrap interval, drawn as ``auc_interval`` draws."""
    import numpy as np
    from sklearn.metrics import roc_auc_score

    from attacks.bootstrap import interval, resamples

    y, a = np.asarray(labels) != 0, np.asarray(first, dtype=float)
    b = None if second is None else np.asarray(second, dtype=float)
    if y.all() or not y.any():  # one class: no ranking to judge
        return {"auc" if b is None else "difference": None, "interval": None}
    if groups is None:
        items = None
    else:
        names, members = np.unique(np.asarray(groups), return_inverse=True)
        items = [np.flatnonzero(members == g) for g in range(len(names))]

    def figure(rows: np.ndarray) -> float:
        return roc_auc_score(y[rows], a[rows]) - (0.0 if b is None else roc_auc_score(y[rows], b[rows]))

    draws = []
    for block in resamples(len(y) if items is None else len(items)):
        for picked in block:
            rows = picked if items is None else np.concatenate([items[g] for g in picked])
            if y[rows].any() and not y[rows].all():
                draws.append(figure(rows))
    return {"auc" if b is None else "difference": round(float(figure(np.arange(len(y)))), 4),
            "interval": [round(x, 4) for x in interval(np.array(draws))]}


def cpu_rate(func: Callable, items: list) -> dict:
    """``func(item)`` over ``items``: items a second of this process's CPU time (what one core does, however
    loaded the machine) and a second of wall time."""
    cpu, wall = time.process_time(), time.perf_counter()
    for item in items:
        func(item)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {"items": len(items), "cpu_s": round(cpu, 3), "wall_s": round(wall, 3),
            "per_cpu_second": round(len(items) / cpu, 1), "per_wall_second": round(len(items) / wall, 1)}


# ------------------------------------------------------------------------------ attacks evaluate summaries

def cold_test(work: Path) -> Path:
    """The COLD test records ``bench.robustness`` converts, which the search benchmarks attack too."""
    return require(work / "robustness" / "cold_test.jsonl", "python -m bench.robustness")


def victim_table(summaries: dict[str, dict]) -> dict[str, dict]:
    """Per victim of ``attacks evaluate`` summaries: clean macro-F1 and, per attack, macro-F1 under it and
    TextAttack's success rate."""
    table: dict[str, dict] = {}
    for summary in summaries.values():
        for victim, entry in summary["victims"].items():
            row = table.setdefault(victim, {"clean_macro_f1": entry["clean"]["f1"], "attacks": {}})
            for attack, figures in entry["attacks"].items():
                if "skipped" not in figures:
                    row["attacks"][attack] = {"macro_f1": figures["all"]["f1"], "clean_macro_f1": entry["clean"]["f1"],
                                              "success_rate": figures["textattack"]["success_rate"],
                                              "posts": summary["data"]["records"]}
    return table


def search_figures(out: Path) -> dict[str, tuple[float, dict]]:
    """Per victim of an ``attacks evaluate --attacks search`` folder: clean macro-F1 and the search's
    figures (macro-F1 under attack, characters changed and TextAttack's counts, also by gold label)."""
    summary = read_json(out / "summary.json")
    search = next(a for a, settings in summary["attacks"].items() if settings["kind"] == "search")  # one a folder
    return {victim: (entry["clean"]["f1"], {"macro_f1": (f := entry["attacks"][search])["all"]["f1"],
                                            "perturbed_share": f["perturbed_share"], **f["textattack"],
                                            "by_label": f["textattack_by_label"]})
            for victim, entry in summary["victims"].items()}


def kept_timings(out: Path, timings: dict[str, dict]) -> dict[str, list[dict]]:
    """This run's timings after those already in ``out``: a rerun that adds a victim resumes the others and
    times only the new one, so the first run's figures must not be lost."""
    history = read_json(out, {}).get("timings", {})
    runs = {k: (v if isinstance(v, list) else [v]) for k, v in history.items()}
    for k, v in timings.items():
        runs.setdefault(k, []).append(v)
    return runs
