"""`cloak perturb` and `attacks evaluate` on a real Ray cluster (a head and a worker node on 127.0.0.1,
one worker process each): the same bytes as the local commands, a killed worker included."""
from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import threading
import time

import pytest
from click.testing import CliRunner

from cloak import Perturber
from cloak.run import perturb_file

from .conftest import cli_in_fresh_python, read_jsonl

OPS = "homophone,emoji,split,abbrev,pinyin,english"
# Read once, when Ray is imported: without it a driver turns 127.0.0.1 into this machine's network
# address, where a cluster bound to 127.0.0.1 does not answer (and ray.init waits for ever).
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"


@pytest.fixture(scope="module")
def cluster():
    """The cluster's address; started once for the module (Ray takes seconds to start on two cores)."""
    pytest.importorskip("ray.data")
    import ray
    from ray.cluster_utils import Cluster

    short = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # Ray's socket paths must fit in 107 bytes
    with pytest.MonkeyPatch.context() as env:
        env.setenv("RAY_TMPDIR", short)  # its session files, and the address file `ray.init()` reads
        nodes = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 1, "node_ip_address": "127.0.0.1", "include_dashboard": False})
        try:
            nodes.add_node(num_cpus=1, node_ip_address="127.0.0.1")
            yield nodes.address
        finally:
            ray.shutdown()
            nodes.shutdown()
            shutil.rmtree(short, ignore_errors=True)


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def ray_processes(title: str) -> list[int]:
    """Our cluster's worker processes whose title (Ray sets it to ``ray::Class...``) contains ``title``:
    the cluster's nodes are this process's children, so theirs are its descendants."""
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                if title.encode() not in f.read():
                    continue
            ancestor = int(name)
            while ancestor > 1 and ancestor != os.getpid():
                ancestor = _parent(ancestor)
        except OSError:  # gone meanwhile
            continue
        if ancestor == os.getpid():
            found.append(int(name))
    return found


def kill_one_when(title: str, ready, running: threading.Thread) -> int:
    """SIGKILL one worker process titled ``title`` once ``ready()``, while ``running`` still runs."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and running.is_alive():
        pids = ray_processes(title)
        if pids and ready():
            os.kill(pids[0], signal.SIGKILL)
            return pids[0]
        time.sleep(0.05)
    raise AssertionError(f"no {title} worker to kill while the run was going")


@pytest.fixture(scope="module")
def posts(tmp_path_factory, sample_path):
    """The bundled COLD posts as a user's file may hold them: a byte-order mark, CRLF line ends, blank
    lines, a bad line, and posts of every length (one 1,500 characters long)."""
    lines = sample_path.read_bytes().splitlines()
    long_post = json.dumps({"id": "long", "text": "".join(json.loads(x)["text"] for x in lines[:40])[:1500],
                            "label": 1}, ensure_ascii=False).encode()
    body = [lines[0], b"", *lines[1:150], b"   ", b'{"id": "bad", "text": ""}', long_post, *lines[150:]]
    path = tmp_path_factory.mktemp("posts") / "posts.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b"\r\n".join(body[:100]) + b"\r\n" + b"\n".join(body[100:]))
    return path


@pytest.mark.slow
def test_perturb_on_ray_writes_the_local_commands_bytes(cluster, posts, tmp_path):
    from cloak.cli import main

    runner, outputs = CliRunner(), {}
    for engine in ("local", "ray"):
        out = tmp_path / f"{engine}.jsonl"
        extra = ["--engine", "ray", "--address", cluster] if engine == "ray" else ["--workers", "1"]
        result = runner.invoke(main, ["perturb", "--in", str(posts), "--out", str(out), "--ops", OPS, "--variants", "2",
                                      "--seed", "3", "--on-error", "skip", *extra])
        assert result.exit_code == 0, result.output
        # Ray's own processes may write warnings (a disk near full, say) to the same stderr: find our line
        summary = next(line for line in result.stderr.splitlines() if line.startswith("cloak perturb: "))
        outputs[engine] = out.read_bytes(), summary.split("; ")
    (local, local_summary), (on_ray, ray_summary) = outputs["local"], outputs["ray"]
    assert on_ray == local and len(local.splitlines()) == 2 * 301
    assert ray_summary[:2] == local_summary[:2]  # the counts and the edits; not the time
    assert "skipped 1" in ray_summary[0] and "in 2 workers" in ray_summary[-1]
    records = read_jsonl(tmp_path / "ray.jsonl")
    assert records[0]["cloak"]["variant"] == 0 and records[1]["cloak"]["variant"] == 1
    assert any(r["id"] == "long" and r["text"] != r["source_text"] for r in records)


@pytest.mark.slow
def test_a_killed_ray_worker_changes_nothing_and_a_resumed_run_finishes_the_file(cluster, posts, tmp_path,
                                                                                   monkeypatch):
    from cloak.ray import RayEngine

    big = tmp_path / "big.jsonl"
    big.write_bytes(posts.read_bytes() * 12)  # 3,600 lines: several seconds of cloaking
    perturber = Perturber(ops=OPS, seed=1)
    reference = tmp_path / "local.jsonl"
    perturb_file(str(big), str(reference), perturber, variants=2, workers=1, on_error="skip", progress=False)
    out = tmp_path / "ray.jsonl"
    failures = []

    def run() -> None:
        try:
            perturb_file(str(big), str(out), perturber, variants=2, on_error="skip", progress=False,
                         engine=RayEngine(cluster))
        except BaseException as e:  # noqa: BLE001 (reported by the test below)
            failures.append(e)

    thread = threading.Thread(target=run)
    thread.start()
    partial = tmp_path / "ray.jsonl.partial"
    kill_one_when("MapBatches(_Cloak)", lambda: partial.exists() and partial.stat().st_size > 0, thread)
    thread.join(300)
    assert not failures and out.read_bytes() == reference.read_bytes()

    # a run interrupted on this machine is resumed on the cluster
    import cloak.run as run

    calls, real = [], run._cloak_chunk

    def interrupted(chunk):
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real(chunk)

    resumed = tmp_path / "resumed.jsonl"
    monkeypatch.setattr(run, "_cloak_chunk", interrupted)
    with pytest.raises(KeyboardInterrupt):
        perturb_file(str(big), str(resumed), perturber, variants=2, workers=1, on_error="skip", progress=False)
    monkeypatch.setattr(run, "_cloak_chunk", real)
    stats = perturb_file(str(big), str(resumed), perturber, variants=2, on_error="skip", resume=True,
                         progress=False, engine=RayEngine(cluster))
    assert stats.resumed_from_line > 0 and resumed.read_bytes() == reference.read_bytes()


@pytest.mark.slow
def test_perturb_dataset_cloaks_records_by_their_place(cluster, sample_path, tmp_path):
    """A dataset of records (from Parquet, say) with a column giving each one's place: the cloaks the
    command gives the lines at those places."""
    import ray

    from cloak.ray import connect, perturb_dataset

    connect(cluster)
    rows = read_jsonl(sample_path)[:60]
    reference = tmp_path / "local.jsonl"
    local_in = tmp_path / "in.jsonl"
    local_in.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    perturb_file(str(local_in), str(reference), Perturber(ops="homophone,emoji", seed=2), workers=1, progress=False)
    ds = ray.data.from_items([{"line": i + 1, **r} for i, r in enumerate(rows)] + [{"line": 61, "id": "x", "text": " "}])
    out = perturb_dataset(ds, ops="homophone,emoji", seed=2).take_all()
    assert [r["line"] for r in out] == list(range(1, 62))
    assert b"".join(line for r in out[:60] for line in r["jsonl"]) == reference.read_bytes()
    assert out[60]["jsonl"] is None and json.loads(out[60]["error"])[2] == "is empty"


def test_line_offsets_find_where_each_block_of_lines_starts(tmp_path):
    pytest.importorskip("ray.data")
    from cloak.ray import line_offsets

    path = tmp_path / "lines.jsonl"
    data = b"a\n\nbb\r\nccc\n" * 50000 + b"last"  # several 1 MiB reads, a last line without its end
    path.write_bytes(data)
    starts = [0] + [i + 1 for i, byte in enumerate(data) if byte == 10]
    wanted = [0, 1, 2, 3, 99999, 100000, 131071, 199999, 200000]
    assert line_offsets(str(path), wanted) == [starts[n] for n in wanted]
    assert line_offsets(str(path), [200001]) == [len(data)]


def test_standard_input_and_a_missing_ray_are_refused_clearly(tmp_path, sample_path):
    from cloak.cli import main

    result = CliRunner().invoke(main, ["perturb", "--in", "-", "--out", str(tmp_path / "o"), "--address", "x:1"])
    assert result.exit_code == 1 and "--address is for --engine ray" in result.output
    code, imported, _ = cli_in_fresh_python("cloak.cli", ["perturb", "--in", str(sample_path), "--out",
                                                          str(tmp_path / "o.jsonl"), "-q"], ("ray",))
    assert code == 0 and imported == [False]  # the local command never imports Ray
    code, imported, _ = cli_in_fresh_python("attacks.cli", ["evaluate", "--help"], ("ray",))
    assert code == 0 and imported == [False]


# ---- attacks evaluate ----

@pytest.fixture(scope="module")
def evaluation(tmp_path_factory, sample_path):
    """A tfidf-lr victim and the posts to attack; the local command's output folder."""
    from attacks.cli import main

    rows = read_jsonl(sample_path)
    root = tmp_path_factory.mktemp("evaluate")
    train, data = root / "train.jsonl", root / "test.jsonl"
    train.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows[:200]), encoding="utf-8")
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows[200:]), encoding="utf-8")
    victim = str(root / "tfidf-lr")
    assert CliRunner().invoke(main, ["train", "--model", "tfidf-lr", "--train", str(train), "--out", victim]).exit_code == 0
    args = ["evaluate", "--victim", victim, "--data", str(data), "--attacks", "cloak,search", "--ops",
            "homophone,emoji,homophone+split", "--variants", "2", "--batch-size", "8", "-q"]
    result = CliRunner().invoke(main, [*args, "--out", str(root / "local")])
    assert result.exit_code == 0, result.output
    return args, root


def outcome_files(folder) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*.jsonl"))
            if "ray-shards" not in p.parts}


@pytest.mark.slow
def test_evaluate_on_ray_writes_the_local_summary_and_resumes(cluster, evaluation):
    from attacks.cli import main

    args, root = evaluation
    out = root / "ray"
    result = CliRunner().invoke(main, [*args, "--engine", "ray", "--address", cluster, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "summary.json").read_bytes() == (root / "local" / "summary.json").read_bytes()
    assert outcome_files(out) == outcome_files(root / "local")
    assert sorted(p.name for p in (out / "ray-shards").iterdir()) == [f"{i}-of-8" for i in range(8)]  # 4 a worker
    (out / "summary.json").unlink()
    again = CliRunner().invoke(main, [*args, "--engine", "ray", "--address", cluster, "--workers", "1",
                                      "--out", str(out)])
    assert again.exit_code == 0, again.output  # the same shards, found done: the summary merged again
    assert (out / "summary.json").read_bytes() == (root / "local" / "summary.json").read_bytes()
    bad = CliRunner().invoke(main, [*args, "--engine", "ray", "--shard", "0/2", "--out", str(root / "x")])
    assert bad.exit_code == 1 and "--engine ray cuts and merges the shards itself" in bad.output


@pytest.mark.slow
def test_a_defence_on_ray_is_evaluated_as_on_this_machine(cluster, evaluation):
    """Each actor puts the same unveiler in front of the victim it loads: NAME+unveil's outcomes are the
    local run's, byte for byte."""
    from attacks.cli import main

    args, root = evaluation
    defended = [*args, "--limit", "24", "--defence", "unveil:families=sound+emoji"]
    local = CliRunner().invoke(main, [*defended, "--out", str(root / "defended-local")])
    assert local.exit_code == 0, local.output
    on_ray = CliRunner().invoke(main, [*defended, "--engine", "ray", "--address", cluster,
                                       "--out", str(root / "defended-ray")])
    assert on_ray.exit_code == 0, on_ray.output
    summary = (root / "defended-ray" / "summary.json").read_bytes()
    assert summary == (root / "defended-local" / "summary.json").read_bytes()
    assert "tfidf-lr+unveil" in json.loads(summary)["victims"]
    assert outcome_files(root / "defended-ray") == outcome_files(root / "defended-local")


@pytest.mark.slow
def test_a_killed_evaluate_worker_is_restarted_and_its_shard_finished(cluster, evaluation):
    from attacks.cli import main

    args, root = evaluation
    out, results = root / "killed", []
    thread = threading.Thread(target=lambda: results.append(CliRunner().invoke(
        main, [*args, "--engine", "ray", "--address", cluster, "--out", str(out)])))
    thread.start()
    shards = out / "ray-shards"
    kill_one_when("ShardEvaluator", lambda: shards.is_dir() and any(shards.rglob("cloak-*.jsonl")), thread)
    thread.join(300)
    assert results and results[0].exit_code == 0, results and results[0].output
    assert (out / "summary.json").read_bytes() == (root / "local" / "summary.json").read_bytes()
    assert outcome_files(out) == outcome_files(root / "local")


def test_torch_victims_are_the_ones_that_ask_for_gpus(tmp_path):
    pytest.importorskip("ray.data")
    from attacks.ray_engine import uses_torch

    for kind, torch in (("conventional", False), ("llm", False), ("bert", True), ("habertor", True)):
        (tmp_path / kind).mkdir()
        (tmp_path / kind / "victim.json").write_text(json.dumps({"format": 1, "kind": kind}))
        assert uses_torch(str(tmp_path / kind)) is torch
    (tmp_path / "mmbert").mkdir()  # an `mmbert train` folder has no victim.json
    (tmp_path / "mmbert" / "config.json").write_text(json.dumps({"model_type": "mmbert", "num_labels": 2}))
    assert uses_torch(str(tmp_path / "mmbert"))
