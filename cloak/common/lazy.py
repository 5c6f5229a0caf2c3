"""Names a package exports but imports on first use (PEP 562), so that a command's ``--help`` does not
wait for the libraries behind them (torch, scikit-learn, numpy)."""
from __future__ import annotations

import importlib
import sys
from collections.abc import Callable


def lazy_exports(package: str, exports: dict[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The package's ``__getattr__`` and ``__dir__``: ``exports`` maps a name to its module in ``package``
    (``{"MMBertModel": "modeling"}``); a name is imported when first asked for and kept."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> object:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{exports[name]}", package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __getattr__, __dir__
