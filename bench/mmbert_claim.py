"""MMBERT's claim settled the way a reviewer would accept (issue 56): every setting chosen on a validation
split, the arms trained on the same budget, a fresh test read once, all under one committed protocol.

Run from the repository root, step by step (each resumes where it stopped; a finished step is kept)::

    P="--protocol bench/protocols/mmbert_claim.yaml --cold DIR --weights W --backbone W/e5 --work RUNS"
    .venv/bin/python -m bench.mmbert_claim data $P        # training, dev and validation posts, their speech
    .venv/bin/python -m bench.mmbert_claim choose $P      # the candidates at one seed, judged on validation
    .venv/bin/python -m bench.mmbert_claim train $P       # every arm of every seed at the chosen setting
    .venv/bin/python -m bench.mmbert_claim router $P      # the router's variants, on validation only
    .venv/bin/python -m bench.mmbert_claim test-data $P   # the fresh test posts (needs the protocol committed)
    .venv/bin/python -m bench.mmbert_claim test $P --addendum bench/protocols/mmbert_claim_unveil.yaml
                                                          # every arm scored on them, once
    .venv/bin/python -m bench.mmbert_verdict --protocol bench/protocols/mmbert_claim.yaml \\
        bench/results/mmbert_claim_test.json --out bench/results/mmbert_claim_verdict.json

The protocol file (``bench.claim_protocol``) fixes the sizes, seeds, attacks, candidates, choice rule and
what counts as met; every output records its SHA-256, and ``test-data`` and ``test`` refuse to run while
it has changes not committed. ``test`` reads the test once: when it ends it writes its output and a mark in
the work folder's scores cache (``scores/test_read.json``: the output's SHA-256 and the cached scores it was
made from), and it refuses to run while either is there, so deleting the output does not read the test
again; stopped before it ends, it has written neither and resumes from the scores cached so far. The arms,
at each seed:

- ``mmbert``: stages 1, 2 and 3 (Xue et al. 2025, "MMBERT: Scaled Mixture-of-Experts Multimodal BERT for
  Robust Chinese Hate Speech Detection under Cloaking Perturbations", arXiv:2508.00760), stage 3 at the
  chosen setting.
- ``twin``: the same backbone on text alone, through stage 2 (its head warm-up and its text expert: the
  same epochs, batches and rates as MMBERT's stage 2 on text) and stage 3 at the same setting, whose masks
  fall on the very same positions (``mmbert.train.mask_seed``). MMBERT's stage 1 trains its aligners only,
  which the twin has not.
- ``fusion``: MMBERT's inputs (text, speech and glyph tokens, aligners) through the dense encoder, one
  feed-forward a layer, no router (``feed_forward: dense``), through the same three stages.
- ``bert_augmented``: ``attacks``' ``bert`` victim on the same training file (every post and a cloak of it,
  offensive or not alike: augmentation).
- ``best_text_only``: the twin at the candidate whose twin read the clean validation posts best, where
  that is not the chosen one (the strongest text-only detector the candidates offer).
- ``bert_unveil`` (``--addendum``, an addendum committed before the test; the protocol itself predates the
  defence): ``bert_augmented`` with ``cloak unveil`` in front, the lexicon's terms and those mined from the
  training posts as they are, tested beside the others.

A run moves to another machine with its work folder: copy ``--work`` whole (``rsync -a``) and run the same
step there with ``--work`` pointing at the copy; every stage resumes from its last checkpoint, and every
figure records the machine it was made on.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from bench.claim_protocol import (Protocol, claim_parts, committed, digits, load_addendum, load_protocol, resampled,
                                  same_protocol, undigits)
from bench.common import (RESULTS, WORK, backbone_info, machine_info, parser, read_json, relative, weight_files,
                          write_result)
from bench.mmbert_data import (MAX_CHARS, MIN_CHARS, TEST_OPS, TEST_SETS, TRAIN_OPS, cloaked, cloaked_sets,
                               fresh_test_sample, heldout_cloaks, interleaved, sample, split_terms, validation_sample,
                               written)
from bench.mmbert_evaluation import evaluate
from bench.mmbert_runs import speech_step, trained
from cloak.common.io import file_sha256, read_records, write_records

PROTOCOL = Path(__file__).resolve().parent / "protocols" / "mmbert_claim.yaml"
HELD_OUT_SETS = ("heldout_homophone", "heldout_homophone_seen")
OUTPUTS = {"validation": RESULTS / "mmbert_claim_validation.json", "training": RESULTS / "mmbert_claim_training.json",
           "router": RESULTS / "mmbert_claim_router.json", "test": RESULTS / "mmbert_claim_test.json"}


# ------------------------------------------------------------------------------------------------- data

def data_dir(args) -> Path:
    return args.work / "data"


def split_files(args, split: str) -> dict[str, Path]:
    """``split``'s record files by test set (validation: clean and each op; test: the held-out cloaks too)."""
    names = (*TEST_SETS, *HELD_OUT_SETS) if split == "test" else TEST_SETS
    return {name: data_dir(args) / f"{split}_{name}.jsonl" for name in names}


def training_posts(protocol: Protocol, args) -> list[dict]:
    d = protocol["data"]
    return sample(args.cold, "train", d["train_posts"], d["sample_seed"])


def make_data(protocol: Protocol, args) -> dict:
    """The training posts and a cloak of each, the dev posts (early stopping) alike, and the validation split
    clean and cloaked by each op; their speech. The test posts are not read here."""
    d, a = protocol["data"], protocol["attacks"]
    train = training_posts(protocol, args)
    dev = sample(args.cold, "dev", d["dev_posts"], d["sample_seed"])
    validation = validation_sample(args.cold, d["validation_posts"], train, d["sample_seed"])
    sets, _, settings = cloaked_sets(validation, d["cloak_seed"], a["targets"], a["strength"])
    files = {"train": interleaved(train, cloaked(train, TRAIN_OPS, d["cloak_seed"])),
             "dev": interleaved(dev, cloaked(dev, TRAIN_OPS, d["cloak_seed"])),
             **{f"validation_{k}": v for k, v in sets.items()}}
    paths = written(data_dir(args), files, "validation_cloaks", settings)
    records = {k: v for k, v in paths.items() if v.suffix == ".jsonl"}
    speech = speech_step(run_config(protocol, args, 0), records, args.work, args.speech_workers)
    return {"posts": {"train": len(train), "dev": len(dev), "validation": len(validation)},
            "validation_cloaks": settings, "speech": speech}


def check_fixed(protocol: Protocol) -> None:
    """The protocol's settings that the data code fixes must be the code's."""
    fixed = {"data.post_chars": (protocol["data"]["post_chars"], [MIN_CHARS, MAX_CHARS]),
             "attacks.ops": (protocol["attacks"]["ops"], list(TEST_OPS))}
    for key, (given, code) in fixed.items():
        if given != code:
            raise SystemExit(f"{relative(protocol.path)}: {key} is {given}, the benchmark's code makes {code}")
    for name, setting in protocol["candidates"].items():  # one held-out test serves every candidate
        if setting.get("term_holdout", 0.0) not in (0.0, protocol["attacks"]["held_out_terms"]):
            raise SystemExit(f"{relative(protocol.path)}: candidates.{name} holds out {setting['term_holdout']} of "
                             f"the terms, the held-out test {protocol['attacks']['held_out_terms']}")


# ----------------------------------------------------------------------------------------------- models

def run_config(protocol: Protocol, args, seed: int, modalities: tuple[str, ...] | None = None,
               feed_forward: str = "experts", stage3: dict | None = None, router: dict | None = None) -> dict:
    """The run configuration of an arm: the ``small`` preset with the protocol's training settings, a stage-3
    setting (a candidate's masks) and a router variant over it."""
    from mmbert.presets import STAGES, load_run_config

    t = protocol["training"]
    run = load_run_config("small")
    run["model"].update({"backbone_layers": t["backbone_layers"], "feed_forward": feed_forward, **(router or {})})
    if modalities:
        run["model"]["modalities"] = list(modalities)
    train = run["train"]
    train.update(seed=seed, max_length=t["max_length"], batch_size=t["batch_size"], patience=t["patience"])
    train["stage1"].update(epochs=t["epochs"]["stage1"], loss=t["stage1_loss"])
    train["stage2"]["epochs"] = t["epochs"]["stage2"]
    if t["stage2_rates"] == "paper":
        train["stage2"].update({k: v for k, v in STAGES["stage2"].items() if k.startswith("lr_")})
    train["stage3"].update({"epochs": t["epochs"]["stage3"], "lr": t["stage3_lr"], "text_mask": 0.0,
                            "term_mask": 0.0, "term_holdout": 0.0, **(stage3 or {})})
    run["features"].update(tts={"name": t["tts"]}, whisper=str(args.weights / f"whisper-{t['whisper']}.pt"),
                           speech_cache=str(args.work / "speech"))
    return run


def seed_dir(args, seed: int) -> Path:
    return args.work / f"seed{seed}"


def train_mixture(protocol: Protocol, args, seed: int, setting: str, feed_forward: str = "experts",
                  router: str | None = None) -> dict:
    """MMBERT (or, ``dense``, the fusion baseline) at ``seed``: stages 1 and 2 once for every setting, stage 3
    at the candidate ``setting`` (with the router variant ``router``); the stages' summaries."""
    name = "mmbert" if feed_forward == "experts" else "fusion"
    stage3, variant = protocol["candidates"][setting], protocol["router_variants"].get(router)
    run = run_config(protocol, args, seed, feed_forward=feed_forward, stage3=stage3, router=variant)
    files, where = {"train": data_dir(args) / "train.jsonl", "dev": data_dir(args) / "dev.jsonl"}, seed_dir(args, seed)
    out = {f"{name}_stage1": trained(1, run, files, where / f"{name}_stage1", args.backbone)}
    out[f"{name}_stage2"] = trained(2, run, files, where / f"{name}_stage2", where / f"{name}_stage1")
    folder = where / setting / (f"router_{router}" if router else "") / f"{name}_stage3"
    out[f"{name}_stage3"] = trained(3, run, files, folder, where / f"{name}_stage2")
    return out


def train_twin(protocol: Protocol, args, seed: int, setting: str) -> dict:
    """The text-only twin at ``seed``: stage 2 on text from the backbone, then stage 3 at ``setting``."""
    run = run_config(protocol, args, seed, ("text",), stage3=protocol["candidates"][setting])
    files, where = {"train": data_dir(args) / "train.jsonl", "dev": data_dir(args) / "dev.jsonl"}, seed_dir(args, seed)
    return {"twin_stage2": trained(2, run, files, where / "twin_stage2", args.backbone, allow_skip=True),
            "twin_stage3": trained(3, run, files, where / setting / "twin_stage3", where / "twin_stage2")}


def train_augmented_bert(protocol: Protocol, args, seed: int) -> dict:
    """``attacks``' ``bert`` victim on the training file (each post and its cloak), early-stopped on the dev
    posts, into ``seed_dir/bert_augmented`` (``done.json`` once finished; a stopped fit resumes)."""
    from attacks.victims.bert import BertVictim

    out, t = seed_dir(args, seed) / "bert_augmented", protocol["training"]
    done = out / "done.json"
    if not done.exists():
        records = {name: [r for _, r in read_records(str(data_dir(args) / f"{name}.jsonl"), labels=True)]
                   for name in ("train", "dev")}
        victim = BertVictim({"backbone": str(args.backbone), "backbone_layers": t["backbone_layers"],
                             "max_length": t["max_length"]},
                            {"epochs": t["augmented_bert_epochs"], "batch_size": t["batch_size"], "lr": t["stage3_lr"],
                             "patience": t["patience"], "seed": seed})
        started = time.time()
        victim.fit(records["train"], records["dev"], out_dir=str(out),
                   resume=(out / "checkpoint" / "trainer_state.json").exists(), progress=False)
        write_result(done, {"seconds": round(time.time() - started, 1), "log": victim.log_["log"],
                            "best_epoch": victim.log_["best_epoch"]})
    summary = read_json(done)
    return {"bert_augmented": {"best_epoch": summary["best_epoch"],
                               "seconds": round(sum(e["seconds"] for e in summary["log"]), 1)}}


def model_folders(args, seed: int, chosen: str, best_text_only: str | None) -> dict[str, Path]:
    """The finished model of every arm at ``seed``, by arm name."""
    where = seed_dir(args, seed)
    folders = {"mmbert": where / chosen / "mmbert_stage3", "twin": where / chosen / "twin_stage3",
               "fusion": where / chosen / "fusion_stage3", "bert_augmented": where / "bert_augmented"}
    if best_text_only and best_text_only != chosen:
        folders["best_text_only"] = where / best_text_only / "twin_stage3"
    return folders


# ---------------------------------------------------------------------------------------------- scoring

def predictions(folder: Path, split: str, args, protocol: Protocol, defence: str | None = None
                ) -> dict[str, np.ndarray]:
    """A model's predicted labels on every set of ``split``, kept in ``WORK/scores`` (each scored once);
    ``defence``: a saved victim with ``cloak unveil`` in front, set up by that spec."""
    name = str(folder.relative_to(args.work)) + ("+unveil" if defence else "")
    kept = args.work / "scores" / split / (name.replace("/", "_") + ".json")
    if kept.exists():
        return {k: undigits(v) for k, v in read_json(kept)["predictions"].items()}
    files = split_files(args, split)
    if (folder / "victim.json").exists():
        from attacks import load_victim
        from attacks.victims.defended import defend

        victim = load_victim(str(folder))
        victim = defend(victim, defence) if defence else victim
        found = {k: victim.predict_proba([r["text"] for _, r in read_records(str(path))]).argmax(1)
                 for k, path in files.items()}
    else:
        features = run_config(protocol, args, 0)["features"]
        _, found = evaluate(folder, {f"test_{k}": v for k, v in files.items()}, features, tuple(files))
    write_result(kept, {"model": name, "split": split, "protocol": protocol.record,
                        "predictions": {k: digits(v) for k, v in found.items()}})
    return found


def labels_of(args, split: str) -> np.ndarray:
    return np.array([r["label"] for _, r in read_records(str(split_files(args, split)["clean"]), labels=True)])


def rounded(f1: dict[str, dict[str, np.ndarray]]) -> dict:
    """Each model's macro-F1 on each set, on the posts as given."""
    return {m: {k: round(float(v[0]), 4) for k, v in by.items()} for m, by in f1.items()}


# ------------------------------------------------------------------------------------------------ steps

def choose(protocol: Protocol, args) -> dict:
    """Every candidate setting at the choice seed (MMBERT and its twin), judged on validation by the
    protocol's rule; the choice, and the candidate whose twin reads clean validation posts best."""
    seed, labels = protocol["choose"]["seed"], labels_of(args, "validation")
    rows, training = {}, {}
    for name, setting in protocol["candidates"].items():
        training[name] = {**train_mixture(protocol, args, seed, name), **train_twin(protocol, args, seed, name)}
        where = seed_dir(args, seed) / name
        found = {arm: [predictions(where / f"{arm}_stage3", "validation", args, protocol)]
                 for arm in ("mmbert", "twin")}
        f1 = resampled(labels, found, protocol["bootstrap"]["resamples"])
        rows[name] = {"setting": setting, "claim": claim_parts(f1, protocol), "macro_f1": rounded(f1)}

    def rank(name: str) -> tuple:
        claim = rows[name]["claim"]
        return -claim["parts_met"], claim["ratio"] if claim["ratio"] is not None else float("inf")

    chosen = min(rows, key=rank)
    best = max(rows, key=lambda name: rows[name]["macro_f1"]["twin"]["clean"])
    result = {"benchmark": "bench/mmbert_claim.py choose", "protocol": protocol.record, "seed": seed,
              "validation_posts": len(labels), "rule": protocol["choose"]["rule"], "candidates": rows,
              "chosen": chosen, "best_text_only": best, "training": training,
              "machine": machine_info(("torch", "transformers"))}
    write_result(OUTPUTS["validation"], result)
    return result


def the_choice(protocol: Protocol) -> dict:
    if not OUTPUTS["validation"].exists():
        raise SystemExit(f"{relative(OUTPUTS['validation'])} is missing: "
                         "run `python -m bench.mmbert_claim choose` first")
    choice = read_json(OUTPUTS["validation"])
    same_protocol(choice["protocol"], protocol, relative(OUTPUTS["validation"]))
    return choice


def train(protocol: Protocol, args) -> dict:
    """Every arm at every seed at the chosen setting, each scored on validation too (the spread over seeds);
    the summaries and the machine, seed by seed, as each finishes."""
    choice = the_choice(protocol)
    chosen, best = choice["chosen"], choice["best_text_only"]
    labels = labels_of(args, "validation")
    report = read_json(OUTPUTS["training"], {"seeds": {}})
    for seed in protocol["seeds"]:
        if str(seed) in report["seeds"]:
            continue
        summary = {**train_mixture(protocol, args, seed, chosen), **train_twin(protocol, args, seed, chosen),
                   **train_mixture(protocol, args, seed, chosen, "dense"), **train_augmented_bert(protocol, args, seed)}
        if best != chosen:
            summary["best_text_only"] = train_twin(protocol, args, seed, best)["twin_stage3"]
        found = {arm: [predictions(folder, "validation", args, protocol)]
                 for arm, folder in model_folders(args, seed, chosen, best).items()}
        report["seeds"][str(seed)] = {"training": summary, "validation_macro_f1": rounded(resampled(labels, found, 0)),
                                      "machine": machine_info(("torch", "transformers"))}
        write_result(OUTPUTS["training"], {"benchmark": "bench/mmbert_claim.py train", "protocol": protocol.record,
                                           "chosen": chosen, "best_text_only": best, "seeds": report["seeds"]})
    return report


def routing_summary(folder: Path, files: dict[str, Path], out_dir: Path, features: dict) -> dict:
    """The mean weight (over layers) each expert gets on the clean posts' text and speech tokens and on the
    text tokens a homophone edited (``mmbert.routing``; its table and plot into ``out_dir``)."""
    from mmbert.loading import load_model
    from mmbert.routing import routing_analysis

    model, featurizer = load_model(str(folder), features)
    records = [r for name in ("clean", "homophone") for _, r in read_records(str(files[name]))]
    table = routing_analysis(model, featurizer, records, str(out_dir))

    def mean(group: str, kind: str) -> dict | None:
        weights = table["tokens"].get(group, {}).get(kind, {}).get("weights")
        return None if weights is None else dict(zip(table["experts"], np.mean(weights, 0).round(4).tolist()))

    return {"clean_text": mean("clean", "text"), "clean_speech": mean("clean", "speech"),
            "homophone_edited_text": mean("homophone", "text_edited")}


def router(protocol: Protocol, args) -> dict:
    """The router's variants (``router_variants``) at the choice seed and the chosen setting, beside MMBERT as
    chosen, the fusion baseline and the twin, on validation only."""
    choice, seed = the_choice(protocol), protocol["choose"]["seed"]
    chosen, labels = choice["chosen"], labels_of(args, "validation")
    where = seed_dir(args, seed) / chosen
    train_mixture(protocol, args, seed, chosen, "dense")
    folders = {"mmbert": where / "mmbert_stage3", "twin": where / "twin_stage3", "fusion": where / "fusion_stage3"}
    for name in protocol["router_variants"]:
        train_mixture(protocol, args, seed, chosen, router=name)
        folders[f"router_{name}"] = where / f"router_{name}" / "mmbert_stage3"
    found = {arm: [predictions(folder, "validation", args, protocol)] for arm, folder in folders.items()}
    f1 = resampled(labels, found, protocol["bootstrap"]["resamples"])
    features = run_config(protocol, args, seed)["features"]
    rows = {arm: {"macro_f1": rounded({arm: f1[arm]})[arm], "claim_against_twin": claim_parts(f1, protocol, arm),
                  **({"against_fusion": claim_parts(f1, protocol, arm, "fusion")} if arm != "fusion" else {}),
                  **({"routing": routing_summary(folder, split_files(args, "validation"),
                                                 OUTPUTS["router"].with_suffix("") / arm, features)}
                     if arm.startswith(("mmbert", "router_")) else {})}
            for arm, folder in folders.items() if arm != "twin"}
    result = {"benchmark": "bench/mmbert_claim.py router", "protocol": protocol.record, "seed": seed, "chosen": chosen,
              "variants": protocol["router_variants"], "validation_posts": len(labels), "models": rows,
              "machine": machine_info(("torch", "transformers"))}
    write_result(OUTPUTS["router"], result)
    return result


def term_overlap(sets: dict[str, list[dict]], terms, masked) -> dict:
    """How many of the terms the test cloaks rewrote (those of ``terms`` an edit touches) training masked
    whole (``masked``: the terms stage 3 masked, None where it masked none), distinct and by occurrence."""
    attacked: dict[str, int] = {}
    for op in TEST_OPS:
        for record in sets[op]:
            edits = [(e["start"], e["end"]) for e in record["cloak"]["edits"]]
            for start, end in terms.find(record["source_text"]):
                if any(s < end and start < e for s, e in edits):
                    term = record["source_text"][start:end]
                    attacked[term] = attacked.get(term, 0) + 1
    masked_set = set(masked.terms) if masked is not None else set()
    hit = [t for t in attacked if t in masked_set]
    return {"attacked_terms": len(attacked), "masked_in_training": len(hit),
            "share": round(len(hit) / len(attacked), 4) if attacked else None,
            "occurrences": sum(attacked.values()), "occurrences_masked": sum(attacked[t] for t in hit)}


def make_test(protocol: Protocol, args) -> dict:
    """The fresh test posts (never read before: the protocol must be committed), clean, cloaked by each op and
    by homophone on the held-out and the masked terms apart (the protocol's share held out); their speech."""
    from mmbert.train import read_labelled, term_mask_targets

    commit, (d, a) = committed(protocol), (protocol["data"], protocol["attacks"])
    validation = [r for _, r in read_records(str(split_files(args, "validation")["clean"]))]
    posts, about = fresh_test_sample(args.cold, d["earlier_test_posts"], training_posts(protocol, args) + validation,
                                     d["sample_seed"])
    sets, _, settings = cloaked_sets(posts, d["cloak_seed"], a["targets"], a["strength"])
    paths = written(data_dir(args), {f"test_{k}": v for k, v in sets.items()}, "test_cloaks", settings)
    targets = term_mask_targets(read_labelled(str(data_dir(args) / "train.jsonl")))
    held, seen = split_terms(targets, a["held_out_terms"], None)
    written_heldout = heldout_cloaks(paths["test_clean"], data_dir(args), held, seen, d["cloak_seed"])
    for name in HELD_OUT_SETS:
        os.replace(written_heldout[name], split_files(args, "test")[name])
    about = {"protocol": protocol.record, "protocol_commit": commit, "sample": about, "cloaks": settings,
             "held_out": read_json(written_heldout["heldout_cloaks"])}
    about["speech"] = speech_step(run_config(protocol, args, 0), split_files(args, "test"), args.work,
                                  args.speech_workers)
    write_result(data_dir(args) / "test_sample.json", about)
    return about


def masked_in_training(protocol: Protocol, args, setting: str) -> dict:
    """``term_overlap`` of the test cloaks against the terms stage 3 masked whole at ``setting``."""
    from cloak.mining import build_targets
    from mmbert.train import masked_terms, read_labelled, term_mask_targets

    stage3 = protocol["candidates"][setting]
    sets = {name: [r for _, r in read_records(str(path))] for name, path in split_files(args, "test").items()}
    terms = build_targets(protocol["attacks"]["targets"], labelled=sets["clean"])  # as the test cloaks took them
    masked = None
    if stage3.get("term_mask"):
        targets = term_mask_targets(read_labelled(str(data_dir(args) / "train.jsonl")))
        masked = masked_terms(targets, stage3.get("term_holdout", 0.0))
    return term_overlap(sets, terms, masked)


def unveil_spec(addendum: Protocol, args) -> str:
    """The addendum's ``cloak unveil`` spec, its terms mined from the training posts as they are (no cloaks:
    a cloak mined as a term would be read back as itself), written beside the training file."""
    clean = data_dir(args) / "train_posts.jsonl"
    if not clean.exists():
        write_records(str(clean), (r for _, r in read_records(str(data_dir(args) / "train.jsonl"), labels=True)
                                   if "cloak" not in r))
    return f"{addendum['defence']}:mine_from={clean}"


def read_mark(args) -> Path:
    """Where the test step records that it read the test: in the work folder's scores cache, beside (not in)
    the test's cached scores, so that neither deleting the output nor clearing those scores unreads it."""
    return args.work / "scores" / "test_read.json"


def score_hashes(args) -> dict[str, str]:
    """The SHA-256 of every score of the test cached in the work folder, by file name."""
    return {path.name: file_sha256(path) for path in sorted((args.work / "scores" / "test").glob("*.json"))}


def mark_read(args, result: dict) -> None:
    """After the output is written: the mark that the test was read, with the output's SHA-256 and the cached
    scores it was made from (a stop between the two leaves the output, which refuses a second reading too)."""
    write_result(read_mark(args), {"output": relative(OUTPUTS["test"]), "sha256": file_sha256(OUTPUTS["test"]),
                                   "date": result["machine"]["date"], "scores": score_hashes(args)})


def not_read_yet(args) -> None:
    """Stop if the test was read: its output is there, or the work folder's mark says it was written (then
    what became of the output and the cached scores since). A test step stopped before it ended wrote
    neither, and resumes from the scores it cached."""
    out, mark = OUTPUTS["test"], read_mark(args)
    if mark.exists():
        made = read_json(mark)
        if not out.exists():
            output = f"is missing (restore it: `git checkout -- {made['output']}`)"
        elif file_sha256(out) == made["sha256"]:
            output = "is there, unchanged"
        else:
            output = f"has changed since (SHA-256 {file_sha256(out)[:12]})"
        now = score_hashes(args)
        changed = sum(now.get(name) != digest for name, digest in made["scores"].items())
        raise SystemExit(f"the test was read on {made['date'][:10]}, and is read once under a protocol: "
                         f"{relative(mark)} records its output {made['output']} (SHA-256 {made['sha256'][:12]}), "
                         f"which {output}, and the {len(made['scores'])} scores cached for it "
                         f"({changed} changed or missing since)")
    if out.exists():
        raise SystemExit(f"{relative(out)} exists: the test is read once under a protocol (this work folder "
                         f"has no {relative(mark)}: the test was read from another, or before reads were marked)")


def test(protocol: Protocol, args) -> dict:
    """Every arm of every seed scored on the fresh test, once (and the addendum's arms, where one is given);
    their predictions, for the verdict. Its output and the work folder's mark (``read_mark``) are written
    when it ends; either refuses a second reading."""
    commit, choice = committed(protocol), the_choice(protocol)
    addendum = load_addendum(args.addendum, protocol) if args.addendum else None
    added = {"addendum": {**addendum.record, "commit": committed(addendum), "arms": addendum["arms"],
                          "defence": addendum["defence"]}} if addendum else {}
    not_read_yet(args)
    about = read_json(data_dir(args) / "test_sample.json")
    same_protocol(about["protocol"], protocol, "the test sample")
    chosen, best = choice["chosen"], choice["best_text_only"]
    found: dict[str, list[dict]] = {}
    routing = {}
    defence = unveil_spec(addendum, args) if addendum else None
    for seed in protocol["seeds"]:
        folders = model_folders(args, seed, chosen, best)
        for arm, folder in folders.items():
            if not ((folder / "training.json").exists() or (folder / "done.json").exists()):
                raise SystemExit(f"{folder} is not trained: run `python -m bench.mmbert_claim train` first")
            found.setdefault(arm, []).append(predictions(folder, "test", args, protocol))
        if defence:
            found.setdefault("bert_unveil", []).append(predictions(folders["bert_augmented"], "test", args, protocol,
                                                                   defence))
        routing[str(seed)] = routing_summary(folders["mmbert"],
                                             split_files(args, "test"), RESULTS / f"mmbert_claim_routing_seed{seed}",
                                             run_config(protocol, args, seed)["features"])
    labels = labels_of(args, "test")
    backbone = backbone_info(args.backbone, protocol["training"]["backbone_layers"])
    result = {"benchmark": "bench/mmbert_claim.py test", "protocol": protocol.record, "protocol_commit": commit,
              **added, "chosen": chosen, "setting": protocol["candidates"][chosen], "best_text_only": best,
              "seeds": protocol["seeds"],
              "test": {**{k: v for k, v in about.items() if k not in ("protocol", "speech")},
                       "term_overlap": masked_in_training(protocol, args, chosen)},
              "backbone": {k: v for k, v in backbone.items() if k != "path"},  # no path of this machine
              "routing": routing, "labels": digits(labels),
              "predictions": {arm: [{k: digits(v) for k, v in run.items()} for run in seeds]
                              for arm, seeds in found.items()},
              "machine": machine_info(("torch", "transformers"))}
    write_result(OUTPUTS["test"], result)
    mark_read(args, result)
    return result


def data(protocol: Protocol, args) -> dict:
    result = make_data(protocol, args)
    write_result(data_dir(args) / "data.json", {"protocol": protocol.record, **result})
    return result


STEPS = {"data": data, "choose": choose, "train": train, "router": router, "test-data": make_test, "test": test}


def same_work(protocol: Protocol, work: Path) -> None:
    """A work folder serves one protocol: its first step records the protocol's SHA-256, later ones check it."""
    mark = work / "protocol.json"
    if mark.exists():
        same_protocol(read_json(mark), protocol, str(work))
    else:
        work.mkdir(parents=True, exist_ok=True)
        write_result(mark, protocol.record)


def main() -> None:
    ap = parser(__doc__, cold=True, work=WORK / "mmbert_claim", weights=True)
    ap.add_argument("step", choices=list(STEPS), help="the protocol's step to run (each resumes; see above)")
    ap.add_argument("--protocol", type=Path, default=PROTOCOL, help="the committed protocol file")
    ap.add_argument("--addendum", type=Path, default=None, metavar="FILE",
                    help="test: a committed addendum to the protocol, whose arms are tested beside its own")
    ap.add_argument("--backbone", type=Path, required=True, help="the encoder folder (multilingual-e5-small)")
    ap.add_argument("--speech-workers", type=int, default=len(os.sched_getaffinity(0)), metavar="N",
                    help="processes that speak and encode the texts [one a core]")
    args = ap.parse_args()
    protocol = load_protocol(args.protocol)
    check_fixed(protocol)
    weight_files(ap, args.weights, f"whisper-{protocol['training']['whisper']}.pt")
    if not (args.backbone / "config.json").exists():
        ap.error(f"--backbone {args.backbone}: no config.json (an encoder folder: multilingual-e5-small)")
    args.work = args.work.resolve()
    same_work(protocol, args.work)
    started = time.time()
    STEPS[args.step](protocol, args)
    print(f"{args.step}: done in {time.time() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
