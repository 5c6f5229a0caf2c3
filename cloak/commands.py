"""What every mmcloak command line shares: one-line errors, Ctrl-C that says what was kept, output checks.

``cloak``, ``mmbert`` and ``attacks`` (and the ``render`` / ``speech`` subcommands of ``cloak``) end a
bad run the same way: ``PROG: error: WHAT`` on stderr and exit 1, never a traceback; Ctrl-C ends with
``PROG: interrupted`` and what a rerun does with the work kept, exit 130.
"""
from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Mapping
from typing import NoReturn

import click

from .io import RecordError


def fail(prog: str, message: str) -> NoReturn:
    click.echo(f"{prog}: error: {message}", err=True)
    sys.exit(1)


def error_message(error: Exception) -> str:
    """What a person needs of an error: an OS error of a path names the path and what is wrong with it
    (``out.json: Is a directory``), anything else says itself."""
    filename = getattr(error, "filename", None)
    if isinstance(error, OSError) and filename is not None and error.strerror:
        return f"{filename}: {error.strerror}"
    return str(error)


def reports_errors(prog: str, *, interrupted: Mapping[str, str | Callable[[dict], str]] | None = None,
                   extra: str = "all", model_hint: str = "",
                   failures: Mapping[type[Exception], str] | None = None) -> Callable:
    """A decorator for a click command: bad input (ValueError, RecordError, OS errors) ends with one line;
    a missing optional package names the extra to install; Ctrl-C says what was kept (``interrupted``:
    the command's function name -> the rest of the sentence, or a function of the command's arguments
    that says it). ``model_hint`` follows an OS error that names no path, which is how transformers and
    Whisper report a model asked for by a name they could not fetch. ``failures``: the command's own
    errors, each ended with one line and what to do (an exception class -> the rest of the sentence;
    "": the error as it says itself)."""
    failures = dict(failures or {})

    def decorate(func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            try:
                return func(*args, **kwargs)
            except KeyboardInterrupt:
                rest = (interrupted or {}).get(func.__name__, "")
                click.echo(f"{prog}: interrupted{rest(kwargs) if callable(rest) else rest}", err=True)
                sys.exit(130)
            except tuple(failures) as e:
                fail(prog, f"{e}{next(rest for kind, rest in failures.items() if isinstance(e, kind))}")
            except (ValueError, RecordError) as e:
                fail(prog, str(e))
            except ImportError as e:
                fail(prog, f"{e}: this needs an optional package (pip install mmcloak[{extra}])")
            except OSError as e:
                named = getattr(e, "filename", None) is not None or isinstance(e, (FileNotFoundError,
                                                                                   IsADirectoryError))
                fail(prog, error_message(e) if named else f"{e}{model_hint}")
        return wrapper
    return decorate


class Renamed(click.Option):
    """An option whose first name is the one ``--help`` shows; its other names, old spellings kept so
    that scripts written for them still run, work but are not shown."""

    def get_help_record(self, ctx: click.Context):
        shown, self.opts = self.opts, self.opts[:1]
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = shown


def target_options(default: str = "lexicon", mine_default: str = "") -> Callable:
    """``--targets``, ``--lexicon`` and ``--mine-from``: what a command cloaks, chosen as every command chooses it
    (``cloak.mining.build_targets`` reads the three). ``mine_default`` says where mining reads without
    ``--mine-from``."""
    def options(command: Callable) -> Callable:
        command = click.option("--mine-from", default=None, metavar="FILE", help=(
            "--targets mined / lexicon+mined: the labelled records (JSONL) to mine"
            + (f" [default: {mine_default}]." if mine_default else ".")))(command)
        command = click.option("--lexicon", default=None, metavar="FILE", help=(
            "The lexicon instead of the default one: one term a line, or a TSV/CSV with a term column "
            "(what `cloak mine-terms` writes)."))(command)
        return click.option("--targets", default=default, show_default=True,
                            metavar="lexicon[:FILE]|mined|lexicon+mined|all", help=(
                                "What to cloak: the lexicon's terms; the terms most associated with the offensive "
                                "label in labelled records (--mine-from; `cloak mine-terms`); both; or every "
                                "word."))(command)
    return options


def check_out_folder(option: str, path: str) -> None:
    """An output folder may be new or a folder, not a file."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"{option} {path}: is a file, not a folder")


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 epoch``, ``2 epochs``; ``1 query``, ``2 queries`` (``many``)."""
    return f"{n} {word if n == 1 else many or word + 's'}"
