"""The API reference (docs/api/*.md, built by mkdocstrings from the source) shows what each name it lists is:
every name has a docstring, and a class shows its members. mkdocstrings leaves out a member without a docstring
of its own, so a class none of whose public members has one shows a heading and nothing under it. Read as
mkdocstrings reads it, from the source (``ast``), importing nothing."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
API_PAGES = sorted((ROOT / "docs" / "api").glob("*.md"))
# The classes a user implements or reads field by field: every public member of them documented.
READ_MEMBER_BY_MEMBER = ("attacks.attack.Attack", "cloak.Edit", "render.FontFile")


def listed() -> list[str]:
    return [name for page in API_PAGES for name in re.findall(r"^::: ([\w.]+)", page.read_text(encoding="utf-8"), re.M)]


def _module_file(parts: list[str]) -> Path | None:
    base = ROOT.joinpath(*parts)
    return next((p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()), None)


def _in_module(parts: list[str], names: list[str]) -> ast.AST:
    """``names`` looked up in the module ``parts``, following ``from .x import name``."""
    path = _module_file(parts)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    if not names:
        return tree
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and node.name == names[0]:
            for name in names[1:]:
                node = next(n for n in node.body if isinstance(n, (ast.ClassDef, ast.FunctionDef)) and n.name == name)
            return node
    for i, node in enumerate(tree.body):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and names[0] in {t.id for t in _targets(node)}:
            return _AttributeOf(tree.body, i)
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == names[0]:
                    package = parts if path.name == "__init__.py" else parts[:-1]
                    base = package[:len(package) - node.level + 1] if node.level else []
                    return _in_module(base + (node.module or "").split("."), [alias.name] + names[1:])
    raise LookupError(f"{'.'.join(parts)} has no {names[0]}")


def _targets(node) -> list[ast.Name]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [t for t in targets if isinstance(t, ast.Name)]


class _AttributeOf:
    """A module or class attribute: its docstring is the string literal right after it."""

    def __init__(self, body: list, at: int):
        after = body[at + 1] if at + 1 < len(body) else None
        self.doc = after.value.value if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) \
            and isinstance(after.value.value, str) else None


def resolve(dotted: str):
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        if _module_file(parts[:i]):
            return _in_module(parts[:i], parts[i:])
    raise LookupError(dotted)


def docstring(node) -> str | None:
    return node.doc if isinstance(node, _AttributeOf) else ast.get_docstring(node)


def members(cls: ast.ClassDef) -> dict[str, str | None]:
    """A class's public methods and fields, each with its docstring (None: mkdocstrings leaves it out)."""
    out = {}
    for i, node in enumerate(cls.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            out[node.name] = ast.get_docstring(node)
        elif isinstance(node, ast.AnnAssign) and _targets(node) and not _targets(node)[0].id.startswith("_"):
            out[_targets(node)[0].id] = _AttributeOf(cls.body, i).doc
    return out


def test_every_name_the_api_pages_list_has_a_docstring():
    names = listed()
    assert len(names) > 50 and set(READ_MEMBER_BY_MEMBER) <= set(names)
    missing = [name for name in names if not docstring(resolve(name))]
    assert not missing, f"listed in docs/api with no docstring: {missing}"


@pytest.mark.parametrize("name", READ_MEMBER_BY_MEMBER)
def test_every_member_of_a_class_one_implements_or_reads_is_documented(name):
    undocumented = [member for member, doc in members(resolve(name)).items() if not doc]
    assert not undocumented, f"{name}: {undocumented}"
