import json

import pytest

from cloak.convert import read_dataset
from cloak.common.io import RecordError


def test_toxicn(tmp_path):
    path = tmp_path / "train.json"
    path.write_text(json.dumps([{"content": "黑人滚", "toxic": 1, "toxic_type": 2, "expression": 1,
                                 "target": [0, 1, 0, 0, 0]}], ensure_ascii=False), encoding="utf-8")
    assert list(read_dataset("toxicn", str(path))) == [
        {"id": "toxicn-train-0", "text": "黑人滚", "label": 1, "toxic_type": 2, "expression": 1,
         "target": [0, 1, 0, 0, 0]}]


def test_toxicloakcn_tsv_and_csv(tmp_path):
    tsv = tmp_path / "homo_full.tsv"
    tsv.write_text("content\ttoxic\n嘿人滚\t1\n今天天气好\t0\n", encoding="utf-8")
    assert [(r["text"], r["label"]) for r in read_dataset("toxicloakcn", str(tsv))] == \
        [("嘿人滚", 1), ("今天天气好", 0)]
    csv_ = tmp_path / "emoji_keyword.csv"
    csv_.write_text('text,label\n"🐶东西,滚",1\n', encoding="utf-8")
    assert list(read_dataset("toxicloakcn", str(csv_))) == \
        [{"id": "toxicloakcn-emoji_keyword-0", "text": "🐶东西,滚", "label": 1}]


def test_cntp(tmp_path):
    path = tmp_path / "cntp.json"
    path.write_text(json.dumps({"results": [{"sentence_id": 9, "original_text": "黑人滚", "is_toxic": 1,
                                             "toxic_entity": "黑人", "perturbed_text": "hei人滚"}]}),
                    encoding="utf-8")
    assert list(read_dataset("cntp", str(path))) == [
        {"id": "cntp-cntp-0", "text": "hei人滚", "source_text": "黑人滚", "label": 1, "sentence_id": 9,
         "toxic_entity": "黑人"}]


def test_generic_tables(tmp_path):
    path = tmp_path / "posts.tsv"
    path.write_text("pid\tbody\tis_hate\n a1\t黑人滚\t1\n", encoding="utf-8")
    assert list(read_dataset("tsv", str(path), text_col="body", label_col="is_hate", id_col="pid")) == \
        [{"id": "tsv-posts- a1", "text": "黑人滚", "label": 1}]
    unlabelled = list(read_dataset("tsv", str(path), text_col="body", label_col=None))
    assert unlabelled[0]["is_hate"] == "1" and "label" not in unlabelled[0]


def test_ids_are_unique_even_where_the_data_repeats_its_own(tmp_path):
    """COLD's train and dev files repeat their index column (6,030 of train's ids are shared)."""
    path = tmp_path / "train.csv"
    path.write_bytes("\ufeff,split,topic,label,TEXT\n7,train,race,1,黑人滚\n7,train,race,0,今天天气好\n".encode())
    records = list(read_dataset("cold", str(path)))
    assert [(r["id"], r["cold_index"]) for r in records] == [("cold-train-0", "7"), ("cold-train-1", "7")]
    posts = tmp_path / "posts.csv"
    posts.write_text("pid,text,label\na,黑人滚,1\nb,今天,0\n\"a\",又来,1\n", encoding="utf-8")
    with pytest.raises(RecordError, match="posts.csv, line 4: field 'id': duplicate id 'csv-posts-a', first seen on line 2"):
        list(read_dataset("csv", str(posts), id_col="pid"))


@pytest.mark.parametrize("label", ["maybe", "-1", "inf", "0.7", ""])
def test_labels_must_be_non_negative_integers(tmp_path, label):
    path = tmp_path / "posts.csv"
    path.write_text(f"text,label\n黑人滚,1\n白人滚,{label}\n", encoding="utf-8")
    with pytest.raises(RecordError, match=r"posts.csv, line 3: field 'label': must be a non-negative integer"):
        list(read_dataset("csv", str(path)))


def test_invalid_utf8_is_named_by_line(tmp_path):
    path = tmp_path / "posts.csv"
    path.write_bytes("text,label\n黑人滚,1\n".encode() + "白人滚,0\n".encode("gbk") + b"ok,1\n")
    with pytest.raises(RecordError, match=r"posts.csv, line 3: invalid UTF-8 at byte 0"):
        list(read_dataset("csv", str(path)))
    tox = tmp_path / "test.json"
    tox.write_bytes(b'[\n{"content": "a", "toxic": 1},\n{"content": "' + "黑".encode("gbk") + b'", "toxic": 0}\n]')
    with pytest.raises(RecordError, match=r"test.json, line 3: invalid UTF-8"):
        list(read_dataset("toxicn", str(tox)))


def test_bad_data_is_named(tmp_path):
    path = tmp_path / "posts.csv"
    path.write_text("text,label\n黑人滚,maybe\n", encoding="utf-8")
    with pytest.raises(RecordError, match=r"posts.csv, line 2: field 'label': must be a non-negative integer"):
        list(read_dataset("csv", str(path)))
    path.write_text("text,label\n,1\n", encoding="utf-8")
    with pytest.raises(RecordError, match="line 2: field 'text': is empty"):
        list(read_dataset("csv", str(path)))
    with pytest.raises(ValueError, match="unknown format"):
        read_dataset("parquet", str(path))
