"""The file engine: identical output for any worker count or shard, and resumable."""
import json
import multiprocessing
import time

import pytest

from cloak import Perturber, apply_edits
from cloak.common.io import RecordError
from cloak.run import perturb_file

from .conftest import read_jsonl

OPS = "homophone,emoji,split,abbrev,pinyin,english"


@pytest.fixture(scope="module")
def perturber():
    return Perturber(ops=OPS, seed=5).prepare()


@pytest.fixture(scope="module")
def reference(tmp_path_factory, sample_path, perturber):
    out = tmp_path_factory.mktemp("ref") / "out.jsonl"
    stats = perturb_file(str(sample_path), str(out), perturber, variants=2, progress=False)
    return out.read_bytes(), stats


def test_output_records_keep_fields_and_record_edits(reference, sample_path):
    data, stats = reference
    records = [json.loads(line) for line in data.splitlines()]
    inputs = read_jsonl(sample_path)
    assert stats.read == 300 and stats.written == 600 == len(records)
    assert 0.5 < stats.changed / stats.written < 1.0
    assert sum(stats.edits.values()) == sum(len(r["cloak"]["edits"]) for r in records)
    for i, r in enumerate(records):
        source = inputs[i // 2]
        assert {k: v for k, v in r.items() if k not in ("text", "source_text", "cloak")} == \
            {k: v for k, v in source.items() if k != "text"}
        assert r["source_text"] == source["text"]
        assert r["cloak"]["seed"] == 5 and r["cloak"]["variant"] == i % 2
        assert apply_edits(r["source_text"], r["cloak"]["edits"]) == r["text"]
        assert set(r["cloak"]["ops"]) == {e["op"] for e in r["cloak"]["edits"]}


def test_workers_do_not_change_the_output(tmp_path, sample_path, perturber, reference):
    out = tmp_path / "out.jsonl"
    perturb_file(str(sample_path), str(out), perturber, variants=2, workers=2, progress=False)
    assert out.read_bytes() == reference[0]


def test_auto_workers_share_long_inputs_only(tmp_path, sample_path, perturber, monkeypatch):
    from cloak import run

    monkeypatch.setattr(run.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    assert run.auto_workers(300) == 1  # a pool costs more than 300 lines take
    assert run.auto_workers(2 * run.MIN_LINES_PER_AUTO_WORKER) == 2
    assert run.auto_workers(10**6) == 4 and run.auto_workers(None) == 4
    long = tmp_path / "long.jsonl"
    long.write_bytes(sample_path.read_bytes() * 8)  # 2,400 lines: two workers when two CPUs are there
    monkeypatch.setattr(run.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    one, auto = tmp_path / "one.jsonl", tmp_path / "auto.jsonl"
    perturb_file(str(long), str(one), perturber, workers=1, progress=False)
    stats = perturb_file(str(long), str(auto), perturber, workers=None, progress=False)
    assert stats.workers == 2 and "in 2 workers" in stats.summary()
    assert auto.read_bytes() == one.read_bytes()


def test_shards_concatenate_to_the_whole(tmp_path, sample_path, perturber, reference):
    parts = []
    for i in range(3):
        out = tmp_path / f"part{i}.jsonl"
        perturb_file(str(sample_path), str(out), perturber, variants=2, shard=f"{i}/3", progress=False)
        parts.append(out.read_bytes())
    assert b"".join(parts) == reference[0]
    with pytest.raises(ValueError, match="shard"):
        perturb_file(str(sample_path), str(tmp_path / "x"), perturber, shard="3/3")


def test_an_interrupted_run_resumes_without_loss_or_duplicates(tmp_path, sample_path, perturber,
                                                              reference, monkeypatch):
    import cloak.run as run

    out = tmp_path / "out.jsonl"
    monkeypatch.setattr(run, "CHUNK", 16)
    real = run._cloak_chunk
    calls = []

    def interrupt_after_five(chunk):
        calls.append(1)
        if len(calls) == 6:
            raise KeyboardInterrupt
        return real(chunk)

    monkeypatch.setattr(run, "_cloak_chunk", interrupt_after_five)
    with pytest.raises(KeyboardInterrupt):
        perturb_file(str(sample_path), str(out), perturber, variants=2, progress=False)
    assert not out.exists() and (tmp_path / "out.jsonl.partial").exists()
    monkeypatch.setattr(run, "_cloak_chunk", real)
    stats = perturb_file(str(sample_path), str(out), perturber, variants=2, resume=True, progress=False)
    assert stats.resumed_from_line == 80
    assert out.read_bytes() == reference[0]
    assert stats.read == 300 and stats.written == 600
    assert not (tmp_path / "out.jsonl.partial").exists()


@pytest.mark.slow
def test_output_does_not_depend_on_the_hash_seed_or_the_cache(tmp_path, sample_path):
    """Tables are rebuilt in each process here: their order must not follow Python's hash seed."""
    import os
    import subprocess
    import sys

    outputs = []
    for hash_seed in ("1", "2"):
        out = tmp_path / f"out{hash_seed}.jsonl"
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "MMCLOAK_CACHE": str(tmp_path / hash_seed)}
        subprocess.run([sys.executable, "-m", "cloak.cli", "perturb", "--in", str(sample_path),
                        "--out", str(out), "--ops", OPS, "-q"], env=env, check=True)
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]


def test_a_failing_run_stops_its_workers_before_it_raises(tmp_path, sample_path, perturber):
    # Library users (a notebook, a service) go on after the error: no worker may outlive the call.
    lines = sample_path.read_bytes().splitlines(keepends=True)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"".join(lines * 4) + b"{not json\n" + b"".join(lines * 4))
    with pytest.raises(RecordError) as failure:
        perturb_file(str(bad), str(tmp_path / "out.jsonl"), perturber, workers=2, progress=False)
    assert failure.value.line == 1201
    assert multiprocessing.active_children() == []


def _square_slowly(x: int) -> int:
    time.sleep(0.01)
    return x * x


def test_workers_give_results_in_order_and_stop_in_order():
    """Stopping half-way lets the tasks under way finish and skips the rest (Pool.terminate() could
    kill a worker while it wrote a result, and the pool's shutdown then hung on the queue's lock)."""
    from cloak.common.workers import ordered_map

    assert list(ordered_map(_square_slowly, range(40), 2, start_method="fork")) == [x * x for x in range(40)]
    started = time.monotonic()
    results = ordered_map(_square_slowly, range(10_000), 2, start_method="fork")
    assert [next(results) for _ in range(5)] == [0, 1, 4, 9, 16]
    results.close()
    assert multiprocessing.active_children() == [] and time.monotonic() - started < 30
