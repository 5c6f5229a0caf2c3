"""The command lines as a new user meets them: nothing overwritten, errors that say what to do, one name
per concept, models that can be moved, files others can read, logs without progress-bar noise."""
from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time

import pytest

from .conftest import read_jsonl

ROOT_ENV = {**os.environ, "PYTHONWARNINGS": "ignore"}


def command(module: str, *args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *map(str, args)], capture_output=True, text=True,
                          timeout=600, cwd=cwd, env=ROOT_ENV)


def test_an_output_never_replaces_its_input(tmp_path, sample_path):
    posts = tmp_path / "posts.jsonl"
    shutil.copy(sample_path, posts)
    before = posts.read_bytes()
    (tmp_path / "link.jsonl").symlink_to(posts)
    for out in (posts, tmp_path / "." / "posts.jsonl", tmp_path / "link.jsonl"):
        result = command("cloak.cli", "perturb", "--in", posts, "--out", out)
        assert result.returncode == 1 and "is the input" in result.stderr, result.stderr
    assert posts.read_bytes() == before
    result = command("cloak.cli", "convert", "--from", "cold", "--in", posts, "--out", posts)
    assert result.returncode == 1 and "is the input" in result.stderr


def test_a_csv_where_records_are_read_says_to_convert_it(tmp_path):
    """cloak perturb and unveil read CSV (tests/test_csv_records.py); commands that read JSONL only say how."""
    table = tmp_path / "posts.csv"
    table.write_text("text,label\n黑人都是垃圾,1\n", encoding="utf-8")
    result = command("cloak.cli", "fit-lm", "--train", table, "--out", tmp_path / "lm.gz")
    assert result.returncode == 1
    assert f"`cloak convert --from csv --in {table} --out records.jsonl`" in result.stderr


def test_an_unknown_op_or_strength_is_named_with_the_closest(tmp_path, sample_path):
    result = command("cloak.cli", "perturb", "--in", sample_path, "--out", tmp_path / "o.jsonl", "--ops", "homofone")
    assert result.stderr.strip() == "cloak: error: unknown op 'homofone'; did you mean 'homophone'?"


def test_speech_options_have_one_name_and_the_old_ones_still_work(tmp_path, sample_path):
    posts = tmp_path / "posts.jsonl"
    posts.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in read_jsonl(sample_path)[:3]),
                     encoding="utf-8")
    help_text = command("cloak.cli", "speak", "--help").stdout
    assert "--tts " in help_text and "--tts-model" in help_text and "--speech-cache" in help_text
    assert "--backend" not in help_text and "--model" not in help_text.replace("--tts-model", "")
    new = command("cloak.cli", "speak", "--in", posts, "--speech-cache", tmp_path / "a", "--tts", "tone")
    old = command("cloak.cli", "speak", "--in", posts, "--out", tmp_path / "b", "--backend", "tone")
    assert new.returncode == old.returncode == 0, (new.stderr, old.stderr)
    assert (tmp_path / "a" / "index.jsonl").read_text() == (tmp_path / "b" / "index.jsonl").read_text()


def test_progress_in_a_log_is_plain_lines(tmp_path, sample_path, monkeypatch, capsys):
    """stderr into a file (a log): no bar and no carriage returns; a short run says nothing, a long one a
    plain line every FILE_INTERVAL seconds (`mmbert train --stage 1` said nothing for five minutes)."""
    result = command("cloak.cli", "perturb", "--in", sample_path, "--out", tmp_path / "o.jsonl")
    assert result.returncode == 0 and "\r" not in result.stderr and result.stderr.count("\n") == 1
    import cloak.common.progress as progress

    monkeypatch.setattr(progress, "FILE_INTERVAL", 0.05)
    for _ in progress.progress_bar(range(4), desc="stage 1", unit="batch"):  # pytest's stderr is no terminal
        time.sleep(0.08)
    lines = capsys.readouterr().err
    assert "\r" not in lines and lines.count("\n") >= 2, lines
    assert all(line.startswith("stage 1: ") and "batch" in line for line in lines.splitlines()), lines
    for _ in progress.progress_bar(range(4), progress=False):
        time.sleep(0.08)
    assert capsys.readouterr().err == ""


def test_a_saved_model_can_be_read_by_others(tmp_path, sample_path):
    """safetensors writes its files 0600; a saved victim's are the user's usual (umask) permissions."""
    from attacks import make_victim

    rows = read_jsonl(sample_path)
    old = os.umask(0o022)
    try:
        make_victim("tfidf-lr").fit(rows[:100]).save(str(tmp_path / "v"))
    finally:
        os.umask(old)
    for file in (tmp_path / "v").iterdir():
        assert stat.S_IMODE(file.stat().st_mode) == 0o644, file


def test_permissions_of_a_saved_torch_model(tmp_path):
    torch = pytest.importorskip("torch")
    from cloak.common.io import usual_permissions
    from safetensors.torch import save_model

    path = tmp_path / "m.safetensors"
    save_model(torch.nn.Linear(2, 2), str(path))
    assert stat.S_IMODE(path.stat().st_mode) & 0o044 == 0  # what safetensors leaves: private
    usual_permissions([path])
    assert stat.S_IMODE(path.stat().st_mode) & 0o044 == 0o044


# ---- mmbert ----

@pytest.mark.slow
def test_the_tiny_preset_trains_offline_with_no_whisper_given(data, tmp_path):
    """`--config tiny` needs no download: its Whisper is random-tiny (random weights, made here)."""
    result = command("mmbert.cli", "train", "--stage", "1", "--config", "tiny", "--train", data / "train.jsonl",
                     "--dev", data / "dev.jsonl", "--out", tmp_path / "s1", "--speech-cache", tmp_path / "speech",
                     "-q")
    assert result.returncode == 0, result.stderr
    config = json.loads((tmp_path / "s1" / "config.json").read_text())
    assert config["features"]["whisper"] == "random-tiny"


@pytest.mark.slow
def test_a_stage_1_model_is_said_to_be_no_detector(stages, data, tmp_path):
    result = command("mmbert.cli", "evaluate", "--model", stages[1], "--data", data / "dev.jsonl", "-q")
    assert result.returncode == 0, result.stderr
    assert f"mmbert: warning: {stages[1]} is a stage-1 model: only its aligners are trained" in result.stderr
    assert result.stdout == ""  # the figures go to --out FILE as JSON, the table to stderr
    result = command("mmbert.cli", "evaluate", "--model", stages[3], "--data", data / "dev.jsonl", "-q")
    assert "stage-1" not in result.stderr


def test_a_useless_stage_is_warned_of(stages, data):
    from mmbert.train import useless_warning

    log = json.loads((open(os.path.join(stages[3], "log.json")).read()))
    entry = log[-1]
    assert "dev_predicted" in entry and sum(entry["dev_predicted"].values()) == len(read_jsonl(data / "dev.jsonl"))
    lopsided = [{**entry, "dev_predicted": {"0": 16}}]
    assert useless_warning(lopsided, entry["epoch"], 16) == "it calls every one of the 16 dev posts non-offensive"


@pytest.mark.slow
def test_a_moved_model_folder_predicts_the_same_from_anywhere(stages, data, tmp_path, run):
    """A saved model keeps no cwd-relative path and no speech cache of the machine that trained it."""
    config = json.loads(open(os.path.join(stages[3], "config.json")).read())
    assert "speech_cache" not in config["features"] and os.path.isabs(config["features"]["whisper"])
    moved = tmp_path / "elsewhere" / "s3"
    shutil.copytree(stages[3], moved)
    posts = data / "dev.jsonl"
    first = command("mmbert.cli", "predict", "--model", stages[3], "--in", posts, "--out", tmp_path / "a.jsonl", "-q",
                    "--speech-cache", run["features"]["speech_cache"])
    other = tmp_path / "cwd"
    other.mkdir()
    second = command("mmbert.cli", "predict", "--model", moved, "--in", posts, "--out", tmp_path / "b.jsonl", "-q",
                     cwd=other)
    assert first.returncode == second.returncode == 0, (first.stderr, second.stderr)
    assert [r["mmbert"]["probs"] for r in read_jsonl(tmp_path / "a.jsonl")] == \
        [r["mmbert"]["probs"] for r in read_jsonl(tmp_path / "b.jsonl")]


def test_mmbert_errors_name_the_path_and_hint_only_where_it_applies(data, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("")
    result = command("mmbert.cli", "train", "--stage", "1", "--config", "tiny", "--train", data / "train.jsonl",
                     "--dev", data / "dev.jsonl", "--out", afile)
    assert result.stderr.strip() == f"mmbert: error: --out {afile}: is a file, not a folder"
    assert "--multi_gpu" in command("mmbert.cli", "--help").stdout


@pytest.mark.slow
def test_the_python_api_prints_no_library_noise(backbone, sample_path, capfd):
    """Fitting a torch victim through the API once printed transformers' load report (the new head's
    weights MISSING, the MLM head's UNEXPECTED) and its loading bar."""
    from attacks import make_victim

    rows = read_jsonl(sample_path)
    capfd.readouterr()
    make_victim("bert", {"backbone": backbone, "max_length": 32}, {"epochs": 1, "batch_size": 16}).fit(
        rows[:30], rows[30:40], progress=False)
    err = capfd.readouterr().err
    assert "LOAD REPORT" not in err and "Loading weights" not in err, err


# ---- what main's first round left: outputs written through a partial file or into a folder, folder
# outputs that are files, model errors said where the model is loaded, plurals, API noise, -q ----

@pytest.mark.slow
def test_an_output_is_never_written_through_its_input(tmp_path, sample_path):
    """`--in x.jsonl.partial --out x.jsonl` emptied the input (the output is written through OUT.partial)
    and, the run failing, removed it; a folder command wrote its index.jsonl over an input of that name."""
    partial = tmp_path / "posts.jsonl.partial"
    shutil.copy(sample_path, partial)
    before = partial.read_bytes()
    result = command("cloak.cli", "perturb", "--in", partial, "--out", tmp_path / "posts.jsonl")
    assert result.returncode == 1, result.stderr
    assert f"is written through {partial}, which is the input" in result.stderr
    assert partial.read_bytes() == before and not (tmp_path / "posts.jsonl").exists()
    for name, args in (("render", ["--out", tmp_path / "folder"]), ("speak", ["--speech-cache", tmp_path / "folder"])):
        index = tmp_path / "folder" / "index.jsonl"
        index.parent.mkdir(exist_ok=True)
        shutil.copy(sample_path, index)
        result = command("cloak.cli", name, "--in", index, *args)
        assert result.returncode == 1 and f"the output {index} is the input" in result.stderr, (name, result.stderr)
        assert index.read_bytes() == before


@pytest.mark.slow
def test_a_folder_output_that_is_a_file_is_named(tmp_path, sample_path):
    afile = tmp_path / "afile"
    afile.write_text("keep\n")
    for name, option in (("render", "--out"), ("speak", "--speech-cache"), ("speak", "--out")):
        result = command("cloak.cli", name, "--in", sample_path, option, afile)
        shown = "--out" if name == "render" else "--speech-cache"
        assert result.stderr == f"cloak {name}: error: {shown} {afile}: is a file, not a folder\n", result.stderr
    assert afile.read_text() == "keep\n"


def test_a_model_that_cannot_be_loaded_is_named_with_a_hint_only_for_a_name(tmp_path):
    """A path that is not there is a typo, which no model hub mends; a name that cannot be fetched gets
    the hint to pass a local path; a local file that is not a model says so."""
    from cloak.common.models import ModelLoadError, loading_model

    with pytest.raises(ModelLoadError, match=r"^Whisper model ./whisper\.pt: no such file or folder$"):
        with loading_model("Whisper model", "./whisper.pt", hint="give a checkpoint"):
            raise AssertionError("the loader is not called for a path that is not there")
    with pytest.raises(ModelLoadError) as fetched:
        with loading_model("backbone", "owner/model", hint="pass a folder: --from DIR"):
            raise OSError("We couldn't connect to 'https://huggingface.co'.\nCheck your internet connection")
    assert str(fetched.value) == ("backbone 'owner/model' is not a local file or folder, and fetching it by name "
                                  "failed: We couldn't connect to 'https://huggingface.co' (names are downloaded "
                                  "from the model hub; without one, pass a folder: --from DIR)")
    folder = tmp_path / "notamodel"
    folder.mkdir()
    with pytest.raises(ModelLoadError, match=f"^backbone {folder}: cannot be loaded: no config.json$"):
        with loading_model("backbone", str(folder), hint="pass a folder"):
            raise OSError("no config.json")


@pytest.mark.slow
def test_the_commands_say_which_model_failed(data, tmp_path):
    pytest.importorskip("whisper")
    result = command("cloak.cli", "synth", "--in", data / "dev.jsonl", "--speech-cache", tmp_path / "s",
                     "--whisper", tmp_path / "missing.pt")
    assert result.stderr == f"cloak synth: error: Whisper model {tmp_path / 'missing.pt'}: no such file or folder\n"
    result = command("mmbert.cli", "train", "--stage", "1", "--config", "tiny", "--train", data / "train.jsonl",
                     "--dev", data / "dev.jsonl", "--out", tmp_path / "s1", "--from", "./no-such-backbone/")
    assert result.stderr == "mmbert: error: backbone ./no-such-backbone/: no such file or folder\n"


@pytest.mark.slow
def test_a_model_moved_to_a_machine_without_its_whisper_says_how_to_give_it(stages, data, tmp_path):
    moved = tmp_path / "s3"
    shutil.copytree(stages[3], moved)
    config = json.loads((moved / "config.json").read_text())
    config["features"]["whisper"] = "/elsewhere/whisper-base.pt"  # the path on the machine that trained it
    (moved / "config.json").write_text(json.dumps(config))
    result = command("mmbert.cli", "predict", "--model", moved, "--in", data / "dev.jsonl", "--out",
                     tmp_path / "a.jsonl", "-q")
    assert result.stderr == (f"mmbert: error: {moved} was trained with /elsewhere/whisper-base.pt, which is not here: "
                             "give where the same weights are with --whisper PATH\n")


@pytest.mark.slow
def test_counts_are_said_in_the_singular_for_one(tmp_path, sample_path, stages):
    one = tmp_path / "one.jsonl"
    one.write_text(sample_path.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    result = command("cloak.cli", "perturb", "--in", one, "--out", tmp_path / "o.jsonl")
    assert result.stderr.startswith("cloak perturb: read 1 record, "), result.stderr
    result = command("cloak.cli", "render", "--in", one, "--out", tmp_path / "glyphs")
    assert result.stderr.startswith("cloak render: 1 record, ") and " 1 shard in " in result.stderr, result.stderr
    result = command("mmbert.cli", "predict", "--model", stages[3], "--in", one, "--out", tmp_path / "p.jsonl", "-q")
    assert result.stderr.startswith("predict: 1 record scored"), result.stderr
    result = command("mmbert.cli", "routing", "--model", stages[3], "--data", one, "--out", f"{tmp_path / 'r'}/", "-q")
    assert result.returncode == 0 and f"{tmp_path / 'r' / 'routing.json'}," in result.stderr, result.stderr
    victim = tmp_path / "victim"
    result = command("attacks.cli", "train", "--model", "tfidf-lr", "--train", sample_path, "--out", victim, "-q")
    assert result.returncode == 0, result.stderr
    result = command("attacks.cli", "predict", "--victim", victim, "--in", one, "--out", tmp_path / "ap.jsonl")
    assert "\npredict: 1 record scored by tfidf-lr into " in result.stderr, result.stderr
    result = command("attacks.cli", "evaluate", "--victim", victim, "--data", one, "--ops", "homophone", "--attacks",
                     "cloak,search", "--query-budget", "1", "--targets", "lexicon", "--out", tmp_path / "eval", "-q")
    assert result.returncode == 0, result.stderr
    assert command("attacks.cli", "report", tmp_path / "eval", "--out", tmp_path / "report").returncode == 0
    page = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert "1 record of" in page and not re.search(r"\b1 (record|querie|epoch|post)s\b", page)
    assert "1 record" in (tmp_path / "report" / "report.html").read_text(encoding="utf-8")


def test_loading_and_saving_an_mmbert_through_the_api_prints_nothing(stages, tmp_path, capfd):
    """transformers drew "Loading weights" and "Writing model shards" bars into a log through the API."""
    from accelerate import Accelerator

    from mmbert import load_model
    from mmbert.checkpoint import save_model

    capfd.readouterr()
    model, featurizer = load_model(stages[3])
    save_model(str(tmp_path / "copy"), model, featurizer.tokenizer, Accelerator(cpu=True))
    assert capfd.readouterr().err == ""


def test_every_option_says_what_it_does_and_its_default():
    """cloak's commands (render, speak and synth among them), mmbert's and attacks': help text on every option, the
    default shown where there is one, and -q wherever a progress bar or a summary line is printed."""
    import click

    from attacks.cli import main as attacks_main
    from cloak.cli import main as cloak_main
    from mmbert.cli import main as mmbert_main

    commands = []
    for prog, group in (("cloak", cloak_main), ("mmbert", mmbert_main), ("attacks", attacks_main)):
        # render, speak, synth: entry points
        with click.Context(group) as ctx:
            commands += [(f"{prog} {n}", group.get_command(ctx, n)) for n in group.list_commands(ctx)]
    assert {"cloak render", "cloak speak", "cloak synth", "mmbert routing"} <= {name for name, _ in commands}
    for name, cmd in commands:
        options = [p for p in cmd.params if isinstance(p, click.Option) and not p.hidden and p.name != "help"]
        for option in options:
            assert option.help, f"{name} {option.opts[0]} has no help text"
            default = option.default
            if default not in (None, False, ()) and "UNSET" not in repr(default) and not option.is_flag:
                assert option.show_default or "[default" in option.help, f"{name} {option.opts[0]}: default not shown"
        if name.split()[1] in ("perturb", "render", "speak", "synth", "train", "pretrain", "evaluate", "predict",
                               "routing"):
            assert "-q" in {o for option in options for o in option.opts}, f"{name} has no -q"


def test_every_command_that_keeps_an_interrupted_runs_work_takes_resume():
    """One way to go on after Ctrl-C: --resume, in every command that keeps what it did. `attacks evaluate` and
    `attacks curve` go on by themselves when rerun, and refused --resume as an unknown option."""
    import click

    from attacks.cli import main as attacks_main
    from cloak.cli import main as cloak_main
    from mmbert.cli import main as mmbert_main

    for prog, group, names in (("cloak", cloak_main, ("perturb", "unveil", "render")),
                               ("mmbert", mmbert_main, ("train", "pretrain")),
                               ("attacks", attacks_main, ("train", "pretrain-habertor", "evaluate", "curve"))):
        with click.Context(group) as ctx:
            for name in names:
                options = {o for p in group.get_command(ctx, name).params if isinstance(p, click.Option)
                           for o in p.opts}
                assert "--resume" in options, f"{prog} {name} has no --resume"
