"""The benchmarks' rules (``bench/common.py``): each has a make target, and none imports another.

A benchmark is a module of ``bench/`` that writes figures (calls ``write_result``); what a family of them
shares lives in ``bench/common.py`` or in a module that writes none."""
import ast
import re

from tests.conftest import ROOT

BENCH = ROOT / "bench"


def tree(name: str) -> ast.Module:
    return ast.parse((BENCH / f"{name}.py").read_text(encoding="utf-8"))


def modules() -> list[str]:
    return sorted(path.stem for path in BENCH.glob("*.py") if path.stem not in ("__init__", "common"))


def benchmarks() -> set[str]:
    """The modules that write figures."""
    return {name for name in modules() if any(isinstance(node, ast.Call) and getattr(node.func, "id", None) == "write_result"
                                              for node in ast.walk(tree(name)))}


def bench_imports(name: str) -> set[str]:
    """The modules of ``bench/`` a module imports, at its top or inside a function."""
    found = set()
    for node in ast.walk(tree(name)):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[1] for alias in node.names if alias.name.startswith("bench.")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bench"):
            found |= ({node.module.split(".")[1]} if "." in node.module else {alias.name for alias in node.names})
    return found


def make_targets() -> set[str]:
    """The modules the Makefile runs (``bench.NAME`` on any line that is not a comment)."""
    lines = (ROOT / "Makefile").read_text(encoding="utf-8").splitlines()
    return {name for line in lines if not line.lstrip().startswith("#")
            for name in re.findall(r"\bbench\.(\w+)", line)}


def test_the_rules_see_the_benchmarks():
    found = benchmarks()
    assert {"perturb", "mmbert_cold", "victims", "llm_victim"} <= found and len(found) >= 30
    assert not found & {"mmbert_data", "mmbert_evaluation", "speech_measures", "textattack_search"}
    assert bench_imports("mmbert_heldout") >= {"common", "mmbert_data", "mmbert_evaluation"}


def test_every_benchmark_has_a_make_target():
    missing = benchmarks() - make_targets()
    assert not missing, f"benchmarks without a line in a make bench* target: {sorted(missing)}"
    assert make_targets() <= set(modules()), "the Makefile runs a bench module that is not there"


def test_no_bench_module_imports_a_benchmark():
    offenders = {name: sorted(bench_imports(name) & benchmarks() - {name}) for name in modules()}
    offenders = {name: imported for name, imported in offenders.items() if imported}
    assert not offenders, f"bench modules importing a benchmark (move what they share into bench/common.py " \
                          f"or a module that writes no figures): {offenders}"
