"""CSV and TSV record files: cloak perturb and cloak unveil read and write them as they do JSONL (a row a
record, its number the line number), the nested fields as JSON in their cells, and refuse a table without
the text column or with a ragged row before writing anything. Python's csv: no extra needed."""
import csv
import io
import json

import pytest
from click.testing import CliRunner

from cloak import Perturber
from cloak.cli import main
from cloak.common.formats import record_format
from cloak.common.io import dump_record

from .conftest import SAMPLE, cloak_quietly, perturb_interrupted_then_resumed, read_jsonl

POSTS = 30
OPS = "homophone,emoji,split"
SEED = 3


def write_table(path, rows: list[dict], delimiter: str) -> None:
    """Rows as a spreadsheet or pandas writes them: every value a cell, the label a number's digits."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]), delimiter=delimiter)
        writer.writeheader()
        writer.writerows(rows)


def read_table(path, delimiter: str = ",") -> list[list[str]]:
    return list(csv.reader(io.StringIO(open(path, encoding="utf-8", newline="").read()), delimiter=delimiter))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The first 30 bundled COLD test posts (id, text, label) as JSONL, CSV and TSV, and the commands' JSONL
    outputs on the JSONL: cloaked (two variants each) and those cloaks unveiled."""
    folder = tmp_path_factory.mktemp("csv")
    rows = [{"id": r["id"], "text": r["text"], "label": r["label"]} for r in read_jsonl(SAMPLE)[:POSTS]]
    rows[4]["text"] = "一行\n两行, \"引号\"\t制表"  # a cell csv must quote
    (folder / "posts.jsonl").write_bytes(b"".join(map(dump_record, rows)))
    write_table(folder / "posts.csv", rows, ",")
    write_table(folder / "posts.tsv", rows, "\t")
    cloak_quietly("perturb", "--in", str(folder / "posts.jsonl"), "--out", str(folder / "cloaked.jsonl"), "--ops", OPS,
                  "--seed", str(SEED), "--variants", "2")
    cloak_quietly("unveil", "--in", str(folder / "cloaked.jsonl"), "--out", str(folder / "unveiled.jsonl"))
    return folder


@pytest.mark.parametrize("source", ["posts.csv", "posts.tsv"])
def test_perturb_from_a_table_gives_the_jsonl_s_cloaks(files, tmp_path, source):
    cloak_quietly("perturb", "--in", str(files / source), "--out", str(tmp_path / "cloaked.jsonl"), "--ops", OPS,
                  "--seed", str(SEED), "--variants", "2")
    assert (tmp_path / "cloaked.jsonl").read_bytes() == (files / "cloaked.jsonl").read_bytes()
    assert read_jsonl(tmp_path / "cloaked.jsonl")[0]["label"] == 1  # a number, as in the JSONL, not "1"


def test_perturb_shards_a_table_as_jsonl(files, tmp_path):
    for i in range(3):
        cloak_quietly("perturb", "--in", str(files / "posts.csv"), "--out", str(tmp_path / f"{i}.jsonl"), "--ops", OPS,
                      "--seed", str(SEED), "--variants", "2", "--shard", f"{i}/3")
    shards = b"".join((tmp_path / f"{i}.jsonl").read_bytes() for i in range(3))
    assert shards == (files / "cloaked.jsonl").read_bytes()


def read_back(path) -> bytes:
    """A record file as the commands read it, as JSONL."""
    return b"".join(line + b"\n" for _, line in record_format(str(path)).read_lines(str(path)))


@pytest.mark.parametrize("suffix", ["csv", "tsv"])
def test_a_table_the_commands_write_reads_back_as_their_jsonl_and_unveil_reads_perturb_s(files, tmp_path, suffix):
    cloaked, unveiled = tmp_path / f"cloaked.{suffix}", tmp_path / f"unveiled.{suffix}"
    cloak_quietly("perturb", "--in", str(files / "posts.jsonl"), "--out", str(cloaked),
                  "--ops", OPS, "--seed", str(SEED), "--variants", "2")
    table = read_table(cloaked, "\t" if suffix == "tsv" else ",")
    assert table[0] == ["id", "text", "label", "source_text", "cloak"]  # the input's columns, then perturb's
    assert table[1][2] == "1" and json.loads(table[1][4])["seed"] == SEED and ", " not in table[1][4]  # compact
    assert read_back(cloaked) == (files / "cloaked.jsonl").read_bytes()
    cloak_quietly("unveil", "--in", str(cloaked), "--out", str(tmp_path / "unveiled.jsonl"))
    assert (tmp_path / "unveiled.jsonl").read_bytes() == (files / "unveiled.jsonl").read_bytes()
    cloak_quietly("unveil", "--in", str(cloaked), "--out", str(unveiled))
    assert read_table(unveiled, "\t" if suffix == "tsv" else ",")[0][-2:] == ["unveiled_from", "unveil"]
    assert read_back(unveiled) == (files / "unveiled.jsonl").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([cloaked.name, unveiled.name, "unveiled.jsonl"])


def test_what_a_table_cannot_keep_comes_back_as_strings_and_empty_cells(tmp_path):
    posts = tmp_path / "posts.jsonl"
    posts.write_bytes(b"".join(map(dump_record, [{"id": 7, "text": "白人都是垃圾", "label": 1, "score": 0.5},
                                                 {"id": "b", "text": "黑人都是垃圾", "note": None}])))
    cloak_quietly("perturb", "--in", str(posts), "--out", str(tmp_path / "out.csv"),
                  "--ops", "homophone", "--rate", "0")
    assert read_table(tmp_path / "out.csv")[0] == ["id", "text", "label", "score", "source_text", "cloak", "note"]
    first, second = (json.loads(line) for line in read_back(tmp_path / "out.csv").splitlines())
    assert (first["id"], first["label"], first["score"], first["note"]) == ("7", 1, "0.5", "")
    assert "label" not in second and second["score"] == "" and second["cloak"]["seed"] == 0


@pytest.mark.parametrize("table, message", [
    ("id,content\n1,白人都是垃圾\n", "posts.csv: no column 'text' (--text-field) in the header: ['id', 'content']"),
    ("id,text\n1,白人都是垃圾\n\n2,黑人,都是垃圾\n", "posts.csv: row 2 (line 4): 3 cells, but the header has 2 columns"),
    ("id,text\n1,白人都是垃圾\n2\n", "posts.csv: row 2 (line 3): 1 cell, but the header has 2 columns"),
    ("id,text,label\n1,白人都是垃圾,yes\n", "posts.csv: row 1 (line 2): field 'label': must be a non-negative integer"),
    ("id,text,cloak\n1,白人都是垃圾,{ops\n", "posts.csv: row 1 (line 2): field 'cloak': Expecting property name"),
    ("id,text\n", "posts.csv: no records: the file is empty"),
    ("id,text,id\n1,白人都是垃圾,2\n", "posts.csv: column 'id' twice in the header: ['id', 'text', 'id']"),
])
@pytest.mark.parametrize("command", ["perturb", "unveil"])
def test_a_table_without_the_text_column_or_with_a_bad_row_is_refused_before_anything_is_written(
        tmp_path, table, message, command):
    (tmp_path / "posts.csv").write_text(table, encoding="utf-8")
    result = CliRunner().invoke(main, [command, "--in", str(tmp_path / "posts.csv"), "--out",
                                       str(tmp_path / "out.csv"), "--workers", "1", "-q"])
    assert result.exit_code == 1 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["posts.csv"]


def test_text_field_names_the_column(tmp_path):
    (tmp_path / "posts.tsv").write_text("id\tcontent\n1\t白人都是垃圾\n", encoding="utf-8")
    cloak_quietly("perturb", "--in", str(tmp_path / "posts.tsv"), "--out", str(tmp_path / "out.jsonl"), "--text-field",
                  "content", "--ops", "homophone", "--rate", "1")
    (record,) = read_jsonl(tmp_path / "out.jsonl")
    assert record["source_text"] == "白人都是垃圾" and record["content"] != "白人都是垃圾"


def test_an_interrupted_run_from_a_table_into_a_table_resumes(files, tmp_path, monkeypatch):
    out = tmp_path / "out.csv"
    stats = perturb_interrupted_then_resumed(files / "posts.csv", out, Perturber(ops=OPS, seed=SEED), monkeypatch,
                                             variants=2, calls=2)
    assert stats.resumed_from_line == 8 and stats.read == POSTS
    assert read_back(out) == (files / "cloaked.jsonl").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]


def test_perturb_mines_its_targets_from_a_table_as_from_jsonl(tmp_path):
    rows = [{"id": r["id"], "text": r["text"], "label": r["label"]} for r in read_jsonl(SAMPLE)]
    (tmp_path / "posts.jsonl").write_bytes(b"".join(map(dump_record, rows)))
    write_table(tmp_path / "posts.csv", rows, ",")
    for source in ("posts.jsonl", "posts.csv"):
        cloak_quietly("perturb", "--in", str(tmp_path / source), "--out", str(tmp_path / f"{source}.out.jsonl"),
                      "--targets", "mined")
    cloaked = (tmp_path / "posts.jsonl.out.jsonl").read_bytes()
    assert (tmp_path / "posts.csv.out.jsonl").read_bytes() == cloaked and b'"edits": []' in cloaked
