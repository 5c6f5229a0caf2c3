"""The tables of the results pages, one module a page (``docs/gen_results.py`` writes them): each a function
of the benchmarks' results returning :class:`Table` s, and what they have in common here."""
from __future__ import annotations

import dataclasses
import json
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path

from bench.common import REPO, WORK

COMMANDS_FILE = "docs/result_commands.yaml"
# the benchmarks' working folder as a command recorded it (relative to the repository), and as the pages
# write it
WORK_RECORDED, WORK_SHOWN = f"{WORK.relative_to(REPO).as_posix()}/", "WORK/"


class Results:
    """The JSON files of a results folder, each read once; the command of those that do not record it."""

    def __init__(self, folder: Path, commands: dict[str, str]) -> None:
        self.folder = folder
        self.commands = commands
        self._read: dict[str, dict] = {}

    def __call__(self, name: str) -> dict:
        if name not in self._read:
            path = self.folder / name
            if not path.is_file():
                raise SystemExit(f"{path}: not found (a results page reads it)")
            self._read[name] = json.loads(path.read_text(encoding="utf-8"))
        return self._read[name]

    def has(self, name: str) -> bool:
        """Whether a benchmark has written ``name`` yet (a table of a run still under way is :class:`Pending`)."""
        return (self.folder / name).is_file()

    def source(self, name: str) -> str:
        """Where a table's figures come from: the file, its command, the machine and the date."""
        data = self(name)
        machine = data.get("machine") or {}
        command = data.get("command") or machine.get("command") or self.commands.get(name)
        if not command:
            raise SystemExit(f"bench/results/{name} records no command: add it to {COMMANDS_FILE}")
        command = command.replace(WORK_RECORDED, WORK_SHOWN)
        cpus = machine.get("cpus_usable") or machine.get("cpu_count")
        where = ", ".join(str(x) for x in (machine.get("cpu_model"), cpus and f"{cpus} CPUs",
                                             machine.get("python") and f"Python {machine['python']}") if x)
        date = (machine.get("date") or "date not recorded")[:10]
        commit = ((machine.get("git") or {}).get("commit") or "")[:7]
        return (f"`bench/results/{name}`, made by `{command}` on {where or 'a machine not recorded'}, "
                f"{date}" + (f" (commit {commit})" if commit else ""))


@dataclasses.dataclass
class Table:
    """One results table: a heading, the JSON files it reads, its columns and rows, and a line of notes."""

    title: str
    sources: Sequence[str]
    columns: Sequence[str]
    rows: Sequence[Sequence]
    note: str = ""

    def markdown(self, results: Results) -> str:
        align = ["---" if i == 0 else "---:" for i in range(len(self.columns))]
        lines = [f"## {self.title}", "", "| " + " | ".join(self.columns) + " |", "|" + "|".join(align) + "|"]
        lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in self.rows]
        lines.append("")
        if self.note:
            lines += [self.note, ""]
        if len(self.sources) == 1:
            lines += [f"From {results.source(self.sources[0])}.", ""]
        else:
            lines += ["From:", ""] + [f"- {results.source(name)}" for name in self.sources] + [""]
        return "\n".join(lines)


@dataclasses.dataclass
class Pending:
    """A table whose benchmark has not written its JSON yet: its heading and the command that will."""

    title: str
    command: str

    def markdown(self, results: Results) -> str:
        return f"## {self.title}\n\nNot run yet: `{self.command}`.\n"


# ------------------------------------------------------------------------------------------------ numbers

def cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value).replace("|", "\\|")


def f3(x: float | None) -> str:
    return "" if x is None else f"{x:.3f}"


def f4(x: float | None) -> str:
    return "" if x is None else f"{x:.4f}"


def pct(x: float | None, digits: int = 1) -> str:
    return "" if x is None else f"{100 * x:.{digits}f}%"


def num(x: float | None, digits: int = 0) -> str:
    return "" if x is None else f"{x:,.{digits}f}"


def interval(pair: Sequence[float] | None) -> str:
    return "" if not pair else f"[{pair[0]:.3f}, {pair[1]:.3f}]"


def with_interval(figure: dict, sign: str = "") -> str:
    """A ``{"value", "interval"}`` figure (``bench.claim_protocol.figure``) as its value and 95% interval;
    ``sign="+"`` writes the value's sign always (a difference)."""
    return f"{figure['value']:{sign}.3f} {interval(figure['interval'])}"


def share(value: float | None, bounds: Sequence[float] | None) -> str:
    """A ratio as a percentage with its interval; "undefined" where the baseline lost nothing."""
    if value is None:
        return "undefined"
    return pct(value, 0) + (f" [{pct(bounds[0], 0)}, {pct(bounds[1], 0)}]" if bounds else "")


def mean(values: Iterable[float]) -> float:
    return statistics.mean(list(values))


