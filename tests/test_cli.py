"""The `cloak` command as a new user meets it."""
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cloak import available_ops

from .conftest import DATA, read_jsonl

# pinyin as the plain style only (the default mixes spaced, capitalised, toned and look-alike spellings)
PLAIN_PINYIN = "pinyin:mode=word:spacing=joined:case=lower:tones=none:lookalike=0"

CLOAK = [sys.executable, "-m", "cloak.cli"]


def cloak(*args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([*CLOAK, *map(str, args)], capture_output=True, text=True, **kwargs)


@pytest.mark.parametrize("command", [[], ["perturb"], ["convert"], ["show"], ["ops"], ["render"]])
def test_help_explains_every_flag(command):
    result = cloak(*command, "--help")
    assert result.returncode == 0
    flags = {"perturb": ("--in", "--out", "--ops", "--targets", "--rate", "--variants", "--seed",
                         "--workers", "--shard", "--on-error", "--resume", "--protect"),
             "render": ("--in", "--out", "--size", "--mode", "--font", "--cache-dir", "--preview",
                        "--build-similarity-index")}
    for flag in flags.get("".join(command), ()):
        assert flag in result.stdout


def test_ops_lists_every_op_its_lexicon_coverage_and_what_each_style_makes():
    out = cloak("ops").stdout
    for name in ("homophone", "similar", "split", "abbrev", "pinyin", "radical", "english", "emoji",
                 "traditional", "variant", "shuffle", "noise", "zerowidth", "fullwidth"):
        assert f"\n{name} " in "\n" + out
    assert "lexicon: cloaks 551 of 553 terms" in out  # homophone
    lines = out.splitlines()
    spaced = next(line for line in lines if "pinyin:mode=word:spacing=spaced" in line)
    assert spaced.split("->")[1].split(",")[0].strip() == "bai ren"  # the commonest spelling first
    assert any("radical" in line and "妈 -> 马" in line for line in lines)


def test_ops_counts_the_targets_chosen_as_perturb_chooses_them(tmp_path, sample_path):
    path = tmp_path / "terms.txt"
    path.write_text("天气\n黑人\n", encoding="utf-8")
    out = cloak("ops", "--lexicon", path).stdout
    assert f"{path}: cloaks 2 of 2 terms" in out and "lexicon: cloaks" not in out
    mined = cloak("ops", "--targets", "lexicon+mined", "--mine-from", sample_path)
    assert mined.returncode == 0, mined.stderr
    counted = [int(line.split(" of ")[1].split()[0]) for line in mined.stdout.splitlines()
               if "lexicon+mined: cloaks" in line]
    assert len(counted) == len(available_ops()) and counted[0] > 553  # a line for every op
    bad = cloak("ops", "--targets", "mined")
    assert bad.returncode == 1 and "--mine-from FILE" in bad.stderr
    assert "no terms to count" in cloak("ops", "--targets", "all").stderr


@pytest.mark.parametrize("command", ["perturb", "ops"])
def test_records_to_mine_are_refused_where_the_targets_mine_none(tmp_path, sample_path, command):
    out = tmp_path / "out.jsonl"
    args = ["--in", sample_path, "--out", out] if command == "perturb" else []
    result = cloak(command, *args, "--targets", "lexicon", "--mine-from", sample_path)
    assert result.returncode == 1 and result.stderr == (
        f"cloak: error: --mine-from {sample_path}: only --targets mined or lexicon+mined mine labelled records, and "
        "--targets lexicon mines none (add --targets lexicon+mined, or leave --mine-from out)\n")
    assert not out.exists() and not (tmp_path / "out.jsonl.partial").exists()


def test_perturb_then_show(tmp_path, sample_path):
    out = tmp_path / "out.jsonl"
    result = cloak("perturb", "--in", sample_path, "--out", out, "--ops", "homophone,emoji", "--seed", 3)
    assert result.returncode == 0, result.stderr
    assert "read 300 records, skipped 0, wrote 300" in result.stderr
    assert "edits: " in result.stderr and "homophone" in result.stderr
    assert len(read_jsonl(out)) == 300
    shown = cloak("show", out, "-n", 3)
    assert shown.returncode == 0 and shown.stdout.count("  + ") == 3 and "⟦" in shown.stdout


def test_show_marks_edits_apart_from_a_posts_own_brackets():
    from cloak import Perturber
    from cloak.show import render_record

    source = "只要不来中国的外国人就是好外国人[机智]"
    out = Perturber(ops="homophone", targets="lexicon", seed=0)(source)
    record = {"text": out.text, "source_text": source, "cloak": {"edits": [e.to_dict() for e in out.edits]}}
    plain = [line.plain for line in render_record(record, colour=False)]
    assert out.edits and all(line.endswith("[机智]") and "⟦" in line for line in plain)
    assert re.sub("[⟦⟧]", "", plain[0][4:]) == source and re.sub("[⟦⟧]", "", plain[1][4:]) == out.text


def test_stdin_to_stdout():
    result = cloak("perturb", "--in", "-", "--out", "-", "--ops", PLAIN_PINYIN, "-q",
                   input='{"text": "他是同性恋", "id": 7}\n')
    assert result.returncode == 0, result.stderr
    assert '"text": "他是tongxinglian"' in result.stdout and '"id": 7' in result.stdout


def test_a_malformed_line_fails_naming_it(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "黑人"}\n{"text": 黑人}\n', encoding="utf-8")
    result = cloak("perturb", "--in", bad, "--out", tmp_path / "out.jsonl")
    assert result.returncode == 1
    assert f"{bad}, line 2: invalid JSON" in result.stderr
    assert not (tmp_path / "out.jsonl").exists()
    skipped = cloak("perturb", "--in", bad, "--out", tmp_path / "out.jsonl", "--on-error", "skip")
    assert skipped.returncode == 0 and "skipped 1" in skipped.stderr and "line 2" in skipped.stderr


def test_bad_options_are_clear(tmp_path, sample_path):
    assert "unknown op 'homofone'" in cloak("perturb", "--in", sample_path, "--out", "-",
                                            "--ops", "homofone").stderr
    assert "input file not found" in cloak("perturb", "--in", tmp_path / "no.jsonl", "--out", "-").stderr
    assert "shard must look like i/n" in cloak("perturb", "--in", sample_path, "--out", "-",
                                               "--shard", "half").stderr


@pytest.mark.slow
@pytest.mark.parametrize("sig, workers", [(signal.SIGINT, 1), (signal.SIGTERM, 2)])
def test_ctrl_c_leaves_no_output_and_resume_finishes_the_job(tmp_path, sample_path, sig, workers):
    big = tmp_path / "big.jsonl"
    lines = Path(sample_path).read_bytes()
    big.write_bytes(lines * 150)  # 45,000 records: a few seconds of work
    out, whole = tmp_path / "out.jsonl", tmp_path / "whole.jsonl"
    args = ["perturb", "--in", big, "--ops", "homophone,emoji,split", "--variants", 2, "--workers", workers]
    proc = subprocess.Popen([*CLOAK, *map(str, args), "--out", str(out)], stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONFAULTHANDLER": "1"}, start_new_session=True)
    partial = Path(str(out) + ".partial")
    deadline = time.time() + 60
    while (not partial.exists() or partial.stat().st_size < 100_000) and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:  # a hang (seen once in CI): say where every process is stuck
        os.killpg(proc.pid, signal.SIGABRT)  # with PYTHONFAULTHANDLER, each prints its threads' stacks
        pytest.fail(f"still running 60 s after {sig!r}; its stacks:\n{proc.communicate()[1]}")
    assert proc.returncode == 130, err
    assert "rerun with --resume" in err
    assert not out.exists() and partial.exists()
    # rerun without --resume: the work done is not thrown away unasked (a .partial of 68,353 lines was)
    kept = partial.read_bytes()
    refused = cloak(*args, "--out", out)
    assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert f"{partial} holds " in refused.stderr
    assert "of an interrupted run: rerun with --resume to continue it, or --overwrite to start over" in refused.stderr
    assert partial.read_bytes() == kept
    resumed = cloak(*args, "--out", out, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed after line" in resumed.stderr
    assert cloak(*args, "--out", whole).returncode == 0
    assert out.read_bytes() == whole.read_bytes()


def test_convert_cold_and_swsr(tmp_path):
    out = tmp_path / "cold.jsonl"
    result = cloak("convert", "--from", "cold", "--in", DATA / "cold_test_20.csv", "--out", out)
    assert result.returncode == 0, result.stderr
    records = read_jsonl(out)
    assert len(records) == 20
    assert records[0] == {"id": "cold-cold_test_20-0", "text": "只要不来中国的外国人就是好外国人[机智]",
                          "label": 1, "cold_index": "1949", "split": "test", "topic": "race",
                          "fine_grained_label": "2"}
    out = tmp_path / "swsr.jsonl"
    assert cloak("convert", "--from", "swsr", "--in", DATA / "swsr_20.csv", "--out", out).returncode == 0
    first = read_jsonl(out)[0]
    assert first["id"] == "swsr-swsr_20-0" and first["label"] == 1 and first["category"] == "SCB"
    assert first["text"].startswith("她们不结婚不要孩子")
    wrong = cloak("convert", "--from", "swsr", "--in", DATA / "cold_test_20.csv", "--out", tmp_path / "x")
    assert wrong.returncode == 1 and "no column 'comment_text'" in wrong.stderr


def test_a_plugin_in_the_current_folder_or_a_file_registers_its_op(tmp_path):
    (tmp_path / "myops.py").write_text(
        "from dataclasses import dataclass\nfrom cloak import Edit, Op, register_op\n\n"
        "@register_op\n@dataclass\nclass Reverse(Op):\n    name = 'reverse'\n\n"
        "    def edit_span(self, text, start, end, rng):\n"
        "        return [Edit(self.name, start, end, text[start:end], text[start:end][::-1])]\n", encoding="utf-8")
    command = os.path.join(os.path.dirname(sys.executable), "cloak")  # the installed command: its sys.path
    for plugin in ("myops", "./myops.py"):                             # does not hold the current folder
        result = subprocess.run([command, "perturb", "--in", "-", "--out", "-", "--plugin", plugin, "--ops",
                                 "reverse", "-q"], input='{"text": "他是同性恋"}\n', capture_output=True, text=True,
                                cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert '"text": "他是恋性同"' in result.stdout
    missing = subprocess.run([command, "perturb", "--in", "-", "--out", "-", "--plugin", "nope"], input="",
                             capture_output=True, text=True, cwd=tmp_path)
    assert missing.returncode == 1 and "cannot import plugin 'nope'" in missing.stderr


def test_the_summary_counts_building_the_tables(tmp_path, sample_path, monkeypatch):
    """The summary said 0.1 s on a 12 s run: building the op tables (and mining the targets) was left out."""
    from click.testing import CliRunner

    from cloak.cli import main
    from cloak.perturber import Perturber

    prepare = Perturber.prepare

    def slow_prepare(self):
        time.sleep(1.0)
        return prepare(self)

    monkeypatch.setattr(Perturber, "prepare", slow_prepare)
    result = CliRunner().invoke(main, ["perturb", "--in", str(sample_path), "--out", str(tmp_path / "out.jsonl"),
                                       "--ops", "homophone", "--workers", "1"])
    assert result.exit_code == 0, result.output
    total, setup = map(float, re.search(r"; ([\d.]+) s \(([\d.]+) s of it building the tables and targets\)",
                                        result.stderr).groups())
    assert setup >= 1.0 and total >= setup
