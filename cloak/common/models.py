"""Models given by name or by path, and the one-line error a failed load ends with.

A model option (``--whisper``, ``--from``, ``features.vision.model``, ``--backbone``) takes a local file or folder
or a name that a library fetches from its model hub. When the load fails, the person needs to know which
of the two went wrong: a path that does not exist (a typo: no hub can help), a local file that is not
such a model, or a name that could not be fetched (no network, no such model: then, and only then, the
hint to pass a local path). :func:`loading_model` wraps the library call where a model is loaded and
says so; the command lines print its :class:`ModelLoadError` as one line.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

# The files models come in: a name ending so is a file that is missing, not a hub name.
MODEL_FILE_SUFFIXES = (".pt", ".pth", ".bin", ".onnx", ".safetensors", ".ckpt", ".gguf")


class ModelLoadError(ValueError):
    """A model could not be loaded; the message says which, from where, and what to do."""


def looks_like_path(name: str) -> bool:
    """Whether ``name`` can only mean a local file or folder: it starts with ``/``, ``.`` or ``~``, ends
    with a separator or a model file's suffix, or has more than one ``/`` (a hub name is ``model`` or
    ``owner/model``)."""
    return (name.startswith(("/", ".", "~")) or name.endswith(("/", os.sep)) or name.count("/") > 1
            or name.lower().endswith(MODEL_FILE_SUFFIXES))


@contextlib.contextmanager
def loading_model(what: str, name: str, hint: str = "") -> Iterator[None]:
    """Around the call that loads model ``name`` (``what`` says which model: "Whisper model", "backbone"):
    a path that does not exist fails before the call; an error of the call (OS, runtime or value error)
    becomes a :class:`ModelLoadError` naming the model. ``hint`` (what to pass instead, without a hub) is added
    only when ``name`` is not a local path, for a hub name that could not be fetched."""
    if not os.path.exists(name) and looks_like_path(name):
        raise ModelLoadError(f"{what} {name}: no such file or folder")
    try:
        yield
    except (OSError, RuntimeError, ValueError) as e:  # what torch, transformers and whisper raise
        if os.path.exists(name):
            raise ModelLoadError(f"{what} {name}: cannot be loaded: {_first_line(e)}") from e
        raise ModelLoadError(f"{what} {name!r} is not a local file or folder, and fetching it by name failed: "
                             f"{_first_line(e)}" + (f" (names are downloaded from the model hub; without one, {hint})"
                                                    if hint else "")) from e


def _first_line(error: BaseException) -> str:
    """An error's message without the advice libraries append on later lines (transformers' offline-mode
    link, huggingface_hub's troubleshooting)."""
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0].rstrip(".")
