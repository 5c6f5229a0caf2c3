"""Results: MMBERT's speed, and MMBERT against its text-only twin under cloaking (every run of the study)."""
from __future__ import annotations

from . import Pending, Table, f3, f4, interval, num, pct, share, with_interval

PAGE = "mmbert.md"
TITLE = "MMBERT"
INTRO = """
MMBERT's cost against a text-only model, and MMBERT against its text-only twin (the same backbone and
stage-3 settings, one expert, no speech or glyphs) under cloaking, run by run.

Xue et al. (2025) claim that MMBERT loses at most half of what a text-only model loses under homophone
cloaking, at no clean cost. A verdict states that claim part by part over the seeds of a run: MMBERT's
homophone drop at most half the twin's; the 95% interval of the twin's drop minus MMBERT's (a paired
bootstrap over the test posts, the mean over the seeds in each resample) above zero; MMBERT's clean macro-F1
no more than 0.01 below the twin's, on the means (the interval of the difference, given beside it, may allow a
larger loss). The order in which the runs were made, and why each was tried:
[the MMBERT study](../studies/mmbert.md).

The claim is settled by the first tables: a protocol committed before its one test, the setting chosen on a
validation split, every arm on the same budget, the test read once. The tables after them are the earlier
runs, kept as the record: each chose its setting on the test posts it was judged on.
"""

OPS = ("homophone", "emoji", "pinyin", "split")
COLUMNS = ("clean", *OPS)
PAIR = (("text_only", "text-only twin"), ("mmbert", "MMBERT"))
# the runs on multilingual-e5-small, in the order they were made: (JSON prefix, title, what differs)
E5_RUNS = (("mmbert_e5", "MMBERT vs its twin on e5",
            "the error term in stage 1, stage 2 at Xue et al.'s rates, no masks"),
           ("mmbert_e5_mask", "With a share of the text masked in stage 3", "`--stage3-text-mask 0.15`"),
           ("mmbert_e5_term", "Whole terms masked, beside the 0.15 share",
            "`--stage3-text-mask 0.15 --stage3-term-mask 0.5`"),
           ("mmbert_e5_holdout", "Whole terms masked, half the terms held out",
            "`--stage3-text-mask 0.15 --stage3-term-mask 0.5 --stage3-term-holdout 0.5`"),
           ("mmbert_e5_term80", "Whole terms masked with probability 0.8",
            "`--stage3-text-mask 0.15 --stage3-term-mask 0.8`"))


def f1_and_drop(result: dict, op: str) -> str:
    """Macro-F1 under an op's cloak, and its drop from clean."""
    return f"{f3(result[op]['all']['f1'])} ({f3(result[op]['drop_f1'])})" if op in result else ""


def model_rows(results: dict, models=PAIR, *label) -> list[list]:
    """A row a model: its name, ``label`` (a seed, a run), clean macro-F1 and each op's macro-F1 (drop)."""
    return [[name, *label, f3(results[m]["clean"]["all"]["f1"])] + [f1_and_drop(results[m], op) for op in OPS]
            for m, name in models if m in results]


def speed(r) -> list[Table]:
    d = r("mmbert_speed.json")
    names = {"text": "text-only (the same backbone, one expert)",
             "one_ffn": "three-modality input, one feed-forward (no mixture: the floor)",
             "dense": "MMBERT, dense 3-expert mixture (Xue et al.'s)", "top1": "MMBERT, `moe_top_k: 1`"}
    train, infer = d["training"], d["inference"]
    base = train["text"]["s_per_step_median"]
    rows = [[label, num(train[k]["examples_per_s"]["median"], 1), num(infer[k]["posts_per_s"]["median"]),
             f"{train[k]['s_per_step_median'] / base:.1f}x"] for k, label in names.items() if k in train]
    return [Table("MMBERT speed", ["mmbert_speed.json"],
                  ["", "training examples/s (median)", "inference posts/s (median)",
                   "time a training step vs text-only"], rows,
                  "The `small` shape, batches of COLD test posts of 8-32 characters, cached speech features, vision "
                  "as stages 2-3 train it (the frozen glyph table), one torch thread, interleaved rounds. The target, "
                  "a dense step at most 2.5x text-only's, cannot be met with this input layout: the sequence is about "
                  "three times as many tokens as the text alone, and through one feed-forward it already costs the "
                  "floor's row.")]


def small_backbone(r) -> list[Table]:
    d = r("mmbert_cold.json")
    ops = [op for op in OPS if op in d["results"]["mmbert"]]
    rows = [[name, f3(d["results"][m]["clean"]["all"]["f1"])] + [f1_and_drop(d["results"][m], op) for op in ops]
            for m, name in PAIR]
    rows.append(["twin's drop minus MMBERT's, 95%", ""]
                + [interval(d["bootstrap_95"][op]["text_only_minus_mmbert"]) for op in ops])
    names = ["mmbert_cold_espeak.json", "mmbert_cold_espeak_seed1.json", "mmbert_cold_espeak_seed1_rerun.json"]
    espeak = []
    for name in names:
        e = r(name)
        tag = f"{e.get('seed', 0)}" + (" (trained again)" if "rerun" in name else "")
        espeak += [[label, tag, f3(e["results"][m]["clean"]["all"]["f1"])]
                   + [f1_and_drop(e["results"][m], op) for op in ops] for m, label in PAIR]
    p = d["posts"]
    return [Table("MMBERT vs text-only on the small backbone, Kokoro speech", ["mmbert_cold.json"],
                  ["macro-F1 (drop)", "clean"] + ops, rows,
                  f"COLD posts of 8-32 characters: {p['train_posts']:,} training posts and a cloak of each, "
                  f"{p['test_posts']} test posts, lexicon targets at each op's own strength. Speech: Kokoro-82M + "
                  f"Whisper base. Backbone: the `small` BERT pre-trained here on {p['pretrain_posts']:,} COLD training "
                  f"posts for {p['pretrain_epochs']} epoch (a weak backbone).\n\n"
                  "![routing](img/mmbert_routing_routing.png)"),
            Table("The same with eSpeak NG speech, two seeds", names, ["model", "seed", "clean"] + ops, espeak,
                  "The seed-1 pair trained a second time in a later session: the text-only model repeated to the "
                  "last digit and MMBERT did not, which led to the glyph CNN's gradients being made to repeat "
                  "exactly.")]


def robustness(r) -> list[Table]:
    tables = []
    for name, title in (("mmbert_robustness.json", "MMBERT in the robustness table"),
                        ("mmbert_robustness_seed1.json", "MMBERT in the robustness table, the seed-1 pair")):
        victims = r(name)["victims"]
        ops = sorted(k for k in next(iter(victims.values()))["attacks"] if k.startswith("cloak:"))
        rows = [["clean"] + [f3(v["clean_macro_f1"]) for v in victims.values()]]
        rows += [[f"`{op.removeprefix('cloak:')}`"] + [f3(v["attacks"][op]["macro_f1"]) for v in victims.values()]
                 for op in ops]
        rows.append(["search: success rate"] + [pct(v["attacks"]["search"]["success_rate"], 0)
                                                if "search" in v["attacks"] else "" for v in victims.values()])
        tables.append(Table(title, [name], ["op"] + [f"`{v}`" for v in victims], rows,
                            "The eSpeak NG MMBERT and its text-only twin (both fine-tuned on 2,000 COLD posts and a "
                            "cloak of each by seven ops), attacked like every other victim on the 300 COLD test posts "
                            "they were measured on, with the conventional victims (no cloaks in training) for scale: "
                            "every cloak op in keyword mode, 2 variants, the worst counts. Cloak training is what "
                            "holds: on the ops the two torch models were trained with they lose far less than the "
                            "conventional victims. Which of MMBERT and its twin loses less depends on the training "
                            "run; the `noise` loss is not in MMBERT's speech (`speakable` drops the inserted symbols) "
                            "but in the text and glyph inputs, which see them."))
    return tables


def stage1_diagnosis(r) -> list[Table]:
    tables = []
    for name, title in (("mmbert_e5_diagnosis_small_rates.json", "Why MMBERT on e5 first learnt nothing"),
                        ("mmbert_e5_nce_diagnosis.json", "The contrastive stage 1")):
        d = r(name)
        stage1, probe = d["models"]["stage1"], d["speech_probe"]
        rows = [["a linear probe of the speech alone: macro-F1"] + [f3(probe[f"test_{c}"]) for c in COLUMNS]]
        rows += [[f"stage 1: a post's {modality} tokens nearest its own clean text (retrieval@1 of 1,000)"]
                 + [f3(stage1[c][modality]["retrieval_at_1"]) for c in COLUMNS]
                 for modality in ("speech", "vision", "text")]
        epochs = "; ".join(f"epoch {e['epoch']}: text {f3(e['dev_f1_text'])}, speech {f3(e['dev_f1_speech'])}, "
                           f"glyphs {f3(e['dev_f1_vision'])}" for log in (d.get("stage2") or {}).values() for e in log)
        note = f"`bench.mmbert_diagnose` on the 1,000 test posts of the run `{d['runs'][0]}`."
        if epochs:
            note += f" Stage 2's dev macro-F1 of each path alone after each epoch: {epochs}."
        tables.append(Table(title, [name], [""] + list(COLUMNS), rows, note))
    return tables


def stage3_diagnosis(r) -> list[Table]:
    tables = []
    for name, title in (("mmbert_e5_diagnosis_seed1.json", "Why MMBERT does not beat its twin by the claimed margin"),
                        ("mmbert_e5_mask_diagnosis_seed1.json", "The same diagnosis with the text masked in stage 3")):
        d = r(name)
        m = d["models"]["stage3"]
        knockout, weights = m["knockout"], d["routing"]["mean_weight"]
        rows = [[label] + [f3(knockout[c][key]) for c in COLUMNS]
                for label, key in (("MMBERT, every modality", "all"), ("without its speech tokens", "without_speech"),
                                   ("without its glyph tokens", "without_vision"),
                                   ("without its text", "without_text"))]
        rows += [[f"its {label} path alone"] + [f3(m[c][modality]["f1_alone"]) for c in COLUMNS]
                 for label, modality in (("speech", "speech"), ("glyph", "vision"))]
        rows += [["a post's speech tokens nearest its clean text (retrieval@1)"]
                 + [f3(m[c]["speech"]["retrieval_at_1"]) for c in COLUMNS],
                 ["a linear probe of the speech alone"] + [f3(d["speech_probe"][f"test_{c}"]) for c in COLUMNS],
                 ["mean routing weight to the speech expert, all tokens"] + [f3(weights[c]["speech"]) for c in COLUMNS]]
        tables.append(Table(title, [name], ["seed 1, stage 3: macro-F1 unless said"] + list(COLUMNS), rows,
                            f"`bench.mmbert_diagnose` on the stage-3 model of `{d['runs'][0]}`, the same 1,000 test "
                            "posts."))
    return tables


def verdict_rows(v: dict) -> list[list]:
    """The mean over the seeds of each model, and the intervals of the twin's drop minus MMBERT's."""
    fig, iv = v["figures"], v["intervals_95"]["mmbert"]
    rows = [[name, "mean", f3(fig[model]["clean_f1"]["mean"])]
            + [f"({f3(fig[model][f'drop_f1_{op}']['mean'])})" if f"drop_f1_{op}" in fig[model] else "" for op in OPS]
            for model, name in (("text_only", "**twin**"), ("mmbert", "**MMBERT**"))]
    rows.append(["twin's drop minus MMBERT's, 95%", "", f"MMBERT minus twin {interval(iv.get('clean_minus_twin'))}"]
                + [interval(iv.get(f"twin_drop_minus_drop_{op}")) for op in OPS])
    return rows


def claim(v: dict) -> str:
    """The verdict part by part, in a sentence."""
    c = v["claim"]

    def met(key: str) -> str:
        return "**met**" if c[key] else "**not met**"

    return (f"The verdict over seeds {', '.join(map(str, v['seeds']))}: MMBERT's homophone drop "
            f"{f4(c['mmbert_homophone_drop'])} against the twin's {f4(c['twin_homophone_drop'])}, "
            f"{pct(c['mmbert_homophone_drop'] / c['twin_homophone_drop'], 1)} of it (at most half: "
            f"{met('at_most_half_the_twins_drop')}); the twin's drop minus MMBERT's "
            f"{interval(c['twin_drop_minus_mmbert_drop_95'])} (above zero: {met('interval_excludes_zero')}); clean "
            f"{f3(c['mmbert_clean_f1'])} against {f3(c['twin_clean_f1'])} (within 0.01: {met('clean_within_0.01')}). "
            f"The claim {'holds' if c['holds'] else 'does not hold'}.")


def e5_runs(r) -> list[Table]:
    tables = []
    for prefix, title, what in E5_RUNS:
        verdict = r(f"{prefix}_verdict.json")
        sources = [f"{prefix}_seed{seed}.json" for seed in verdict["seeds"]]
        rows = [row for seed, name in zip(verdict["seeds"], sources)
                for row in model_rows(r(name)["results"], PAIR, seed)]
        first = r(sources[0])
        tables.append(Table(title, sources + [f"{prefix}_verdict.json"], ["model", "seed"] + list(COLUMNS),
                            rows + verdict_rows(verdict),
                            f"{what}. multilingual-e5-small, first {first['backbone']['layers_used']} layers, eSpeak "
                            f"NG speech, {first['posts']['train_posts']:,} training posts and a cloak of each, "
                            f"{first['posts']['test_posts']:,} test posts; macro-F1 (drop). " + claim(verdict)))
    return tables


def versus_twin(bootstrap: dict, model: str, op: str) -> str:
    """The interval of the twin's drop minus ``model``'s under ``op`` (nothing for the twin itself)."""
    return "" if model == "text_only" else " " + interval(bootstrap[op][f"text_only_minus_{model}"])


def ablation_and_single_runs(r) -> list[Table]:
    d = r("mmbert_e5_seed2.json")
    boot = d["bootstrap_95"]
    rows = []
    for model, name in (("text_only", "text-only twin"), ("text_speech", "text + speech"),
                        ("text_vision", "text + vision"), ("mmbert", "MMBERT (all three)")):
        res = d["results"][model]
        rows.append([name, f3(res["clean"]["all"]["f1"])]
                    + [f1_and_drop(res, op) + versus_twin(boot, model, op) for op in OPS])
    single = []
    for name, label in (("mmbert_e5_mask30_seed1.json", "text mask share 0.3, seed 1"),
                        ("mmbert_e5_nce_seed0.json", "contrastive stage 1, seed 0")):
        e = r(name)
        single += model_rows(e["results"], PAIR, label)
        single.append(["twin's drop minus MMBERT's, 95%", label, ""]
                      + [interval(e["bootstrap_95"][op]["text_only_minus_mmbert"]) for op in OPS])
    return [Table("The modality ablation, seed 2", ["mmbert_e5_seed2.json"], ["seed 2"] + list(COLUMNS), rows,
                  "Xue et al.'s Table 2: each model through the same three stages, no masks; macro-F1 (drop) and the "
                  "interval of the twin's drop minus the model's."),
            Table("Single-seed runs", ["mmbert_e5_mask30_seed1.json", "mmbert_e5_nce_seed0.json"],
                  ["model", "run"] + list(COLUMNS), single,
                  "Twice the text-mask share at the seed where 0.15 did worst; and the contrastive stage 1 (its twin "
                  "is seed 0's of the first run, reused).")]


def held_out(r) -> list[Table]:
    rows, sources = [], []
    for run, label in (("mask", "0.15 share alone (no term masked)"),
                       ("term", "whole terms, every term masked (control)"), ("holdout", "whole terms, half held out")):
        sources.append(f"mmbert_e5_{run}_heldout_verdict.json")
        v = r(sources[-1])
        fig, iv = v["figures"], v["intervals_95"]["mmbert"]

        def drops(op: str) -> str:
            twin, mm = fig["text_only"][f"drop_f1_{op}"]["mean"], fig["mmbert"][f"drop_f1_{op}"]["mean"]
            return f"{f3(twin)} / {f3(mm)} ({pct(mm / twin, 0)}) {interval(iv.get(f'twin_drop_minus_drop_{op}'))}"

        rows.append([label, f"{f3(fig['text_only']['clean_f1']['mean'])} / {f3(fig['mmbert']['clean_f1']['mean'])}",
                     drops("homophone"), drops("homophone_seen")])
    cloaks = r(sources[-1])["test_cloaks"]
    return [Table("Terms the masks never touched", sources,
                  ["mean of the seeds", "clean, twin / MMBERT", "cloaks of the held-out terms: drop twin / MMBERT",
                   "cloaks of the masked terms"], rows,
                  f"The terms split in two by a hash of the term (the same split at every seed); the test posts "
                  f"cloaked by homophone on the {cloaks['held_out']['terms']} held-out terms alone "
                  f"({cloaks['posts_cloaked']['heldout_homophone']} posts changed) and on the "
                  f"{cloaks['seen']['terms']} masked ones alone ({cloaks['posts_cloaked']['heldout_homophone_seen']}). "
                  "MMBERT's share of the twin's drop, and the interval of the twin's drop minus MMBERT's.")]


def protocol_choice(r) -> list[Table]:
    """The committed protocol's choice among its candidate settings, on the validation split (never the test)."""
    v = r("mmbert_claim_validation.json")
    rows = [[name + (" (chosen)" if name == v["chosen"] else ""),
             ", ".join(f"{k} {x}" for k, x in c["setting"].items()),
             f"{f3(c['macro_f1']['twin']['clean'])} / {f3(c['macro_f1']['mmbert']['clean'])}",
             f"{f3(c['macro_f1']['twin']['homophone'])} / {f3(c['macro_f1']['mmbert']['homophone'])}",
             f"{f3(c['claim']['baseline_drop'])} / {f3(c['claim']['drop'])}",
             share(c["claim"]["ratio"], c["claim"]["ratio_interval"]),
             interval(c["claim"]["baseline_drop_minus_drop"]), f"{c['claim']['parts_met']} of 3"]
            for name, c in v["candidates"].items()]
    return [Table("The protocol's choice, on validation", ["mmbert_claim_validation.json"],
                  ["candidate", "stage-3 setting", "clean, twin / MMBERT", "homophone, twin / MMBERT",
                   "homophone drop, twin / MMBERT", "MMBERT's share [95%]", "twin's drop minus MMBERT's",
                   "parts of the claim met"], rows,
                  f"Seed {v['seed']}, {v['validation_posts']:,} validation posts carved from COLD train (never the "
                  f"test); the twin trained with the same budget and the very same mask positions. The rule: "
                  f"{v['rule']} Chosen: {v['chosen']}; best text-only on clean posts: {v['best_text_only']}.")]


CLAIM_RUN = ("python -m bench.mmbert_claim {step} --protocol bench/protocols/mmbert_claim.yaml --cold $MMCLOAK_COLD "
             "--weights $MMCLOAK_WEIGHTS --backbone $MMCLOAK_WEIGHTS/e5")
CLAIM_ADDENDUM = "bench/protocols/mmbert_claim_unveil.yaml"
CLAIM_VERDICT = ("python -m bench.mmbert_verdict --protocol bench/protocols/mmbert_claim.yaml "
                 "bench/results/mmbert_claim_test.json --out bench/results/mmbert_claim_verdict.json")
# the arms of the protocol's test, as the tables name them
ARMS = {"mmbert": "MMBERT", "twin": "text-only twin", "fusion": "fusion, no experts",
        "best_text_only": "best text-only on validation", "bert_augmented": "bert + augmentation",
        "bert_unveil": "bert + augmentation + unveil", "router_aux10": "MMBERT, tenfold load-balancing weight",
        "router_modality": "MMBERT, each token to its modality's expert"}
CLAIM_SETS = {"homophone": "homophone", "emoji": "emoji", "pinyin": "pinyin", "split": "split",
              "heldout_homophone": "held-out terms", "heldout_homophone_seen": "masked terms"}


# beside the unveil arm's row: what its figures are worth, and what of these posts was read before its addendum
UNVEIL_CAVEAT = ("Read its row with this: `cloak unveil` reads cloaks back with the very tables that make them, and "
                 "these cloaks are the project's own ops at their defaults, so the row flatters it as far as those ops "
                 "are like posters' own cloaks; on cloak styles its settings were not chosen on, a detector behind it "
                 "keeps more of its drop ([held-out cloaks](attacks.md#cloak-unveil-in-front-of-a-detector-held-out-"
                 "cloaks-neural-detectors)). What of these posts unveil had read before the addendum, and how its "
                 "readers were revised meanwhile: [the study](../studies/mmbert.md#2026-11-29-the-protocols-one-test).")


def clean_part(v: dict) -> str:
    """The claim's clean part as the protocol judges it (the means, against its margin) and what the interval of
    MMBERT's clean macro-F1 minus the twin's allows beside it."""
    margin, difference = v["met"]["clean_margin"], v["comparisons"]["mmbert_vs_twin"]["clean_minus_baseline"]
    loss = -difference["interval"][0]
    allows = "no loss" if loss <= 0 else (
        f"a loss of up to {loss:.3f}, {'beyond' if loss > margin else 'within'} the margin")
    return (f"Clean: MMBERT minus the twin {with_interval(difference, '+')}, "
            f"{'within' if v['claim']['clean_within_margin'] else 'beyond'} the {margin} margin as the protocol "
            f"judges it (on the means); its interval allows {allows}.")


def parts(c: dict) -> str:
    """A claim's parts (``bench.claim_protocol.claim_parts``) in a few words."""
    return (f"{c['parts_met']} of 3 (drop {f3(c['drop'])} against {f3(c['baseline_drop'])}, share "
            f"{share(c['ratio'], c['ratio_interval'])}; "
            f"clean {f3(c['clean'])} against {f3(c['baseline_clean'])})")


def drop_share(ratio: dict, resamples: int) -> str:
    """A ratio of drops (``bench.claim_protocol.ratio_figure``), or why it has none: where the baseline's own
    drop is not above zero in some resamples, the ratio's interval would cover only the others."""
    if ratio["resamples_without"]:
        return f"none: the baseline loses nothing in {ratio['resamples_without']:,} of {resamples:,} resamples"
    return share(ratio["value"], ratio["interval"])


def claim_router(r) -> list[Table]:
    """The router's variants against MMBERT and the fusion baseline, on validation only (issue 56, part 4)."""
    name, title = "mmbert_claim_router.json", "Can routing earn its place? The router's variants, on validation"
    if not r.has(name):
        return [Pending(title, CLAIM_RUN.format(step="router"))]
    d = r(name)
    rows = []
    for model, m in d["models"].items():
        f1, routing = m["macro_f1"], m.get("routing")
        rows.append([ARMS.get(model, model), f3(f1["clean"]),
                     f"{f3(f1['homophone'])} ({f3(f1['clean'] - f1['homophone'])})",
                     parts(m["claim_against_twin"]), parts(m["against_fusion"]) if "against_fusion" in m else "",
                     f"{f3(routing['clean_text']['text'])} / {f3(routing['homophone_edited_text']['text'])}"
                     if routing else ""])
    variants = "; ".join(f"`{k}`: " + ", ".join(f"{a} {b}" for a, b in v.items()) for k, v in d["variants"].items())
    return [Table(title, [name], ["model", "clean", "homophone (drop)", "claim against the twin", "against fusion",
                                  "text expert's weight: clean text / cloaked text"], rows,
                  f"Seed {d['seed']}, the chosen setting ({d['chosen']}), {d['validation_posts']:,} validation "
                  f"posts; never the test. Variants: {variants}.")]


def claim_verdict(r) -> list[Table]:
    """The one test under the committed protocol: every arm's figures, the comparisons, the seeds."""
    name, title = "mmbert_claim_verdict.json", "The claim under the committed protocol: the fresh test, read once"
    if not r.has(name):
        return [Pending(title, CLAIM_RUN.format(step="test") + f" --addendum {CLAIM_ADDENDUM} && " + CLAIM_VERDICT)]
    v = r(name)
    models = v["models"]
    sets = [k for k in CLAIM_SETS if k in models["mmbert"]["drop"]]

    absolute = [[ARMS.get(arm, arm), with_interval(m["macro_f1"]["clean"])]
                + [f"{f3(m['macro_f1'][k]['value'])} ({with_interval(m['drop'][k])})" for k in sets]
                for arm, m in models.items()]
    compared = []
    for pair, c in v["comparisons"].items():
        model, baseline = pair.split("_vs_")
        compared.append([f"{ARMS.get(model, model)} against {ARMS.get(baseline, baseline)}",
                         with_interval(c["clean_minus_baseline"], "+"),
                         drop_share(c["homophone"]["drop_share_of_baselines"], v["resamples"])]
                        + [with_interval(c[k]["baseline_drop_minus_drop"], "+") for k in sets])
    seeds = [[ARMS.get(arm, arm)] + [" / ".join(f3(x) for x in m["seeds"][key]["seeds"])
                                      + f" (sd {f3(m['seeds'][key]['sd'])})"
                                      for key in ("clean_macro_f1", "drop_homophone")] for arm, m in models.items()]
    seeds += [[f"the claim at seed {seed}", parts(c), "holds" if c["holds"] else "does not hold"]
              for seed, c in v["claim_by_seed"].items()]
    c, overlap, fusion = v["claim"], v["term_overlap"], v["mixture_over_fusion"]
    verdict = (f"The claim (MMBERT against its twin under homophones, over seeds {', '.join(map(str, v['seeds']))}): "
               f"{parts(c)}; the twin's drop minus MMBERT's {interval(c['baseline_drop_minus_drop'])}: the claim "
               f"{'**holds**' if c['holds'] else '**does not hold**'}. {clean_part(v)}"
               + (f" The mixture against fusion without experts: {parts(fusion)}, "
                  f"{'earns its place' if fusion['holds'] else 'does not earn its place'}." if fusion else ""))
    setting = ", ".join(f"{k} {x}" for k, x in v["setting"].items())
    where = (f"{v['test_posts']:,} fresh COLD test posts (disjoint from the 1,000 used before), the setting chosen on "
             f"validation ({v['chosen']}: {setting}), protocol `{v['protocol']['path']}` "
             f"(SHA-256 {v['protocol']['sha256'][:12]}, committed in {v['protocol_commit'][:7]})"
             + (f"; bert + augmentation + unveil from its addendum `{v['addendum']['path']}` (committed in "
                f"{v['addendum']['commit'][:7]}, before the test), `{v['addendum']['defence']}` in front. "
                + UNVEIL_CAVEAT if "addendum" in v else "."))
    return [Table(title, [name], ["model", "clean [95%]", *(f"{CLAIM_SETS[k]} (drop [95%])" for k in sets)], absolute,
                  f"{where} Held-out terms: homophone cloaks of the terms no training mask touched; masked terms: "
                  f"of those it did. Training masked {overlap['masked_in_training']} of the "
                  f"{overlap['attacked_terms']} attacked terms ({pct(overlap['share'])}). " + verdict),
            Table("Each model against its baseline, on the same test posts", [name],
                  ["", "clean, model minus baseline", "homophone: model's drop / baseline's [95%]",
                   *(f"{CLAIM_SETS[k]}: baseline's drop minus model's" for k in sets)],
                  compared, "Paired bootstrap over the test posts (the mean over the seeds in each resample), "
                            f"{v['resamples']:,} resamples."),
            Table("Seed by seed", [name], ["", "clean macro-F1 by seed", "homophone drop by seed"], seeds,
                  "The intervals above cover the test posts; this spread covers the seeds.")]


TABLES = [claim_verdict, protocol_choice, claim_router, speed, small_backbone, robustness, stage1_diagnosis,
          stage3_diagnosis, e5_runs, ablation_and_single_runs, held_out]
