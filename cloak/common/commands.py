"""What every mmcloak command line shares: one-line errors, Ctrl-C that says what was kept, output checks, and
options made from a dataclass's fields.

``cloak``, ``mmbert`` and ``attacks`` (and the ``render`` / ``speech`` subcommands of ``cloak``) end a
bad run the same way: ``PROG: error: WHAT`` on stderr and exit 1, never a traceback; Ctrl-C ends with
``PROG: interrupted`` and what a rerun does with the work kept, exit 130.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import sys
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

import click

from .io import RecordError
from .params import Interval, Options, declaration_of


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
            "--targets mined / lexicon+mined: the labelled records to mine (JSONL, CSV, TSV, Parquet or a saved "
            "Dataset, by the path); refused with other targets"
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


def dataclass_options(classes: Sequence[type]) -> list[click.Option]:
    """The click options of the fields that ``cloak.common.params.param`` declared in ``classes``, one per field name:
    ``--query-budget`` for ``query_budget``, its type, range or choices from the field's declaration
    (``_parameter_constraints``: ``Interval`` as a range, ``Options`` as choices; a bool a flag, a tuple a
    repeatable option). A field in several classes is one option; each class adds its help text to it,
    and they must agree on its default."""
    fields: dict[str, tuple[dataclasses.Field, Any, list[str]]] = {}
    for cls in dict.fromkeys(classes):
        declared, hints = declaration_of(cls), typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if "help" not in f.metadata:
                continue
            if f.name not in fields:
                fields[f.name] = (f, _click_type(hints[f.name], declared.get(f.name)), [f.metadata["help"]])
            elif fields[f.name][0].default != f.default:
                raise TypeError(f"{cls.__name__}.{f.name}: default {f.default!r}, another's {fields[f.name][0].default!r}")
            elif f.metadata["help"] not in fields[f.name][2]:
                fields[f.name][2].append(f.metadata["help"])
    return [_dataclass_option(f, kind, " ".join(helps)) for f, kind, helps in fields.values()]


def _dataclass_option(field: dataclasses.Field, kind: Any, help: str) -> click.Option:
    flags = list(field.metadata.get("flags") or ["--" + field.name.replace("_", "-")])
    shown = field.default not in (None, "", ())
    settings = {"is_flag": True} if kind is bool else {"type": kind[0], "multiple": kind[1]}
    return (Renamed if len(flags) > 1 else click.Option)(
        [*flags, field.name], default=field.default, show_default=shown, metavar=field.metadata.get("metavar"),
        help=help, **settings)


def _click_type(hint: Any, declared: Any) -> Any:
    """bool for a flag, else (click type, multiple): a tuple[X, ...] is a repeatable option of X's."""
    args = typing.get_args(hint)
    if hint is bool:
        return bool
    if typing.get_origin(hint) is tuple:
        return _click_type(args[0], declared)[0], True
    first = next((c for c in (declared if isinstance(declared, list) else [declared]) if c is not None), None)
    if isinstance(first, Options):
        return click.Choice([str(v) for v in first.values]), False
    if isinstance(first, Interval) and (first.low is not None or first.high is not None):
        ranged = click.IntRange if first.kind is int else click.FloatRange
        return ranged(first.low, first.high, min_open=first.closed in ("right", "neither"),
                      max_open=first.closed in ("left", "neither")), False
    base = next((a for a in (args or (hint,)) if a in (int, float, str)), str)
    return {int: click.INT, float: click.FLOAT, str: click.STRING}[base], False
