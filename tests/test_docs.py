"""The README and the documentation site (docs/) as a reader meets them: every Python example uses no name it
does not define or import and runs, in turn, as a user runs them; every command line names a command and
options that exist; the results pages are made from the benchmarks' JSON and follow it; no page or file of
the repository names a folder of the machine it was written on, or a paper without naming it."""
from __future__ import annotations

import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pyflakes.api import check
from pyflakes.reporter import Reporter

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
# Hand-written pages; docs/results/ is generated and holds no examples.
PAGES = [ROOT / "README.md"] + sorted(p for p in DOCS.rglob("*.md") if DOCS / "results" not in p.parents
                                      and DOCS / "pending" not in p.parents)
# What a test cannot give an example: real weights, a Ray cluster, a pre-trained backbone or stage folder,
# a HABERTOR pre-training (minutes), TextAttack (its own venv, where tests/test_textattack_bridge.py runs the same
# attack). Those examples are checked for names only.
NEEDS = ("weights/", "HEAD:6379", "backbone/", "habertor-lm/", "s3/", "from textattack ")


def blocks(page: Path, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", page.read_text(encoding="utf-8"), re.S)


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def _undefined(block: str, name: str) -> list[str]:
    out, err = io.StringIO(), io.StringIO()
    check(block, name, Reporter(out, err))
    return [line for line in out.getvalue().splitlines() + err.getvalue().splitlines()
            if "undefined name" in line or "syntax" in line.lower() or "invalid" in line.lower()]


# -------------------------------------------------------------------------------------------- examples

def test_the_pages_hold_examples():
    assert sum(len(blocks(page, "python")) for page in PAGES) >= 20
    assert len(blocks(ROOT / "README.md", "python")) == 5  # one a package


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_no_example_uses_a_name_it_does_not_define(page):
    problems = [p for i, block in enumerate(blocks(page, "python"))
                for p in _undefined(block, f"{page_id(page)} python block {i + 1}")]
    assert not problems, "\n".join(problems)


def test_the_check_sees_an_undefined_name():
    assert _undefined("texts = texts + ['a']\n", "block") != []


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A folder with the repository's samples, where the examples run as from the repository's root."""
    (tmp_path / "samples").symlink_to(ROOT / "samples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # the glyph examples cache under ~/.cache
    return tmp_path


def runnable(page: Path) -> list[tuple[int, str]]:
    return [(i, b) for i, b in enumerate(blocks(page, "python")) if not any(need in b for need in NEEDS)]


# a page whose examples load a trained BERT (one is trained for them) is test-all's
@pytest.mark.parametrize("page", [pytest.param(p, marks=pytest.mark.slow)
                                  if any("victims/bert" in block for _, block in runnable(p)) else p
                                  for p in PAGES if runnable(p)], ids=page_id)
def test_the_examples_of_a_page_run_in_turn(page, folder, request):
    if any("victims/bert" in block for _, block in runnable(page)):
        save_tiny_bert(folder / "victims" / "bert", request.getfixturevalue("backbone"))
    examples = [(f"{page_id(page)} python block {i + 1}", block) for i, block in runnable(page)]
    # In a Python of their own, as a user runs them: an example that registers an op, a detector or an attack
    # (the architecture page's) must not leave it registered for the tests that follow.
    ran = subprocess.run([sys.executable, "-c", RUN_EXAMPLES, json.dumps(examples)], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert ran.returncode == 0, ran.stderr[-4000:]


RUN_EXAMPLES = """
import json, sys
for name, block in json.loads(sys.argv[1]):
    exec(compile(block, name, "exec"), {"__name__": "__docs__"})
"""


def save_tiny_bert(out: Path, backbone) -> None:
    """victims/bert as `attacks train --model bert` saves one (a tiny one), which the attacks examples load."""
    from attacks import make_victim

    from .conftest import SAMPLE, read_jsonl

    make_victim("bert", {"backbone": backbone, "max_length": 48}, {"epochs": 1, "batch_size": 16}).fit(
        read_jsonl(SAMPLE)[:60], progress=False).save(str(out))


# ----------------------------------------------------------------------------------------- commands

COMMANDS = {"cloak": "cloak.cli", "mmbert": "mmbert.cli", "attacks": "attacks.cli"}


def command_lines(page: Path) -> list[str]:
    """The lines of a page's bash blocks that run one of our commands (continuations joined)."""
    found = []
    for block in blocks(page, "bash"):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #")[0].strip()
            if line.split(" ", 1)[0] in COMMANDS:
                found.append(line)
    return found


def unknown_options(line: str) -> list[str]:
    """What of a command line its command does not know: the subcommand, or any of its --options."""
    import importlib

    import click

    words = shlex.split(re.sub(r"\$\(.*?\)|\$\{?\w+\}?", "X", line))
    group = importlib.import_module(COMMANDS[words[0]]).main
    ctx = click.Context(group)
    command = group.get_command(ctx, words[1]) if len(words) > 1 else None
    if command is None:
        return [f"{words[0]} {words[1] if len(words) > 1 else ''}"]
    known = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)} | {"--help"}
    return [w for w in words[2:] if w.startswith("--") and w.split("=")[0] not in known]


@pytest.mark.parametrize("page", [p for p in PAGES if command_lines(p)], ids=page_id)
def test_every_command_line_names_a_command_and_options_that_exist(page):
    problems = [f"{line}: {unknown}" for line in command_lines(page) if (unknown := unknown_options(line))]
    assert not problems, "\n".join(problems)


def test_every_test_file_and_sample_a_command_names_exists():
    """tests/ and samples/ hold no command's output, so a path there that a command names must exist."""
    named = {(page_id(page), path) for page in PAGES for block in blocks(page, "bash")
             for path in re.findall(r"(?<![\w/$.-])((?:tests|samples)/[\w./-]*\w\.\w+)", block)}
    assert named and not [f"{page}: {path}" for page, path in sorted(named) if not (ROOT / path).exists()]


def test_no_two_pages_train_or_evaluate_into_the_same_folder():
    """`attacks train` and `attacks evaluate` refuse a folder another run filled: a reader who followed getting-started
    and then a guide met `--out victims/tfidf-lr: holds a saved tfidf-lr victim`. Each run the pages show has a
    folder of its own (a page that repeats another's command, the same run, names the same folder)."""
    runs: dict[str, set[tuple[str, ...]]] = {}
    for page in PAGES:
        for line in command_lines(page):
            words = shlex.split(re.sub(r"\$\(.*?\)|\$\{?\w+\}?", "X", line))
            if words[:2] in (["attacks", "train"], ["attacks", "evaluate"]) and "--out" in words:
                runs.setdefault(os.path.normpath(words[words.index("--out") + 1]), set()).add(tuple(words))
    assert runs and {out: lines for out, lines in runs.items() if len(lines) > 1} == {}


def test_what_the_pages_run_on_the_bundled_sample_write_is_ignored_by_git():
    """A reader who runs a page's commands in a clone (those pages that work on samples/) leaves nothing git offers
    to commit: `cloak fit-lm --out posts.lm.gz` of the unveil guide did."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git clone")
    written = set()
    for page in PAGES:
        if not any("samples/" in block for block in blocks(page, "bash")):
            continue
        for line in command_lines(page):
            words = shlex.split(re.sub(r"\$\(.*?\)|\$\{?\w+\}?", "X", line))
            written.update(words[words.index(flag) + 1] for flag in ("--out", "-o") if flag in words)
        written.update(re.findall(r">\s*(\S+)", "".join(blocks(page, "bash"))))
    kept = [path for path in sorted(written)
            if subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT).returncode != 0]
    assert "posts.lm.gz" in written and kept == []


def test_the_open_clip_tests_name_the_make_target_that_runs_them():
    """Skipped, tests/test_open_clip.py told to run `make test`, which leaves it out."""
    rules = re.findall(r"^([\w-]+):.*\n((?:\t.*\n)*)", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M)
    targets = [target for target, recipe in rules if "tests/test_open_clip.py" in recipe]
    source = (ROOT / "tests" / "test_open_clip.py").read_text(encoding="utf-8")
    assert targets and all(f"make {target} runs this file" in source for target in targets)
    assert not re.search(r"make test(?![\w-])", source)


def test_the_command_check_sees_a_misspelt_option():
    assert unknown_options("cloak perturb --in a.jsonl --oops x") == ["--oops"]
    assert unknown_options("attacks evalute --victim v") == ["attacks evalute"]


# ------------------------------------------------------------------------------------------- results

def generate(results: Path, out: Path) -> dict[str, str]:
    subprocess.run([sys.executable, str(DOCS / "gen_results.py"), "--results", str(results), "--out", str(out),
                    "--no-readme"], check=True, capture_output=True, text=True, timeout=300)
    return {p.name: p.read_text(encoding="utf-8") for p in out.glob("*.md")}


def test_the_results_pages_follow_their_json(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(ROOT / "bench" / "results", results)
    before = generate(results, tmp_path / "before")
    coverage = json.loads((results / "coverage.json").read_text(encoding="utf-8"))
    coverage["targets"]["lexicon"]["offensive_share"] = 0.1234
    (results / "coverage.json").write_text(json.dumps(coverage), encoding="utf-8")
    after = generate(results, tmp_path / "after")
    assert "12.3%" in after["cloak.md"] and "12.3%" not in before["cloak.md"]
    assert {name: text for name, text in after.items() if name != "cloak.md"} == \
        {name: text for name, text in before.items() if name != "cloak.md"}


def test_the_committed_results_pages_and_readme_table_are_up_to_date(tmp_path):
    fresh = generate(ROOT / "bench" / "results", tmp_path)
    for name, text in fresh.items():
        assert (DOCS / "results" / name).read_text(encoding="utf-8") == text, \
            f"docs/results/{name} is stale: run `make results`"
    sys.path.insert(0, str(DOCS))
    from gen_results import README_BEGIN, README_END, Results, headline  # noqa: PLC0415
    import yaml

    table = headline(Results(ROOT / "bench" / "results",
                             yaml.safe_load((DOCS / "result_commands.yaml").read_text(encoding="utf-8"))))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme[readme.index(README_BEGIN) + len(README_BEGIN):readme.index(README_END)].strip() == table, \
        "README.md's results table is stale: run `make results`"


def test_a_results_file_without_a_command_is_refused(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(ROOT / "bench" / "results", results)
    data = json.loads((results / "render.json").read_text(encoding="utf-8"))
    data.pop("command", None)
    (results / "unknown.json").write_text(json.dumps(data), encoding="utf-8")
    sys.path.insert(0, str(DOCS))
    from results_tables import Results  # noqa: PLC0415

    with pytest.raises(SystemExit, match="records no command"):
        Results(results, {}).source("unknown.json")


# ------------------------------------------------------------------------------------------ hygiene

def test_the_built_site_reads_from_disk(tmp_path):
    """site/index.html opened from disk linked pages as folders (guide/attacks/), which a browser shows as a
    listing: the site is built to page.html files, and the README says how to open it."""
    assert re.search(r"^use_directory_urls: false$", (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), re.M)
    assert "site/index.html" in (ROOT / "README.md").read_text(encoding="utf-8")
    if shutil.which("mkdocs", path=os.path.dirname(sys.executable)) is None:
        pytest.skip("mkdocs is not installed (pip install 'mmcloak[docs]')")
    built = subprocess.run([os.path.join(os.path.dirname(sys.executable), "mkdocs"), "build", "--strict", "-q", "-d",
                            str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                           env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert built.returncode == 0, built.stderr
    folders = {f"{page.relative_to(tmp_path)}: {link}" for page in tmp_path.rglob("*.html")
               for link in re.findall(r'href="([^"#:?]*/|\.\.?)"', page.read_text(encoding="utf-8"))}
    assert (tmp_path / "guide" / "attacks.html").is_file() and folders == set()


def test_the_readme_is_a_front_door():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 250


def tracked_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    return [ROOT / name for name in listed if not name.startswith(".ci/") and (ROOT / name).is_file()]


def machine_path() -> re.Pattern:
    """A folder of the machine the files were written on, found from where this checkout lies rather than
    named here: an absolute path under the folder holding the checkout, or the checkout it was cloned from,
    or under the users' and temporary folders; or a folder beside the checkout reached by ``../`` (not one
    whose name is a folder of the repository, which docs reach by relative links). A path inside the
    repository such as the benchmarks' working folder is none."""
    origin = subprocess.run(["git", "remote", "get-url", "origin"], cwd=ROOT, capture_output=True, text=True).stdout
    holders = {ROOT.parent} | ({Path(origin.strip()).resolve().parent} if Path(origin.strip()).is_dir() else set())
    tops = {str(h) for h in holders if h != h.parent} | {"/home", "/root", "/tmp"}
    inside = {part for name in subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True,
                                              text=True).stdout.split() for part in Path(name).parts[:-1]}
    beside = {p.name for h in holders for p in h.iterdir() if p.is_dir() and p.name not in inside} - {""}
    absolute = "|".join(re.escape(t) for t in sorted(tops))
    relative = "|".join(re.escape(b) for b in sorted(beside)) or "(?!)"
    return re.compile(rf"\.\./(?:{relative})\b|(?<![\w./-])(?:{absolute})/\w")


def test_no_file_names_a_folder_of_the_machine_it_was_written_on():
    pattern = machine_path()
    found = [f"{path.relative_to(ROOT)}: {match.group(0)}" for path in tracked_files()
             if path.suffix in (".py", ".md", ".json", ".yaml", ".yml", ".toml", ".txt", ".tsv", ".cfg", "")
             for match in [pattern.search(path.read_text(encoding="utf-8", errors="replace"))] if match]
    assert not found, "\n".join(found)


def test_every_paper_is_named():
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}" for path in tracked_files()
             if path.suffix in (".py", ".md", ".j2", ".yaml")
             for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
             if re.search(r"\bthe\s+paper", line, re.I)]
    assert not found, "\n".join(found)
