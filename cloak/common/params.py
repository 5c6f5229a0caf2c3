"""Parameters checked against one declaration: types, ranges, choices and the keys that exist.

After scikit-learn's ``_parameter_constraints``: an op, a model config or a section of a run
configuration declares once what each of its parameters may be, and :func:`validate` checks values
against that declaration, saying in one line what is wrong and where::

    op split: 'share' must be a number in [0, 1], got 7
    train: unknown parameter 'bach_size'; did you mean 'batch_size'?

A declaration maps each parameter name to a constraint, a list of constraints (any of them will do:
``[Interval(int, 1), None]``) or, for a nested section, another declaration (a dict). ``None`` in a
list allows null.
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
import numbers
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Union

Declaration = Mapping[str, Any]  # name -> Constraint | None | list of them | nested Declaration


class ParameterError(ValueError):
    """A parameter with a value its declaration does not allow, or a parameter that does not exist."""


class Constraint:
    """What one parameter may be. ``accepts`` says whether a value fits; ``convert`` normalises it."""

    description = "any value"

    def accepts(self, value: Any) -> bool:
        return True

    def convert(self, value: Any) -> Any:
        return value


class Interval(Constraint):
    """A number of ``kind`` (``int`` or ``float``; a float parameter takes ints too) within bounds.

    ``closed``: which ends belong to the interval: ``both``, ``left``, ``right`` or ``neither``. A float
    parameter also takes a string that reads as a number: YAML reads ``1e-3`` as a string.
    """

    def __init__(self, kind: type, low: float | None = None, high: float | None = None,
                 closed: str = "both") -> None:
        if kind not in (int, float):
            raise TypeError(f"Interval kind must be int or float, not {kind!r}")
        if closed not in ("both", "left", "right", "neither"):
            raise ValueError(f"closed must be both, left, right or neither, not {closed!r}")
        self.kind, self.low, self.high, self.closed = kind, low, high, closed
        noun = "an integer" if kind is int else "a number"
        left, right = closed in ("both", "left"), closed in ("both", "right")
        if low is not None and high is not None:
            self.description = f"{noun} in {'[' if left else '('}{low}, {high}{']' if right else ')'}"
        elif low is not None:
            self.description = f"{noun} {'>=' if left else '>'} {low}"
        elif high is not None:
            self.description = f"{noun} {'<=' if right else '<'} {high}"
        else:
            self.description = noun

    def convert(self, value: Any) -> Any:
        if self.kind is float and isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                return value
        if self.kind is float and isinstance(value, numbers.Integral) and not isinstance(value, bool):
            return float(value)
        return value

    def accepts(self, value: Any) -> bool:
        if isinstance(value, bool):
            return False
        kind = numbers.Integral if self.kind is int else numbers.Real
        if not isinstance(value, kind) or value != value:  # NaN is in no interval
            return False
        left, right = self.closed in ("both", "left"), self.closed in ("both", "right")
        if self.low is not None and (value < self.low or (value == self.low and not left)):
            return False
        return not (self.high is not None and (value > self.high or (value == self.high and not right)))


class Options(Constraint):
    """One of a fixed set of values."""

    def __init__(self, *values: Any) -> None:
        self.values = values
        self.description = "one of " + ", ".join(repr(v) for v in values)

    def accepts(self, value: Any) -> bool:
        return any(value == v and type(value) is type(v) for v in self.values)


class InstanceOf(Constraint):
    """A value of the given type(s) (a bool is not an int here)."""

    NAMES = {str: "a string", bool: "true or false", int: "an integer", float: "a number", dict: "a mapping",
             list: "a list"}

    def __init__(self, *types: type) -> None:
        self.types = types
        self.description = " or ".join(self.NAMES.get(t, t.__name__) for t in types)

    def accepts(self, value: Any) -> bool:
        if isinstance(value, bool) and bool not in self.types:
            return False
        return isinstance(value, self.types)


class ListOf(Constraint):
    """A list (or tuple) whose items each fit ``item``; ``min_length`` items at least."""

    def __init__(self, item: Constraint, min_length: int = 0) -> None:
        self.item, self.min_length = item, min_length
        self.description = f"a list of {item.description}" + (
            f" (at least {min_length})" if min_length else "")

    def accepts(self, value: Any) -> bool:
        return (isinstance(value, (list, tuple)) and len(value) >= self.min_length
                and all(self.item.accepts(v) for v in value))


class Satisfies(Constraint):
    """A value for which ``test(value)`` is true, described by ``description``."""

    def __init__(self, test: Callable[[Any], bool], description: str) -> None:
        self.test, self.description = test, description

    def accepts(self, value: Any) -> bool:
        return bool(self.test(value))


def _constraints(declared: Any) -> list[Constraint | None]:
    items = declared if isinstance(declared, list) else [declared]
    return [c if c is None or isinstance(c, Constraint) else InstanceOf(c) for c in items]


def check_value(value: Any, declared: Any, where: str) -> Any:
    """``value`` converted and checked against one parameter's declaration, or ParameterError."""
    options = _constraints(declared)
    if value is None and None in options:
        return None
    for constraint in options:
        if constraint is not None:
            converted = constraint.convert(value)
            if constraint.accepts(converted):
                return converted
    wanted = " or ".join("null" if c is None else c.description for c in options)
    raise ParameterError(f"{where} must be {wanted}, got {value!r}")


def unknown_key(key: str, known: Sequence[str], where: str, kind: str = "parameter") -> ParameterError:
    """The error for a key that is not declared, naming the closest one that is."""
    close = difflib.get_close_matches(str(key), [str(k) for k in known], n=1, cutoff=0.6)
    hint = f"; did you mean '{close[0]}'?" if close else f"; known: {', '.join(sorted(map(str, known)))}"
    return ParameterError(f"{where + ': ' if where else ''}unknown {kind} '{key}'{hint}")


def validate(values: Mapping[str, Any], declaration: Declaration, where: str) -> dict[str, Any]:
    """``values`` checked against ``declaration``, nested sections included; returns them converted.

    Keys may be missing (the caller's defaults apply); a key the declaration does not have is an error
    that names the closest one it does have.
    """
    if not isinstance(values, Mapping):
        raise ParameterError(f"{where or 'the configuration'} must be a mapping of parameters, got {values!r}")
    out: dict[str, Any] = {}
    for key, value in values.items():
        if key not in declaration:
            raise unknown_key(key, list(declaration), where)
        declared = declaration[key]
        path = f"{where}.{key}" if where else str(key)
        if isinstance(declared, Mapping):
            out[key] = validate(value, declared, path)
        else:
            out[key] = check_value(value, declared, f"{where}: '{key}'" if where else f"'{key}'")
    return out


_FROM_TYPE = {float: Interval(float), int: Interval(int), bool: InstanceOf(bool), str: InstanceOf(str)}


@functools.cache
def declaration_of(cls: type) -> dict[str, Any]:
    """A dataclass's declaration: each field's annotated type (float, int, bool, str, optionally None),
    overridden by the class's ``_parameter_constraints`` where it has one."""
    hints = typing.get_type_hints(cls)
    declared: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        hint = hints.get(f.name)
        args = typing.get_args(hint) if typing.get_origin(hint) in (Union, types.UnionType) else (hint,)
        kinds = [_FROM_TYPE[a] for a in args if a in _FROM_TYPE]
        if kinds:
            declared[f.name] = kinds + ([None] if type(None) in args else [])
    declared.update(getattr(cls, "_parameter_constraints", {}))
    return declared


def validate_fields(obj: Any, where: str) -> None:
    """Check a dataclass instance's fields against :func:`declaration_of` its class, in place."""
    declaration = declaration_of(type(obj))
    values = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.name in declaration}
    for name, value in validate(values, declaration, where).items():
        object.__setattr__(obj, name, value)


# -- parts made by name on the command line: ``name:key=value:key=value`` -----------------------------------


def param(default: Any, help: str, **cli: Any) -> Any:
    """A dataclass field that is a command-line option: its default, its help text and how the command shows
    it (``cli``: ``metavar``; ``flags``, the option's names, the first shown, the others old spellings kept
    working; ``file``, a path the command checks before it starts). ``cloak.common.commands.dataclass_options``
    makes the options."""
    return dataclasses.field(default=default, metadata={"help": help, **cli})


def _coerce(value: str, annotation: object, where: str, field: str) -> Any:
    """A ``key=value``'s value read as its field's type (bool, int, float or str; the first of a union)."""
    args = typing.get_args(annotation) if typing.get_origin(annotation) in (Union, types.UnionType) else (annotation,)
    kind = next((a for a in args if a in (bool, int, float, str)), str)
    try:
        if kind is bool:
            if value.lower() in ("1", "true", "yes", "on"):
                return True
            if value.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError
        return kind(value) if kind in (int, float) else value
    except ValueError:
        wanted = {bool: "true or false", int: "an integer", float: "a number"}[kind]
        raise ParameterError(f"{where}: '{field}' must be {wanted}, got {value!r}") from None


def parse_spec(spec: str, classes: Mapping[str, type], kind: str) -> Any:
    """``classes[name](**values)`` from a command-line form ``name[:key=value[:key=value...]]`` (``kind``
    names what it makes in errors: ``op``, ``goal``): each value read as its field's type, an unknown name or
    key refused with the closest known one."""
    name, *params = spec.strip().split(":")
    if name not in classes:
        raise unknown_key(name, sorted(classes), "", kind=kind)
    cls = classes[name]
    hints = typing.get_type_hints(cls)
    fields = [f.name for f in dataclasses.fields(cls)]
    kwargs = {}
    for item in params:
        key, sep, value = item.partition("=")
        if not sep:
            raise ParameterError(f"{kind} {name}: parameter {item!r} needs a value: {item}=VALUE")
        if key not in fields:
            if not fields:
                raise ParameterError(f"{kind} {name}: takes no parameters, got {key!r}")
            raise unknown_key(key, fields, f"{kind} {name}")
        kwargs[key] = _coerce(value, hints.get(key, str), f"{kind} {name}", key)
    return cls(**kwargs)


def spec_of(part: Any) -> str:
    """The command-line form of a named dataclass (``part.name``), its parameters away from their defaults:
    ``homophone:tone=fuzzy``, ``targeted:label=1``."""
    changed = [f"{f.name}={getattr(part, f.name)}" for f in dataclasses.fields(part)
               if getattr(part, f.name) != f.default]
    return ":".join([part.name, *changed])


class Named:
    """A part made by name (a goal, a constraint, a search method): a dataclass whose fields are its
    parameters, checked when it is made, and whose ``spec()`` is its command-line form. Subclasses set
    ``name``; their family's :class:`Registry` sets ``family``, what errors call them."""

    name: typing.ClassVar[str] = ""
    family: typing.ClassVar[str] = ""

    def __post_init__(self) -> None:
        validate_fields(self, f"{self.family} {self.name}")

    def spec(self) -> str:
        return spec_of(self)


class Registry(dict):
    """The classes of one family of :class:`Named` parts by name: ``register`` (a class decorator, for
    parts of your own too) and ``make`` (a part from its command-line form, or the part itself)."""

    def __init__(self, family: str) -> None:
        super().__init__()
        self.family = family

    def register(self, cls: type) -> type:
        if not cls.name or not dataclasses.is_dataclass(cls):
            raise TypeError(f"{cls.__name__}: a {self.family} is a dataclass with a class attribute `name`")
        cls.family = self.family
        self[cls.name] = cls
        return cls

    def make(self, spec: str | Named) -> Any:
        return spec if isinstance(spec, Named) else parse_spec(spec, self, self.family)
