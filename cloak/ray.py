"""``cloak perturb`` and ``cloak unveil`` on a Ray cluster: Ray Data reads the lines, a ``map_batches`` of
actors transforms them.

The output is byte-identical to the local command's: each record is transformed as ``cloak.run`` does it
(a cloak's randomness from (seed, line number, variant)), and the lines come back in input order (Ray
Data's ``preserve_order``), so the one file written is the same whatever the cluster. Each actor builds
the tables (the ops', the unveiler's) once, in its constructor, not per batch.

The input file must be readable at the same path on every node (a shared file system), as for Ray's own
``read_json``. Ray is an optional extra (``pip install 'mmcloak[ray]'``); nothing else imports this module.

    >>> ds = read_jsonl("posts.jsonl")                                  # doctest: +SKIP
    >>> cloaked = perturb_dataset(ds, ops="homophone,emoji", seed=0)    # doctest: +SKIP
"""
from __future__ import annotations

import codecs
import json
import logging
import math
import os
from collections.abc import Iterator, Sequence
from types import ModuleType

try:
    import pyarrow as pa
    import ray
    import ray.data
    from ray.data.block import BlockMetadata
    from ray.data.datasource import Datasource, ReadTask
except ImportError as e:  # the optional extra
    raise ImportError(f"--engine ray needs Ray Data ({e}): pip install 'mmcloak[ray]'") from None

from .common.io import RecordError, check_text, count_lines
from .perturber import Perturber
from .run import Cloaking, LineResult, RecordTransform, transform_lines
from .targets import DEFAULT_PROTECT

BLOCK_LINES = 4096  # lines a read task reads at most: a block of about a second of cloaking
BLOCKS_PER_WORKER = 4  # short inputs are still split so that every worker gets some
MIN_BLOCK_LINES = 64
WORKERS_PER_READER = 16  # a reader reads ~100k lines/s, a worker cloaks ~3-6k
OUTPUT = pa.schema([("line", pa.int64()), ("jsonl", pa.list_(pa.binary())), ("changed", pa.int64()),
                    ("ops", pa.list_(pa.string())), ("error", pa.string())])


def connect(address: str | None = None) -> None:
    """Join the Ray cluster at ``address`` (None: Ray's own choice: ``RAY_ADDRESS``, a cluster started on
    this machine with ``ray start``, or else a new one here), without Ray's dashboard, quietly."""
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, logging_level=logging.WARNING)
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    logging.getLogger("ray.data._internal.progress").addFilter(_no_progress_notice)


def _no_progress_notice(record: logging.LogRecord) -> bool:
    return not record.getMessage().startswith("Progress bars disabled")  # ours is shown instead


def cluster_cpus() -> int:
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


class JsonlLines(Datasource):
    """The non-blank lines ``start < n <= stop`` of a JSONL file as rows ``{line, raw}``: its line number
    (1-based, blank lines counted, as ``cloak perturb`` numbers them) and its bytes without the line end
    (nor a leading byte-order mark). One scan of the file finds where each block of lines starts; the
    blocks are read by Ray's workers."""

    def __init__(self, path: str, start: int = 0, stop: int | None = None, block_lines: int = BLOCK_LINES) -> None:
        super().__init__()
        self.path = os.path.abspath(path)
        self.start = start
        self.stop = count_lines(path) if stop is None else stop
        self.block_lines = block_lines

    def estimate_inmemory_data_size(self) -> int:
        return os.path.getsize(self.path)

    def get_read_tasks(self, parallelism: int, per_task_row_limit: int | None = None,
                       data_context=None) -> list[ReadTask]:
        firsts = list(range(self.start, self.stop, self.block_lines))
        size = self.estimate_inmemory_data_size() / max(1, self.stop)
        tasks = []
        for first, offset in zip(firsts, line_offsets(self.path, firsts)):
            count = min(self.block_lines, self.stop - first)
            tasks.append(ReadTask(lambda offset=offset, first=first, count=count: [self._read(offset, first, count)],
                                  BlockMetadata(num_rows=count, size_bytes=int(count * size),
                                                input_files=[self.path], exec_stats=None),
                                  per_task_row_limit=per_task_row_limit))
        return tasks

    def _read(self, offset: int, first: int, count: int) -> pa.Table:
        numbers, lines = [], []
        with open(self.path, "rb") as f:
            f.seek(offset)
            for number in range(first + 1, first + count + 1):
                raw = f.readline()
                if number == 1 and raw.startswith(codecs.BOM_UTF8):
                    raw = raw[len(codecs.BOM_UTF8):]
                if raw.strip():
                    numbers.append(number)
                    lines.append(raw.rstrip(b"\r\n"))
        return pa.table({"line": pa.array(numbers, pa.int64()), "raw": pa.array(lines, pa.binary())})


def line_offsets(path: str, lines: Sequence[int]) -> list[int]:
    """The byte offset at which each line ``n + 1`` begins (the file's size past its end), for ascending
    ``lines`` ``n``: one pass over the file."""
    offsets: list[int] = []
    wanted = iter(lines)
    want = next(wanted, None)
    seen = base = 0  # newlines before byte ``base``
    with open(path, "rb") as f:
        while want is not None:
            block = f.read(1 << 20)
            if not block:
                break
            count = block.count(b"\n")
            done, pos = seen, 0
            while want is not None and want <= seen + count:
                for _ in range(want - done):
                    pos = block.index(b"\n", pos) + 1
                done = want
                offsets.append(base + pos)
                want = next(wanted, None)
            seen += count
            base += len(block)
    return offsets + [base] * (len(lines) - len(offsets))


def read_jsonl(path: str, *, start: int = 0, stop: int | None = None, block_lines: int = BLOCK_LINES,
               readers: int = 1) -> ray.data.Dataset:
    """A Ray Dataset of the lines of a JSONL file: rows ``{line, raw}`` (see :class:`JsonlLines`), in
    order, read by ``readers`` tasks at a time. Reading is light (one reader keeps about 30 workers busy):
    it reserves no CPU, which the cloaking actors hold, and runs few at a time, since each task at once
    is a Python process for Ray to start."""
    return ray.data.read_datasource(JsonlLines(path, start, stop, block_lines), num_cpus=0, concurrency=readers)


class _Cloak:
    """The map_batches callable: built once per actor (the transform's tables with it), then a batch at a
    time. (Named for what it first did; its actors show as ``MapBatches(_Cloak)``.)"""

    def __init__(self, transform: RecordTransform, text_field: str, name: str, key: str) -> None:
        self.transform = transform.prepare()
        self.text_field, self.name, self.key = text_field, name, key

    def __call__(self, batch: pa.Table) -> pa.Table:
        if "raw" in batch.column_names:
            results = transform_lines(list(zip(batch["line"].to_pylist(), batch["raw"].to_pylist())),
                                      self.transform, self.text_field, self.name)
        else:
            results = [self._cloak_record(row) for row in batch.to_pylist()]
        columns: dict[str, list] = {name: [] for name in OUTPUT.names}
        for number, lines, changed, extra in results:  # extra: the edits' ops, or a bad line's RecordError
            for name, value in zip(OUTPUT.names, (number, lines, changed, extra if lines is not None else None,
                                                  None if lines is not None else json.dumps(extra))):
                columns[name].append(value)
        return pa.table(columns, schema=OUTPUT)

    def _cloak_record(self, row: dict) -> LineResult:
        number = row.pop(self.key)
        try:
            if self.text_field not in row:
                raise RecordError(self.name, number, "missing", self.text_field)
            check_text(row[self.text_field], self.name, number, self.text_field)
        except RecordError as e:
            return number, None, 0, (e.path, e.line, e.message, e.field)
        return number, *self.transform.transform(number, row, self.text_field)


def perturb_dataset(ds: ray.data.Dataset, ops: str | Sequence = "homophone", *, targets="lexicon",
                    rate: float | None = None, seed: int = 0, protect: str | None = DEFAULT_PROTECT,
                    variants: int = 1, text_field: str = "text", key: str = "line",
                    perturber: Perturber | None = None, workers: int | None = None,
                    name: str = "<dataset>") -> ray.data.Dataset:
    """Cloak a Ray Dataset of records as ``cloak perturb`` does, on a pool of Ray actors.

    ``ds``: rows ``{line, raw}`` (JSONL lines, as :func:`read_jsonl` gives; parsed and checked on the
    actors) or records ``{key, text, ...}``, where ``key`` (an integer column) is the record's place,
    which with ``seed`` and the variant fixes its cloak (``cloak perturb`` uses the line number).
    ``perturber`` replaces ``ops``, ``targets``, ``rate``, ``seed`` and ``protect``. ``workers``: actors
    (default: one per CPU of the cluster). ``name`` names the input in errors.

    Returns rows in input order: ``line`` (the key), ``jsonl`` (the output lines, one per variant, as the
    command writes them), ``changed`` (variants with an edit), ``ops`` (each edit's op) and ``error``
    (for a bad record: JSON of the file, line, message and field; ``jsonl`` is then null).
    """
    perturber = perturber or Perturber(ops=ops, targets=targets, rate=rate, seed=seed, protect=protect)
    return transform_dataset(ds, Cloaking(perturber, variants), text_field=text_field, key=key, workers=workers,
                             name=name)


def transform_dataset(ds: ray.data.Dataset, transform: RecordTransform, *, text_field: str = "text",
                      key: str = "line", workers: int | None = None, name: str = "<dataset>") -> ray.data.Dataset:
    """Any record transform (``cloak.run.Cloaking``, ``cloak.unveil.Unveiling``) over a Ray Dataset, as
    :func:`perturb_dataset` cloaks one: the same rows in, the same columns out."""
    out = ds.map_batches(_Cloak, batch_size=None, batch_format="pyarrow", zero_copy_batch=True,
                         fn_constructor_kwargs={"transform": transform, "text_field": text_field, "name": name,
                                                "key": key},
                         compute=ray.data.ActorPoolStrategy(size=workers or cluster_cpus()), num_cpus=1)
    out.context.execution_options.preserve_order = True  # the seeds do not need it; the output file does
    out.context.enable_progress_bars = False  # the command shows its own
    return out


class RayEngine:
    """``cloak.run.run_file``'s engine on Ray: ``perturb_file(..., engine=RayEngine(address))``.

    ``workers``: actors (default: one per CPU of the cluster); ``plugins``: modules of one's own ops (or
    unveil scorers), shipped to the workers by value (they need not be installed there).
    """

    def __init__(self, address: str | None = None, workers: int | None = None,
                 plugins: Sequence[ModuleType] = ()) -> None:
        connect(address)
        for module in plugins:
            ray.cloudpickle.register_pickle_by_value(module)
        self.workers = workers or cluster_cpus()

    def results(self, path: str, start: int, stop: int, transform: RecordTransform,
                text_field: str) -> Iterator[LineResult]:
        per_worker = math.ceil((stop - start) / (BLOCKS_PER_WORKER * self.workers))
        ds = read_jsonl(path, start=start, stop=stop, block_lines=min(BLOCK_LINES, max(MIN_BLOCK_LINES, per_worker)),
                        readers=math.ceil(self.workers / WORKERS_PER_READER))
        cloaked = transform_dataset(ds, transform, text_field=text_field, workers=self.workers, name=path)
        previous = start
        for batch in cloaked.iter_batches(batch_size=None, batch_format="pyarrow"):
            for line, jsonl, changed, ops, error in zip(*(batch[c].to_pylist() for c in OUTPUT.names)):
                if line <= previous:  # never write a file out of order
                    raise RuntimeError(f"Ray returned line {line} after line {previous}: the order was lost")
                previous = line
                yield (line, jsonl, changed, ops) if error is None else (line, None, 0, tuple(json.loads(error)))
