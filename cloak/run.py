"""Transform a JSONL file record by record: streaming, in parallel, sharded, resumable — the engine of
``cloak perturb`` and ``cloak unveil``.

What happens to one record is a :class:`RecordTransform` (``Cloaking``: a ``Perturber``'s cloaks of it;
``cloak.unveil.Unveiling``: its cloaks read back); the engine reads, parallelises, checkpoints and writes.
Output is byte-identical whatever the worker count or shard: a transform's output depends only on the
record and its line number (a cloak's randomness comes from (seed, line number, variant)), workers
return results in input order, and shard ``i/n`` takes the ``i``-th contiguous block of lines, so shards
concatenated in order are the unsharded output.
"""
from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from .common.progress import progress_bar

from .common.commands import plural
from .edits import Edit
from .common.formats import DEFAULT, check_record_files, output_path, record_format
from .common.io import (UNICODE_JSON, AtomicWriter, RecordError, SkipLog, batched, dump_record, input_name,
                        parse_record)
from .perturber import Perturber
from .common.workers import ordered_map

CHUNK = 256
MAX_AUTO_WORKERS = 8
# Fewer lines than this run in one process even when workers are left to choose: starting a pool
# costs more than it saves.
MIN_LINES_PER_AUTO_WORKER = 4 * CHUNK
_json_string = json.encoder.encode_basestring  # how a JSONEncoder(ensure_ascii=False) writes a str
CHECKPOINT_SECONDS = 2.0


@dataclass
class RunStats:
    read: int = 0
    written: int = 0
    changed: int = 0  # written records with at least one edit
    edits: Counter = field(default_factory=Counter)
    skipped: SkipLog = field(default_factory=SkipLog)
    seconds: float = 0.0  # cloaking the records (the rate's time)
    setup_seconds: float = 0.0  # building the tables and targets, before (the command sets it)
    resumed_from_line: int = 0
    resumed_records: int = 0
    workers: int = 1

    def summary(self) -> str:
        share = f" ({100 * self.changed / self.written:.1f}%)" if self.written else ""
        ops = ", ".join(f"{op} {n}" for op, n in self.edits.most_common()) or "none"
        done_now = self.read - self.resumed_records
        rate = done_now / self.seconds if self.seconds > 0 else 0.0
        resumed = f"; resumed after line {self.resumed_from_line}" if self.resumed_from_line else ""
        setup = f" ({self.setup_seconds:.1f} s of it building the tables and targets)" if self.setup_seconds else ""
        return (f"read {plural(self.read, 'record')}, skipped {self.skipped.count}, wrote {self.written}, "
                f"{self.changed} of them changed{share}; edits: {ops}; "
                f"{self.setup_seconds + self.seconds:.1f} s{setup}, {rate:.0f} records/s"
                f"{f' in {self.workers} workers' if self.workers > 1 else ''}{resumed}")

    def state(self, line: int) -> dict:
        return {"line": line, "read": self.read, "written": self.written, "changed": self.changed,
                "edits": dict(self.edits), "skipped": self.skipped.count,
                "skip_examples": self.skipped.examples, "skip_last_line": self.skipped.last_line}

    def restore(self, state: dict) -> None:
        self.read, self.written, self.changed = state["read"], state["written"], state["changed"]
        self.edits = Counter(state["edits"])
        self.skipped = SkipLog(state["skipped"], list(state["skip_examples"]), state["skip_last_line"])
        self.resumed_from_line = state["line"]
        self.resumed_records = state["read"]


def auto_workers(lines: int | None) -> int:
    """The worker count ``--workers auto`` means: a process per CPU this process may use (at most
    MAX_AUTO_WORKERS), fewer when the input is too short to share (standard input counts as long)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        cpus = os.cpu_count() or 1
    if lines is not None:
        cpus = min(cpus, lines // MIN_LINES_PER_AUTO_WORKER)
    return max(1, min(cpus, MAX_AUTO_WORKERS))


def parse_shard(shard: str | tuple[int, int] | None) -> tuple[int, int] | None:
    """``"i/n"`` -> (i, n) with 0 <= i < n."""
    if shard is None or isinstance(shard, tuple):
        return shard
    try:
        i, n = (int(x) for x in shard.split("/"))
    except ValueError:
        raise ValueError(f"shard must look like i/n (e.g. 0/4), not {shard!r}") from None
    if not 0 <= i < n:
        raise ValueError(f"shard {shard}: need 0 <= i < n")
    return i, n


@runtime_checkable
class RecordTransform(Protocol):
    """What the engine does to one record: ``transform`` gives its output lines (JSONL, ``\\n``-ended), how
    many of them changed, and the op of every edit. It must depend on the record and its line number only,
    so that workers, shards and a resumed run give the same bytes. ``prepare`` loads its tables (once,
    before worker processes fork, and again in a worker that did not inherit them); ``fingerprint``: what
    a run must share with the one it resumes; ``fields``: the fields it adds to a record (their column types
    are ``cloak.common.formats.field_types``'s)."""

    fields: tuple[str, ...]

    def prepare(self) -> RecordTransform: ...

    def transform(self, number: int, record: dict, text_field: str) -> tuple[list[bytes], int, list[str]]: ...

    def fingerprint(self) -> list: ...


class Cloaking:
    """The transform of ``cloak perturb``: ``variants`` cloaked copies of each record (``cloak_record``)."""

    fields = ("source_text", "cloak")

    def __init__(self, perturber: Perturber, variants: int = 1) -> None:
        if variants < 1:
            raise ValueError("variants must be at least 1")
        self.perturber, self.variants = perturber, variants

    def prepare(self) -> Cloaking:
        self.perturber.prepare()
        return self

    def transform(self, number: int, record: dict, text_field: str) -> tuple[list[bytes], int, list[str]]:
        return cloak_record(self.perturber, number, record, self.variants, text_field)

    def fingerprint(self) -> list:
        return [repr(self.perturber), self.variants]


def cloak_record(perturber: Perturber, number: int, record: dict, variants: int,
                 text_field: str = "text") -> tuple[list[bytes], int, list[str]]:
    """The output lines of one input record, with (records changed, the op of every edit)."""
    lines, changed, ops = [], 0, []
    source = record[text_field]
    protected = record.get("protected") or ()
    for k in range(variants):
        out = perturber(source, key=number, variant=k, protected=[tuple(p) for p in protected])
        lines.append(_dump_cloaked(record, text_field, out, perturber.seed, k))
        changed += out.changed
        ops.extend(e.op for e in out.edits)
    return lines, changed, ops


def _edit_json(e: Edit) -> str:
    return (f'{{"op": {_json_string(e.op)}, "start": {e.start}, "end": {e.end}, '
            f'"src": {_json_string(e.src)}, "dst": {_json_string(e.dst)}}}')


def _dump_cloaked(record: dict, text_field: str, out, seed: int, variant: int) -> bytes:
    """``dump_record`` of the cloaked record, byte for byte, with the edits (most of the line) written
    straight from the Edit tuples instead of through a dict each: a twentieth of the command's time."""
    cloak = {"ops": out.ops, "seed": seed, "variant": variant, "edits": []}
    cloaked = {**record, text_field: out.text, "source_text": record[text_field], "cloak": cloak}
    if "cloak" not in record:  # a re-cloaked record keeps "cloak" where it was, not last: the plain way
        line = UNICODE_JSON.encode(cloaked)  # ends with '"edits": []}}'
        try:
            return f"{line[:-3]}{', '.join(map(_edit_json, out.edits))}]}}}}\n".encode()
        except UnicodeEncodeError:  # lone surrogates: dump_record writes ASCII escapes
            pass
    cloak["edits"] = [e.to_dict() for e in out.edits]
    return dump_record(cloaked)


# What a worker returns for one input line: (line number, output lines, records changed, edits' ops),
# or (line number, None, 0, the RecordError's arguments) for a bad line.
LineResult = tuple[int, list[bytes] | None, int, list[str] | tuple]

_worker: tuple[RecordTransform, str, str] | None = None


class Engine(Protocol):
    """Somewhere else to transform a file's lines: ``results`` yields a LineResult for each non-blank line
    ``start < n <= stop`` in input order, each transformed as ``transform_lines`` does."""

    workers: int

    def results(self, path: str, start: int, stop: int, transform: RecordTransform,
                text_field: str) -> Iterator[LineResult]: ...


def _init_worker(transform: RecordTransform, text_field: str, name: str) -> None:
    global _worker
    _worker = (transform.prepare(), text_field, name)


def _cloak_chunk(chunk: list[tuple[int, bytes]]) -> list[LineResult]:
    return transform_lines(chunk, *_worker)  # type: ignore[misc]


def transform_lines(chunk: list[tuple[int, bytes]], transform: RecordTransform, text_field: str,
                    name: str) -> list[LineResult]:
    """Parse and transform raw ``(line number, line)`` pairs of the file ``name`` (in a worker: parsing is
    half the work, so it is done there too)."""
    results: list[LineResult] = []
    for number, raw in chunk:
        try:
            record = parse_record(raw, name, number, text_field)
        except RecordError as e:
            results.append((number, None, 0, (e.path, e.line, e.message, e.field)))
            continue
        results.append((number, *transform.transform(number, record, text_field)))
    return results


def _results(chunks: Iterator[list[tuple[int, bytes]]], workers: int,
             initargs: tuple) -> Iterator[LineResult]:
    """Results line by line in input order, computed in-process or by a bounded pool of workers."""
    if workers <= 1:
        _init_worker(*initargs)
        for chunk in chunks:
            yield from _cloak_chunk(chunk)
        return
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    for results in ordered_map(_cloak_chunk, chunks, workers, _init_worker, initargs, method):
        yield from results


@contextlib.contextmanager
def _interrupts_between_records():
    """Turn Ctrl-C / SIGTERM into a request honoured between records.

    An interrupt that landed between writing a record and counting it would leave a checkpoint that
    disagrees with the output; deferring it to a safe point keeps the two in step. (Workers ignore
    both signals; ``cloak.common.workers`` stops them in order when the run unwinds.)
    """
    requested: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield requested
        return
    previous = {sig: signal.signal(sig, lambda signum, frame: requested.append(signum))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield requested
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def perturb_file(in_path: str, out_path: str, perturber: Perturber, *, variants: int = 1,
                 workers: int | None = 1, shard: str | tuple[int, int] | None = None,
                 on_error: str = "fail", resume: bool = False, overwrite: bool = False, text_field: str = "text",
                 progress: bool | None = None, engine: Engine | None = None) -> RunStats:
    """Cloak every record of ``in_path`` into ``out_path`` (``-`` for stdin / stdout).

    ``workers``: processes to cloak in; None chooses (``auto_workers``). The output is the same for any.
    ``engine``: where the records are cloaked instead of this machine's processes (``cloak.ray.RayEngine``:
    a Ray cluster); the output is the same.
    """
    return run_file(in_path, out_path, Cloaking(perturber, variants), workers=workers, shard=shard,
                    on_error=on_error, resume=resume, overwrite=overwrite, text_field=text_field, progress=progress,
                    engine=engine, desc="cloak perturb")


def run_file(in_path: str, out_path: str, transform: RecordTransform, *, workers: int | None = 1,
             shard: str | tuple[int, int] | None = None, on_error: str = "fail", resume: bool = False,
             overwrite: bool = False, text_field: str = "text", progress: bool | None = None, engine: Engine | None = None,
             desc: str = "cloak") -> RunStats:
    """Transform every record of ``in_path`` into ``out_path`` (``-`` for stdin / stdout), as
    ``perturb_file`` cloaks them; ``desc`` names the run on its progress bar. Each is JSONL, CSV, TSV, Parquet
    or a saved Hugging Face Dataset by its path (``cloak.common.formats``)."""
    if on_error not in ("fail", "skip"):
        raise ValueError(f"on_error must be fail or skip, not {on_error!r}")
    if workers is not None and workers < 1:
        raise ValueError("workers must be at least 1")
    shard = parse_shard(shard)
    if in_path == "-" and shard is not None:
        raise ValueError("--shard needs an input file (standard input cannot be split)")
    check_record_files(in_path, out_path, text_field)  # an input with records; an output that is not the input
    source, target = record_format(in_path), record_format(out_path)
    total = source.count(in_path) if in_path != "-" else None
    lo, hi = 0, total
    if shard is not None and total is not None:
        i, n = shard
        lo, hi = i * total // n, (i + 1) * total // n
    if engine is not None:
        if in_path == "-":
            raise ValueError("--engine ray reads its input on the cluster: give an input file, not standard input")
        if source is not DEFAULT:
            raise ValueError(f"--engine ray reads JSONL on the cluster, not {source.name}: give a JSONL file (the "
                             "output may be any format)")
        workers = engine.workers
    elif workers is None:
        workers = auto_workers(None if hi is None else hi - lo)

    stats = RunStats(workers=workers)
    fingerprint = ""
    if in_path != "-":
        fingerprint = json.dumps([os.path.abspath(in_path), *source.stamp(in_path), *transform.fingerprint(),
                                  shard, text_field, on_error])
    started = time.perf_counter()
    with AtomicWriter(output_path(out_path), resume=resume, overwrite=overwrite, fingerprint=fingerprint,
                      resumable=True, finish=target.finish) as out:
        if out.resumed_state:
            stats.restore(out.resumed_state)
            lo = max(lo, out.resumed_state["line"])
        last_line = lo
        bar = progress_bar(total=None if hi is None else hi - lo, unit="line", desc=desc, progress=progress)
        last_checkpoint = time.monotonic()
        initargs = (transform, text_field, input_name(in_path))
        results = engine.results(in_path, lo, hi, transform, text_field) if engine is not None else \
            _results(batched(source.read_lines(in_path, lo, hi), CHUNK), workers, initargs)
        # closing(): the workers stop here, before an exception leaves, not whenever it is collected.
        with _interrupts_between_records() as interrupted, contextlib.closing(results):
            try:
                for number, lines, changed, edits in results:
                    if interrupted:
                        raise KeyboardInterrupt
                    if lines is None:
                        error = RecordError(*edits)
                        if on_error == "fail":
                            raise error
                        stats.skipped.add(error)
                    else:
                        for line in lines:
                            out.write(line)
                        stats.read += 1
                        stats.written += len(lines)
                        stats.changed += changed
                        stats.edits.update(edits)
                    bar.update(number - last_line)
                    last_line = number
                    if time.monotonic() - last_checkpoint > CHECKPOINT_SECONDS:
                        out.checkpoint(stats.state(last_line))
                        last_checkpoint = time.monotonic()
            except BaseException:
                out.checkpoint(stats.state(last_line))  # we stop between records: all consistent
                raise
            finally:
                bar.close()
    stats.seconds = time.perf_counter() - started
    return stats
