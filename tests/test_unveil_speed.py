"""cloak unveil's start-up: what it derives from files and dictionaries is kept in the cache directory, read
back only while what it came from is unchanged, and reads back exactly what was built."""
from __future__ import annotations

import gzip
import pickle
import subprocess
import sys

import pytest

from cloak.common.cache import disk_cached
from cloak.unveil import CharNgramLM, ngram

from .conftest import ROOT

TEXTS = ["白人都是垃圾", "黑人都是好人", "白人黑人都是人", "我们都是中国人"]
OTHER = ["今天天气很好", "我们去公园散步吧", "这家店的面条味道不错"]
PROBES = ["白人都是人", "今天我们都是好人", "龘"]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("MMCLOAK_CACHE", str(folder))
    return folder


def _parses(monkeypatch) -> list[str]:
    """The model files parsed from here on (not read from the cache), by name."""
    parsed: list[str] = []
    real = CharNgramLM._read.__func__

    def counting(cls, raw, name):
        parsed.append(name)
        return real(cls, raw, name)

    monkeypatch.setattr(CharNgramLM, "_read", classmethod(counting))
    return parsed


def test_a_cached_model_scores_as_the_file_parsed(cache, tmp_path, monkeypatch):
    path = tmp_path / "m.lm.gz"
    CharNgramLM.fit(TEXTS, order=3, min_count=1).save(path)
    parsed = _parses(monkeypatch)
    first, second = CharNgramLM.load(path), CharNgramLM.load(path)
    assert parsed == [str(path)]  # the second came from the cache
    assert len(list(cache.glob("ngram-*.pkl"))) == 1
    assert (second.order, second.unknown, second.info) == (first.order, first.unknown, first.info)
    assert list(second.logprob_.items()) == list(first.logprob_.items())
    assert list(second.backoff_.items()) == list(first.backoff_.items())
    assert [second.logprob(t) for t in PROBES] == [first.logprob(t) for t in PROBES]  # exactly


def test_the_shipped_model_is_cached_too(cache, monkeypatch):
    parsed = _parses(monkeypatch)
    first, second = CharNgramLM.load(), CharNgramLM.load()
    assert parsed == [ngram.SHIPPED]
    assert [second.logprob(t) for t in PROBES] == [first.logprob(t) for t in PROBES]


def test_a_changed_model_file_is_parsed_again(cache, tmp_path, monkeypatch):
    path = tmp_path / "m.lm.gz"
    CharNgramLM.fit(TEXTS, order=3, min_count=1).save(path)
    before = CharNgramLM.load(path)
    CharNgramLM.fit(OTHER, order=3, min_count=1).save(path)  # the same file name, other n-grams
    parsed = _parses(monkeypatch)
    after = CharNgramLM.load(path)
    assert parsed == [str(path)]
    assert after.logprob("今天天气很好") != before.logprob("今天天气很好")
    with open(path, "rb") as f:
        assert after.logprob_ == CharNgramLM._read(f, "m").logprob_


class _Runs:
    """A pickle that calls a function when loaded, as a cache file put there by someone else might."""

    def __reduce__(self):
        return (print, ("a cached pickle ran code",))


@pytest.mark.parametrize("foreign", [pickle.dumps(_Runs()), b"\x80\x05truncated", pickle.dumps(("a", "tuple"))],
                         ids=["code", "truncated", "other-shape"])
def test_a_foreign_or_broken_cache_file_is_never_run_and_is_rebuilt(cache, tmp_path, monkeypatch, capfd, foreign):
    path = tmp_path / "m.lm.gz"
    CharNgramLM.fit(TEXTS, order=3, min_count=1).save(path)
    expected = CharNgramLM.load(path)
    [cached] = cache.glob("ngram-*.pkl")
    cached.write_bytes(foreign)
    parsed = _parses(monkeypatch)
    model = CharNgramLM.load(path)
    assert "ran code" not in capfd.readouterr().out
    assert parsed == [str(path)]
    assert model.logprob_ == expected.logprob_
    CharNgramLM.load(path)
    assert parsed == [str(path)]  # written again, and read back the next time


def test_a_bad_line_of_a_model_file_is_named_and_nothing_is_cached(cache, tmp_path):
    path = tmp_path / "m.lm.gz"
    CharNgramLM.fit(TEXTS, order=3, min_count=1).save(path)
    lines = gzip.decompress(path.read_bytes()).decode().split("\n")
    lines[3] = lines[3].replace("\t", " ", 1)
    path.write_bytes(gzip.compress("\n".join(lines).encode()))
    with pytest.raises(ValueError, match=r"m\.lm\.gz, line 4: expected an n-gram"):
        CharNgramLM.load(path)
    assert not list(cache.glob("ngram-*"))


calls: list[tuple] = []


def _terms_seen(terms: tuple[str, ...]) -> list[str]:
    calls.append(terms)
    return sorted(terms)


def test_tables_of_a_tuple_of_terms_are_kept_by_its_hash(cache):
    calls.clear()
    cached = disk_cached(_terms_seen)
    many = tuple(f"词{k}" for k in range(100))
    assert cached(many) == sorted(many) and cached(many[:-1]) == sorted(many[:-1])
    assert len(list(cache.glob("test_unveil_speed-_terms_seen-*.pkl"))) == 2
    again = disk_cached(_terms_seen)  # a new process's: nothing in memory
    assert again(many) == sorted(many) and again(many[:-1]) == sorted(many[:-1])
    assert calls == [many, many[:-1]]


def test_a_table_of_more_than_plain_values_is_refused_when_written(cache):
    from collections import Counter

    with pytest.raises(TypeError, match="plain values only, not Counter"):
        disk_cached(Counter)(("a", "b"))


def test_a_second_start_needs_no_dictionary_parsing():
    """Once the cache holds its tables, an unveiler starts without importing pypinyin (whose dictionaries
    take a second to load) nor parsing the model, in a new interpreter as the command runs."""
    code = ("import sys; from cloak.unveil import CharNgramLM, Unveiler; "
            "CharNgramLM._read = None; Unveiler().prepare(); print('pypinyin' in sys.modules)")
    subprocess.run([sys.executable, "-c", code.replace("CharNgramLM._read = None; ", "")], check=True, cwd=ROOT,
                   capture_output=True, timeout=300)  # fills the cache where another test has not
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False"]
