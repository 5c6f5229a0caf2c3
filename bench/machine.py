"""What a benchmark ran on: machine, load, package versions, date and commit (shared by bench/*.py)."""
from __future__ import annotations

import datetime
import os
import platform
import subprocess
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _git_state() -> dict:
    def run(*args):
        try:
            return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                                  timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""
    dirty = run("status", "--porcelain", "--untracked-files=no")
    return {"commit": run("rev-parse", "HEAD") or None,
            "modified_files": dirty.splitlines() if dirty else []}


def machine_info(packages: Iterable[str] = ()) -> dict:
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    return {
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu_model": _cpu_model(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "loadavg_at_start": load,
        "packages": {name: version(name) for name in ("mmcloak", *packages)},
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git": _git_state(),
    }
