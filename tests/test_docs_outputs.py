"""What the pages show a command printing is what it prints.

A page shows what its commands print as a ```bash block followed by a plain ``` block (a blank line between
them allowed). Every such pair on the README and the site is listed in ``HOW``, in the page's order, with
how it is checked, so that a page cannot gain an output nothing checks:

- ``Run``: the test runs the bash block (or the commands of it named) as written, in a folder holding the
  bundled samples, after the page's earlier ``Run`` blocks in the same folder, as a reader follows the page,
  and compares what the commands print (standard output and error together, as a terminal shows them)
  with the block. Where the page's text says an output was made on the bundled samples under other names
  (``cold_test.jsonl``), those names are links to the samples. The page's first ``json`` block after the output
  (before its next commands) is the first record of the file named, compared field by field.
- ``Run`` with ``cold=True``: the same on COLD's own files (``MMCLOAK_COLD=DIR``, COLD's folder, as the
  benchmarks take it; see docs/guide/data.md); skipped without them, since COLD is not in the repository
  (CI has none: like the tests that need ``MMCLOAK_WEIGHTS``, they run where a developer has the data).
- The README's and getting-started's ``make demo`` output, which is no ``bash`` pair (too slow for
  ``make test``: a minute and more of training and attacks): ``test_the_demo_output_is_what_make_demo_prints``
  runs ``make demo``'s own recipe and compares (``slow``: ``make test-all`` and CI).
- ``Run`` with ``prints=N``: only the block's first N lines are what the commands run print; the rest is
  unchecked (a half-hour MMBERT run), as a comment beside it says.
- ``Unchecked``: an output no test can make (real weights, data of one's own); the reason is given.

The comparison is exact, line by line, after the normalisations of what cannot be the same twice: a
duration or a rate (``0.5 s``, ``658 records/s``) becomes ``<time>``, the folder the commands ran in is
left out of the paths under it, and a progress bar's line (tqdm's, which a terminal redraws in place and
clears) is dropped. A line ``...`` in a block stands for lines the page leaves out (none or more; every other
line must be printed, in order), and a value ``...`` in a ``json`` block (or a string ending in ``...``,
or ``{...}``) for a value the page leaves out (or the rest of it).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = {"cold_test.jsonl": "samples/cold/cold_test_300.jsonl",
           "cold_train.jsonl": "samples/cold/cold_train_2000.jsonl"}


@dataclass(frozen=True)
class Run:
    lines: tuple[int, ...] = ()           # the block's commands to run, from 1 (continuations joined); all if empty
    before: tuple[str, ...] = ()          # commands run first, unseen (what the page says the output came from)
    # a file name the page uses -> the file it stands for: a path in the repository; with ``cold``, a split of
    # COLD's ("train", "dev", "test", converted as `cloak convert` does) or "." (COLD's folder)
    names: dict[str, str] = field(default_factory=dict)
    record: str | None = None             # the file whose first record the json block after the output shows
    prints: int | None = None             # how many of the block's lines these commands print (the rest: not run)
    cold: bool = False                    # runs on COLD's own files (MMCLOAK_COLD)
    slow: bool = False


@dataclass(frozen=True)
class Unchecked:
    why: str


TINY_BERT = "tiny bert"  # a `before` step: victims/bert, a tiny BERT as `attacks train --model bert` saves one

HOW: dict[str, list] = {
    "docs/guide/attacks.md": [
        Run(lines=(2, 11), cold=True,  # attacks train --model tfidf-lr, attacks predict
            names={"cold_train.jsonl": "train", "cold_dev.jsonl": "dev", "posts.jsonl": "test"}),
        # the page: "tfidf-lr trained on samples/cold/cold_train_2000.jsonl, attacked on samples/...300"
        Run(before=("attacks train --model tfidf-lr --train samples/cold/cold_train_2000.jsonl --out victims/tfidf-lr "
                    "-q", TINY_BERT), names={"cold_test.jsonl": SAMPLES["cold_test.jsonl"]}, slow=True),
    ],
    "docs/guide/cloak.md": [
        Run(lines=(1,), cold=True, names={"COLD": "."}, record="cold_test.jsonl"),
        # the page's cold_test.jsonl of 300 records is the bundled sample
        Run(names={"cold_test.jsonl": SAMPLES["cold_test.jsonl"]}),
        Run(lines=(1,), cold=True, names={"cold_train.jsonl": "train"}),
        Run(),
    ],
    "docs/guide/mmbert.md": [
        # the rest is a tiny MMBERT trained in three stages, about half an hour of CPU: not run here
        Run(lines=(1, 2, 3), prints=1),
        Unchecked("real weights (backbone/, Whisper, Kokoro) and a cloaked test file of one's own"),
    ],
    # the tone TTS on the cloak guide's cloaked.jsonl (the bundled 300 posts cloaked twice)
    "docs/guide/render-speech.md": [
        Run(lines=(1,), before=("cloak perturb --in samples/cold/cold_test_300.jsonl --out cloaked.jsonl --ops "
                                "homophone,emoji,split,abbrev,pinyin,english --variants 2 --seed 0 -q",), slow=True),
    ],
    "docs/guide/unveil.md": [Run(record="unveiled.jsonl"), Run()],
}


# ------------------------------------------------------------------------------------------ reading

def page_text(page: str) -> str:
    return (ROOT / page).read_text(encoding="utf-8")


# fences at the start of a line (not a list item's block), the commands holding no fence
PAIR = re.compile(r"^```bash\n((?:(?!```).)*)^```\n\n?```\n(.*?)^```\n", re.S | re.M)


def shown_outputs(page: str) -> list[tuple[str, str, str | None]]:
    """Each (commands, what they print, the first json block after them, before the next commands) a page
    shows."""
    text = page_text(page)
    found = []
    for m in PAIR.finditer(text):
        after = text[m.end():]
        after = after[:after.index("```bash")] if "```bash" in after else after
        record = re.search(r"```json\n(.*?)```", after, re.S)
        found.append((m.group(1), m.group(2), record.group(1) if record else None))
    return found


def pages() -> list[str]:
    found = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
    return [str(p.relative_to(ROOT)) for p in found if "```bash" in p.read_text(encoding="utf-8")]


def test_every_output_a_page_shows_says_how_it_is_checked():
    listed = {page: len(how) for page, how in HOW.items()}
    shown = {page: len(shown_outputs(page)) for page in pages() if shown_outputs(page)}
    assert shown == listed


# ------------------------------------------------------------------------------------------ comparing

TIME = re.compile(r"\d+(?:\.\d+)? (?:s\b|records/s)")


PROGRESS = re.compile(r"\|[^|]*\| *\d+/\d+ \[")  # tqdm's bar, which a terminal redraws in place and clears


def normalised(text: str, folder: Path) -> list[str]:
    text = text.replace(str(folder.resolve()) + "/", "").replace(str(folder) + "/", "")
    return [TIME.sub("<time>", line.rstrip()) for line in text.strip("\n").splitlines() if not PROGRESS.search(line)]


def missing_lines(shown: str, printed: str, folder: Path) -> list[str]:
    """The lines a block shows that the commands did not print, in order, with `...` for lines left out."""
    want, got = normalised(shown, folder), normalised(printed, folder)
    problems, at = [], 0
    for i, line in enumerate(want):
        if line == "...":
            continue
        skipping = i > 0 and want[i - 1] == "..."
        if skipping:
            found = next((j for j in range(at, len(got)) if got[j] == line), None)
        else:
            found = at if at < len(got) and got[at] == line else None
        if found is None:
            problems.append(f"shown:   {line}\nprinted: {got[at] if at < len(got) else '(nothing)'}")
            found = at if not skipping else at - 1  # the next shown line is compared with the next printed
        at = found + 1
    if not problems and want and want[-1] != "..." and at < len(got):
        problems.append("printed, not shown:\n" + "\n".join(got[at:]))
    return problems


def json_differences(shown, actual, where="record") -> list[str]:
    if shown == "...":
        return []
    if isinstance(shown, str) and shown.endswith("...") and isinstance(actual, str):
        return [] if actual.startswith(shown[:-3]) else [f"{where}: shown {shown!r}, written {actual!r}"]
    if isinstance(shown, dict) and isinstance(actual, dict):
        problems = [f"{where}: no field {key!r}" for key in shown if key not in actual and key != "..."]
        if "..." not in shown:
            problems += [f"{where}: field {key!r} written, not shown" for key in actual if key not in shown]
        return problems + [p for key in shown if key in actual
                           for p in json_differences(shown[key], actual[key], f"{where}.{key}")]
    if isinstance(shown, list) and isinstance(actual, list) and len(shown) == len(actual):
        return [p for i, (s, a) in enumerate(zip(shown, actual)) for p in json_differences(s, a, f"{where}[{i}]")]
    return [] if shown == actual else [f"{where}: shown {shown!r}, written {actual!r}"]


def shown_record(block: str):
    """A json block as a page shows one: `...` for the fields (or values) it leaves out."""
    text = re.sub(r",\s*\.\.\.,", ', "...": "...",', block).replace("{...}", '"..."')
    return json.loads(text)


def test_the_comparison_sees_a_moved_figure_and_only_that(tmp_path):
    shown = "cloak unveil: wrote 300, 237 changed; 0.5 s, 658 records/s\n...\nlast\n"
    assert missing_lines(shown, "cloak unveil: wrote 300, 237 changed; 2.1 s, 99 records/s\na\nb\nlast\n",
                         tmp_path) == []
    assert missing_lines(shown, "cloak unveil: wrote 300, 235 changed; 0.5 s, 658 records/s\nlast\n", tmp_path)
    assert missing_lines("a\n", "a\nb\n", tmp_path)  # a line printed and not shown, with no `...` for it
    assert json_differences(shown_record('{"id": "x", "a": "b...", "c": {...}, ...,\n "d": [1]}'),
                            {"id": "x", "a": "bcd", "c": {"e": 1}, "f": 0, "d": [1]}) == []
    assert json_differences(shown_record('{"id": "x", "d": [1]}'), {"id": "x", "d": [2]})
    assert json_differences(shown_record('{"id": "x"}'), {"id": "x", "f": 0})  # a field left out without `...`


# ------------------------------------------------------------------------------------------ running

def commands_folder(folder: Path) -> Path:
    """``cloak``, ``attacks`` and ``mmbert`` as the console scripts run them, on this checkout's code."""
    bin_dir = folder / ".bin"
    bin_dir.mkdir(exist_ok=True)
    for name in ("cloak", "attacks", "mmbert"):
        script = bin_dir / name
        script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m {name}.cli "$@"\n', encoding="utf-8")
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return bin_dir


def run_lines(lines: str, folder: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(folder / ".home"),
           "PATH": f"{commands_folder(folder)}{os.pathsep}{os.environ['PATH']}", "COLUMNS": "200"}
    ran = subprocess.run(["bash", "-e", "-c", lines], cwd=folder, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=1800)
    assert ran.returncode == 0, ran.stdout[-4000:]
    return ran.stdout


def selected(commands: str, numbers: tuple[int, ...]) -> str:
    lines = commands.replace("\\\n", " ").splitlines()
    return "\n".join(line for i, line in enumerate(lines, 1) if not numbers or i in numbers)


def cold_folder() -> Path | None:
    cold = os.environ.get("MMCLOAK_COLD")
    return Path(cold) if cold and (Path(cold) / "test.csv").exists() else None


def link_names(run: Run, folder: Path) -> None:
    """The files a page names, as the page says they were made: COLD's own (converted) or the samples."""
    for name, target in run.names.items():
        if (folder / name).exists():
            continue
        if run.cold and target != ".":
            subprocess.run([sys.executable, "-m", "cloak.cli", "convert", "--from", "cold", "--in",
                            str(cold_folder() / f"{target}.csv"), "--out", str(folder / name)], check=True,
                           env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True)
        else:
            (folder / name).symlink_to(cold_folder() if run.cold else ROOT / target)


def cases():
    for page, how in HOW.items():
        for i, run in enumerate(how):
            if isinstance(run, Run):
                yield pytest.param(page, i, marks=[pytest.mark.slow] if run.slow else [], id=f"{page} output {i + 1}")


@pytest.mark.parametrize(("page", "index"), list(cases()))
def test_a_page_shows_what_its_commands_print(page, index, tmp_path, request):
    run = HOW[page][index]
    if run.cold and cold_folder() is None:
        pytest.skip("needs COLD's own files: set MMCLOAK_COLD to COLD's folder")
    folder = tmp_path / "page"
    folder.mkdir()
    (folder / "samples").symlink_to(ROOT / "samples")
    outputs = shown_outputs(page)
    # the page's earlier outputs made what this one reads, as a reader following the page has them
    for earlier, (commands, _, _) in zip(HOW[page][:index], outputs):
        if isinstance(earlier, Run) and not earlier.cold:
            link_names(earlier, folder)
            run_lines(selected(commands, earlier.lines), folder)
    commands, shown, record = outputs[index]
    shown = "\n".join(shown.splitlines()[:run.prints]) if run.prints else shown
    link_names(run, folder)
    for step in run.before:
        if step == TINY_BERT:
            from .test_docs import save_tiny_bert

            save_tiny_bert(folder / "victims" / "bert", request.getfixturevalue("backbone"))
        else:
            run_lines(step, folder)
    printed = run_lines(selected(commands, run.lines), folder)
    problems = missing_lines(shown, printed, folder)
    assert not problems, f"{page}, output {index + 1}:\n" + "\n".join(problems) + "\nprinted:\n" + printed
    if run.record:
        assert record, f"{page}, output {index + 1}: no json block after it"
        with open(folder / run.record, encoding="utf-8") as f:
            first = json.loads(f.readline())
        assert not (differences := json_differences(shown_record(record), first)), "\n".join(differences)


# ------------------------------------------------------------------------------------------ make demo

DEMO_PAGES = {"README.md": "Macro-F1, clean and its change under each attack:",
              "docs/getting-started.md": "cloak perturb: read 2000 records"}


def plain_blocks(page: str) -> list[str]:
    """The blocks of a page with no language (what a command prints)."""
    blocks, lines, language = [], None, ""
    for line in page_text(page).splitlines():
        if line.startswith("```") and lines is None:
            lines, language = [], line[3:]
        elif line.startswith("```"):
            blocks += [] if language else ["\n".join(lines) + "\n"]
            lines = None
        elif lines is not None:
            lines.append(line)
    return blocks


def demo_blocks() -> dict[str, str]:
    """The plain block of each page that shows what `make demo` prints."""
    return {page: next(b for b in plain_blocks(page) if b.startswith(start)) for page, start in DEMO_PAGES.items()}


def test_the_pages_show_the_demo_output():
    assert all(block.rstrip().endswith("report: demo_out/report.html (and report.md, report.json)")
               for block in demo_blocks().values())


@pytest.mark.slow
def test_the_demo_output_is_what_make_demo_prints(tmp_path):
    """`make demo`'s own recipe, its commands this checkout's (a venv of wrappers, marked installed)."""
    make, shown = shutil.which("make"), demo_blocks()
    if make is None:
        pytest.skip("no make")
    venv = tmp_path / "venv"
    bin_dir = venv / "bin"
    shutil.copytree(commands_folder(tmp_path), bin_dir)
    (bin_dir / "python").symlink_to(sys.executable)
    (venv / ".installed-demo").touch()  # newer than pyproject.toml: make installs nothing
    ran = subprocess.run([make, "-s", "demo", f"VENV={venv}", f"DEMO={tmp_path / 'demo_out'}"], cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=3600)
    assert ran.returncode == 0, ran.stdout[-4000:]
    printed = ran.stdout.replace(str(tmp_path / "demo_out"), "demo_out")
    for page, block in shown.items():
        # the README shows the demo's last lines, from the report's table on: what comes before is left out
        problems = missing_lines("...\n" + block, printed, tmp_path)
        assert not problems, f"{page}:\n" + "\n".join(problems)


# ------------------------------------------------------------------------------------------ the unveil guide's table

UNVEIL_GUIDE = "docs/guide/unveil.md"
EXAMPLE = re.compile(r"((?:`[^`]+`(?: \([^)]*\))?, )*`[^`]+`(?: \([^)]*\))?) -> `([^`]+)`")
HAN = re.compile(r"[\u4e00-\u9fff]")


def read_back_claims() -> list[tuple[str, str]]:
    """(cloaked, read back) for each example of the guide's table of readers (`a`, `b` -> `c`: both read c)."""
    text = page_text(UNVEIL_GUIDE)
    table = text[text.index("## What is read back, and how"):text.index("## The context scorer")]
    rows = [line.split("|")[3] for line in table.splitlines() if line.startswith("| `") or line.startswith("| |")]
    return [(source.encode("ascii", "backslashreplace").decode("unicode_escape") if "\\u" in source else source,
             target)
            for row in rows for m in EXAMPLE.finditer(row)
            for source in re.findall(r"`([^`]+)`", m.group(1)) for target in [m.group(2)]]


def left_as_written() -> list[str]:
    """The sentences the paragraph under the table says are not read back."""
    text = page_text(UNVEIL_GUIDE)
    paragraph = text[text.index("Each example is read back"):text.index("What is not read back")]
    return [span for span in re.findall(r"`([^`]+)`", paragraph) if HAN.search(span)]


def test_every_read_back_the_unveil_guide_claims_is_made_by_the_defaults():
    """Each example of the readers' table, a sentence as the page shows it, is read back by ``Unveiler()`` with
    its defaults into the sentence shown; the ones the page says stay as written stay so."""
    from cloak.unveil import Unveiler

    claims, kept = read_back_claims(), left_as_written()
    assert len(claims) >= 25 and any("🐒" in c for c, _ in claims) and "你们这帮🐒" in kept
    unveiler = Unveiler()
    read = [u.text for u in unveiler.unveil_batch([c for c, _ in claims] + kept)]
    wrong = [f"{c!r} read back as {r!r}, the page says {t!r}" for (c, t), r in zip(claims, read) if r != t]
    wrong += [f"{k!r} read back as {r!r}, the page says it stays" for k, r in zip(kept, read[len(claims):]) if r != k]
    assert not wrong, "\n".join(wrong)
