"""Hugging Face datasets: Dataset.map of cloak.hf's batch functions gives the commands' records byte for byte
at any num_proc, and the commands read and write Parquet and saved Datasets as they do JSONL."""
import sys

import pytest
from click.testing import CliRunner

from cloak import Perturber, Unveiler
from cloak.cli import main
from cloak.common.io import RecordError, dump_record
from cloak.hf import perturb_batch, unveil_batch

from .conftest import SAMPLE, cloak_quietly, perturb_interrupted_then_resumed, read_jsonl

datasets = pytest.importorskip("datasets")
pq = pytest.importorskip("pyarrow.parquet")

POSTS = 50
OPS = "homophone,emoji,split"
SEED = 3


def as_jsonl(rows: list[dict]) -> bytes:
    """Rows as the commands write records."""
    return b"".join(map(dump_record, rows))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The first 50 bundled COLD test posts as JSONL, Parquet and a saved Dataset, and the commands' outputs
    on the JSONL: cloaked (two variants each) and those cloaks unveiled."""
    folder = tmp_path_factory.mktemp("hf")
    posts = folder / "posts.jsonl"
    posts.write_bytes(b"".join(SAMPLE.read_bytes().splitlines(keepends=True)[:POSTS]))
    dataset = datasets.Dataset.from_list(read_jsonl(posts))
    dataset.to_parquet(str(folder / "posts.parquet"))
    dataset.save_to_disk(str(folder / "posts_dataset"))
    cloak_quietly("perturb", "--in", str(posts), "--out", str(folder / "cloaked.jsonl"),
                  "--ops", OPS, "--seed", str(SEED), "--variants", "2")
    cloak_quietly("unveil", "--in", str(folder / "cloaked.jsonl"), "--out", str(folder / "unveiled.jsonl"))
    return folder


@pytest.fixture(scope="module")
def unveiler():
    return Unveiler().prepare()  # before the workers fork: they inherit its tables


@pytest.mark.parametrize("num_proc", [1, 2])
def test_map_gives_the_perturb_command_s_records(files, num_proc):
    posts = datasets.Dataset.from_list(read_jsonl(files / "posts.jsonl"))
    batch = perturb_batch(Perturber(ops=OPS, seed=SEED), variants=2)
    cloaked = posts.map(batch, batched=True, with_indices=True, num_proc=num_proc, batch_size=16,
                        features=batch.features(posts.features))
    assert len(cloaked) == 2 * POSTS
    assert as_jsonl(cloaked.to_list()) == (files / "cloaked.jsonl").read_bytes()
    assert str(cloaked.features.arrow_schema.field("cloak").type).startswith("struct<ops: list<")  # not a string


@pytest.mark.parametrize("num_proc", [1, 2])
def test_map_gives_the_unveil_command_s_records(files, unveiler, num_proc):
    cloaked = datasets.Dataset.from_list(read_jsonl(files / "cloaked.jsonl"))
    unveiled = unveil_batch(unveiler).map(cloaked, num_proc=num_proc, batch_size=16)
    assert as_jsonl(unveiled.to_list()) == (files / "unveiled.jsonl").read_bytes()
    assert unveiled.column_names[-2:] == ["unveiled_from", "unveil"] and "cloak" in unveiled.column_names


def test_a_first_batch_without_an_edit_keeps_the_edits_types(tmp_path):
    """Without features=, the first batch written fixes the column types: its edits, all empty, would be a
    list of nulls that the next batch's edits cannot be written into."""
    rows = read_jsonl(SAMPLE)[:20]
    for row in rows[:8]:
        row["text"] = "今天天气很好"
    posts = tmp_path / "posts.jsonl"
    posts.write_bytes(as_jsonl(rows))
    cloak_quietly("perturb", "--in", str(posts), "--out", str(tmp_path / "cloaked.jsonl"), "--seed", str(SEED))
    cloaked = perturb_batch(Perturber(seed=SEED)).map(datasets.Dataset.from_list(rows), batch_size=8)
    assert as_jsonl(cloaked.to_list()) == (tmp_path / "cloaked.jsonl").read_bytes()


def test_the_batch_function_needs_the_indices_and_a_text_column():
    batch = perturb_batch(Perturber())
    with pytest.raises(TypeError, match="with_indices=True"):
        batch({"text": ["白人都是垃圾"]})
    with pytest.raises(RecordError, match="field 'text': missing: the dataset's columns are content"):
        batch({"content": ["白人都是垃圾"]}, [0])
    with pytest.raises(RecordError, match="item 4: field 'text': is empty"):
        batch({"text": [" "]}, [4])


@pytest.mark.parametrize("source", ["posts.parquet", "posts_dataset"])
def test_the_commands_read_parquet_and_saved_datasets_as_jsonl(files, tmp_path, source):
    cloak_quietly("perturb", "--in", str(files / source), "--out", str(tmp_path / "cloaked.jsonl"), "--ops", OPS,
                  "--seed", str(SEED), "--variants", "2")
    assert (tmp_path / "cloaked.jsonl").read_bytes() == (files / "cloaked.jsonl").read_bytes()


def test_the_commands_shard_parquet_as_jsonl(files, tmp_path):
    for i in range(3):
        cloak_quietly("perturb", "--in", str(files / "posts.parquet"), "--out", str(tmp_path / f"{i}.jsonl"),
                      "--ops", OPS, "--seed", str(SEED), "--variants", "2", "--shard", f"{i}/3")
    shards = b"".join((tmp_path / f"{i}.jsonl").read_bytes() for i in range(3))
    assert shards == (files / "cloaked.jsonl").read_bytes()


@pytest.mark.parametrize("command", ["perturb", "unveil"])
def test_the_commands_write_parquet_and_saved_datasets_that_read_back_as_their_jsonl(files, tmp_path, command):
    source, expected = (("posts.jsonl", "cloaked.jsonl") if command == "perturb" else
                        ("cloaked.jsonl", "unveiled.jsonl"))
    options = ["--ops", OPS, "--seed", str(SEED), "--variants", "2"] if command == "perturb" else []
    cloak_quietly(command, "--in", str(files / source), "--out", str(tmp_path / "out.parquet"), *options)
    cloak_quietly(command, "--in", str(files / source), "--out", f"{tmp_path / 'out'}/", *options)
    parquet = pq.read_table(tmp_path / "out.parquet")
    saved = datasets.load_from_disk(str(tmp_path / "out"))
    assert as_jsonl(parquet.to_pylist()) == as_jsonl(saved.to_list()) == (files / expected).read_bytes()
    field = "cloak" if command == "perturb" else "unveil"
    assert str(parquet.schema.field(field).type).startswith("struct<ops: list<")  # nested, not a JSON string
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "out.parquet"]  # no partial file left
    # a saved Dataset is replaced by the next run's, as a file is
    cloak_quietly(command, "--in", str(files / source), "--out", str(tmp_path / "out"), *options)
    assert as_jsonl(datasets.load_from_disk(str(tmp_path / "out")).to_list()) == (files / expected).read_bytes()


def test_folders_that_are_not_saved_datasets_are_refused(files, tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("a")
    datasets.DatasetDict({"test": datasets.load_from_disk(str(files / "posts_dataset"))}).save_to_disk(
        str(tmp_path / "splits"))
    for args, message in [(["--in", str(tmp_path / "notes"), "--out", str(tmp_path / "o.jsonl")],
                           "is a folder but not a saved Hugging Face Dataset (it has no dataset_info.json)"),
                          (["--in", str(tmp_path / "splits"), "--out", str(tmp_path / "o.jsonl")],
                           f"is a saved DatasetDict: give one split's folder ({tmp_path / 'splits' / 'test'})"),
                          (["--in", str(files / "posts.jsonl"), "--out", str(tmp_path / "notes")],
                           "is a folder holding files, not a saved Dataset")]:
        result = CliRunner().invoke(main, ["perturb", *args])
        assert result.exit_code == 1 and message in result.stderr


def test_without_the_extra_the_error_names_it(files, tmp_path, monkeypatch):
    for module in ("datasets", "pyarrow", "pyarrow.parquet"):
        monkeypatch.setitem(sys.modules, module, None)  # import fails as if it were not installed
    for args in (["--in", str(files / "posts.jsonl"), "--out", str(tmp_path / "out.parquet")],
                 ["--in", str(files / "posts_dataset"), "--out", str(tmp_path / "out.jsonl")]):
        result = CliRunner().invoke(main, ["perturb", *args])
        assert result.exit_code == 1 and "need the optional extra hf" in result.stderr
        assert "pip install 'mmcloak[hf]'" in result.stderr
    assert not list(tmp_path.iterdir())  # it failed before doing anything
    with pytest.raises(ImportError, match=r"mmcloak\[hf\]"):
        perturb_batch(Perturber()).features({})


def test_an_interrupted_run_from_a_dataset_into_parquet_resumes(files, tmp_path, monkeypatch):
    out = tmp_path / "out.parquet"
    stats = perturb_interrupted_then_resumed(files / "posts_dataset", out, Perturber(ops=OPS, seed=SEED),
                                             monkeypatch, variants=2)
    assert stats.resumed_from_line == 16 and stats.read == POSTS
    assert as_jsonl(pq.read_table(out).to_pylist()) == (files / "cloaked.jsonl").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.parquet"]


def test_a_field_arrow_cannot_hold_is_named_and_the_records_kept(tmp_path):
    posts = tmp_path / "posts.jsonl"
    posts.write_bytes(as_jsonl([{"id": 1, "text": "白人都是垃圾"}, {"id": "b", "text": "黑人都是垃圾"}]))
    result = CliRunner().invoke(main, ["perturb", "--in", str(posts), "--out", str(tmp_path / "out.parquet"), "-q"])
    assert result.exit_code == 1 and "field 'id' cannot be one Arrow column" in result.stderr
    assert f"the records are kept as JSONL in {tmp_path / 'out.parquet.partial'}" in result.stderr
    assert [r["id"] for r in read_jsonl(tmp_path / "out.parquet.partial")] == [1, "b"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.parquet.partial", "posts.jsonl"]
