"""Results: MMBERT's speed, and MMBERT against its text-only twin under cloaking (every run of the study)."""
from __future__ import annotations

from . import Table, f3, interval, mean, num, pct

PAGE = "mmbert.md"
TITLE = "MMBERT"
INTRO = """
MMBERT's cost against a text-only model, and MMBERT against its text-only twin (the same backbone and
stage-3 settings, one expert, no speech or glyphs) under cloaking, run by run.

Xue et al. (2025) claim that MMBERT loses at most half of what a text-only model loses under homophone
cloaking, at no clean cost. A verdict states that claim part by part over the seeds of a run: MMBERT's
homophone drop at most half the twin's; the 95% interval of the twin's drop minus MMBERT's (a paired
bootstrap over the test posts, the mean over the seeds in each resample) above zero; MMBERT's clean macro-F1
no more than 0.01 below the twin's. The order in which the runs were made, and why each was tried:
[the MMBERT study](../studies/mmbert.md).
"""

OPS = ("homophone", "emoji", "pinyin", "split")
# the runs on multilingual-e5-small, in the order they were made: (JSON prefix, title, what differs)
E5_RUNS = (("mmbert_e5", "MMBERT vs its twin on e5", "the error term in stage 1, stage 2 at Xue et al.'s rates, no masks"),
           ("mmbert_e5_mask", "With a share of the text masked in stage 3", "`--stage3-text-mask 0.15`"),
           ("mmbert_e5_term", "Whole terms masked, beside the 0.15 share", "`--stage3-text-mask 0.15 --stage3-term-mask 0.5`"),
           ("mmbert_e5_holdout", "Whole terms masked, half the terms held out",
            "`--stage3-text-mask 0.15 --stage3-term-mask 0.5 --stage3-term-holdout 0.5`"),
           ("mmbert_e5_term80", "Whole terms masked with probability 0.8",
            "`--stage3-text-mask 0.15 --stage3-term-mask 0.8`"))


def speed(r) -> list[Table]:
    d = r("mmbert_speed.json")
    names = {"text": "text-only (the same backbone, one expert)",
             "one_ffn": "three-modality input, one feed-forward (no mixture: the floor)",
             "dense": "MMBERT, dense 3-expert mixture (Xue et al.'s)", "top1": "MMBERT, `moe_top_k: 1`"}
    base = d["training"]["text"]["s_per_step_median"]
    rows = [[label, num(d["training"][k]["examples_per_s"]["median"], 1), num(d["inference"][k]["posts_per_s"]["median"]),
             f"{d['training'][k]['s_per_step_median'] / base:.1f}x"] for k, label in names.items() if k in d["training"]]
    return [Table("MMBERT speed", ["mmbert_speed.json"],
                  ["", "training examples/s (median)", "inference posts/s (median)", "time a training step vs text-only"],
                  rows, f"The `small` shape, batches of COLD test posts of 8-32 characters, cached speech features, "
                  "vision as stages 2-3 train it (the frozen glyph table), one torch thread, interleaved rounds. The "
                  "target, a dense step at most 2.5x text-only's, cannot be met with this input layout: the sequence "
                  "is about three times as many tokens as the text alone, and through one feed-forward it already "
                  "costs the floor's row.")]


def _pair_rows(d: dict, label: str = "") -> list[list]:
    rows = []
    for model, name in (("text_only", "text-only twin"), ("mmbert", "MMBERT"), ("text_speech", "text + speech"),
                        ("text_vision", "text + vision")):
        if model not in d["results"]:
            continue
        res = d["results"][model]
        rows.append([name, *([label] if label != "" else []), f3(res["clean"]["all"]["f1"])]
                    + [f"{f3(res[op]['all']['f1'])} ({f3(res[op]['drop_f1'])})" if op in res else "" for op in OPS])
    return rows


def small_backbone(r) -> list[Table]:
    d = r("mmbert_cold.json")
    ops = [op for op in OPS if op in d["results"]["mmbert"]]
    rows = [[name, f3(d["results"][m]["clean"]["all"]["f1"])]
            + [f"{f3(d['results'][m][op]['all']['f1'])} ({f3(d['results'][m][op]['drop_f1'])})" for op in ops]
            for m, name in (("text_only", "text-only"), ("mmbert", "MMBERT"))]
    rows.append(["twin's drop minus MMBERT's, 95%", ""] + [interval(d["bootstrap_95"][op]["text_only_minus_mmbert"]) for op in ops])
    espeak = []
    for name in ("mmbert_cold_espeak.json", "mmbert_cold_espeak_seed1.json", "mmbert_cold_espeak_seed1_rerun.json"):
        e = r(name)
        seed = e.get("seed", 0)
        tag = f"{seed}" + (" (trained again)" if "rerun" in name else "")
        for m, label in (("text_only", "text-only"), ("mmbert", "MMBERT")):
            res = e["results"][m]
            espeak.append([label, tag, f3(res["clean"]["all"]["f1"])]
                          + [f"{f3(res[op]['all']['f1'])} ({f3(res[op]['drop_f1'])})" for op in ops])
    return [Table("MMBERT vs text-only on the small backbone, Kokoro speech", ["mmbert_cold.json"],
                  ["macro-F1 (drop)", "clean"] + ops, rows,
                  f"COLD posts of 8-32 characters: {d['posts']['train_posts']:,} training posts and a cloak of each, "
                  f"{d['posts']['test_posts']} test posts, lexicon targets at each op's own strength. "
                  "Speech: Kokoro-82M + Whisper base. Backbone: the `small` BERT pre-trained here on "
                  f"{d['posts']['pretrain_posts']:,} COLD training posts for {d['posts']['pretrain_epochs']} epoch (a weak backbone).\n\n![routing](img/mmbert_routing_routing.png)"),
            Table("The same with eSpeak NG speech, two seeds", ["mmbert_cold_espeak.json", "mmbert_cold_espeak_seed1.json",
                                                                "mmbert_cold_espeak_seed1_rerun.json"],
                  ["model", "seed", "clean"] + ops, espeak,
                  "The seed-1 pair trained a second time in a later session: the text-only model repeated to the last "
                  "digit and MMBERT did not, which led to the glyph CNN's gradients being made to repeat exactly.")]


def robustness(r) -> list[Table]:
    tables = []
    for name, title in (("mmbert_robustness.json", "MMBERT in the robustness table"),
                        ("mmbert_robustness_seed1.json", "MMBERT in the robustness table, the seed-1 pair")):
        d = r(name)
        victims = list(d["victims"])
        ops = sorted(k for k in d["victims"][victims[0]]["attacks"] if k.startswith("cloak:"))
        rows = [["clean"] + [f3(d["victims"][v]["clean_macro_f1"]) for v in victims]]
        rows += [[f"`{op.removeprefix('cloak:')}`"] + [f3(d["victims"][v]["attacks"][op]["macro_f1"]) for v in victims]
                 for op in ops]
        for attack in ("search",):
            if attack in d["victims"][victims[0]]["attacks"]:
                rows.append(["search: success rate"] + [pct(d["victims"][v]["attacks"][attack]["success_rate"], 0)
                                                        if attack in d["victims"][v]["attacks"] else "" for v in victims])
        tables.append(Table(title, [name], ["op"] + [f"`{v}`" for v in victims], rows,
                            "The eSpeak NG MMBERT and its text-only twin (both fine-tuned on 2,000 COLD posts and a "
                            "cloak of each by seven ops), attacked like every other victim on the 300 COLD test posts "
                            "they were measured on, with the conventional victims (no cloaks in training) for scale: "
                            "every cloak op in keyword mode, 2 variants, the worst counts."))
    return tables


def diagnosis(r) -> list[Table]:
    tables = []
    for name, title, stage in (("mmbert_e5_diagnosis_small_rates.json", "Why MMBERT on e5 first learnt nothing", "stage1"),
                               ("mmbert_e5_nce_diagnosis.json", "The contrastive stage 1", "stage1")):
        d = r(name)
        m = d["models"][stage]
        probe = d["speech_probe"]
        rows = [["a linear probe of the speech alone: macro-F1", f3(probe["test_clean"])]
                + [f3(probe[f"test_{op}"]) for op in OPS]]
        for modality in ("speech", "vision", "text"):
            rows.append([f"stage 1: a post's {modality} tokens nearest its own clean text (retrieval@1 of 1,000)",
                         f3(m["clean"][modality]["retrieval_at_1"])] + [f3(m[op][modality]["retrieval_at_1"]) for op in OPS])
        stage2 = next(iter((d.get("stage2") or {"": []}).values()))
        epochs = "; ".join(f"epoch {e['epoch']}: text {f3(e['dev_f1_text'])}, speech {f3(e['dev_f1_speech'])}, glyphs "
                           f"{f3(e['dev_f1_vision'])}" for e in stage2)
        tables.append(Table(title, [name], ["", "clean"] + list(OPS), rows,
                            f"`bench.mmbert_diagnose` on the 1,000 test posts of the run `{d['runs'][0]}`."
                            + (f" Stage 2's dev macro-F1 of each path alone after each epoch: {epochs}." if epochs else "")))
    for name, title in (("mmbert_e5_diagnosis_seed1.json", "Why MMBERT does not beat its twin by the claimed margin"),
                        ("mmbert_e5_mask_diagnosis_seed1.json", "The same diagnosis with the text masked in stage 3")):
        d = r(name)
        m = d["models"]["stage3"]
        k = m["knockout"]
        rows = [["MMBERT, every modality"] + [f3(k[op]["all"]) for op in ("clean", *OPS)],
                ["without its speech tokens"] + [f3(k[op]["without_speech"]) for op in ("clean", *OPS)],
                ["without its glyph tokens"] + [f3(k[op]["without_vision"]) for op in ("clean", *OPS)],
                ["without its text"] + [f3(k[op]["without_text"]) for op in ("clean", *OPS)],
                ["its speech path alone"] + [f3(m[op]["speech"]["f1_alone"]) for op in ("clean", *OPS)],
                ["its glyph path alone"] + [f3(m[op]["vision"]["f1_alone"]) for op in ("clean", *OPS)],
                ["a post's speech tokens nearest its clean text (retrieval@1)"]
                + [f3(m[op]["speech"]["retrieval_at_1"]) for op in ("clean", *OPS)],
                ["a linear probe of the speech alone"] + [f3(d["speech_probe"][f"test_{op}"]) for op in ("clean", *OPS)]]
        w = d["routing"]["mean_weight"]
        rows.append(["mean routing weight to the speech expert, all tokens"] + [f3(w[op]["speech"]) for op in ("clean", *OPS)])
        tables.append(Table(title, [name], ["seed 1, stage 3: macro-F1 unless said", "clean"] + list(OPS), rows,
                            f"`bench.mmbert_diagnose` on the stage-3 model of `{d['runs'][0]}`, the same 1,000 test "
                            "posts."))
    return tables


def _seeds(r, prefix: str) -> list[tuple[int, str, dict]]:
    verdict = r(f"{prefix}_verdict.json")
    return [(seed, f"{prefix}_seed{seed}.json", r(f"{prefix}_seed{seed}.json")) for seed in verdict["seeds"]]


def _verdict_rows(v: dict) -> list[list]:
    fig, iv = v["figures"], v["intervals_95"]["mmbert"]
    rows = []
    for model, name in (("text_only", "**twin**"), ("mmbert", "**MMBERT**")):
        rows.append([name, "mean", f3(fig[model]["clean_f1"]["mean"])]
                    + [f"({f3(fig[model][f'drop_f1_{op}']['mean'])})" if f"drop_f1_{op}" in fig[model] else "" for op in OPS])
    rows.append(["twin's drop minus MMBERT's, 95%", "", f"MMBERT minus twin {interval(iv.get('clean_minus_twin'))}"]
                + [interval(iv.get(f"twin_drop_minus_drop_{op}")) for op in OPS])
    return rows


def _claim(v: dict) -> str:
    c = v["claim"]
    share = c["mmbert_homophone_drop"] / c["twin_homophone_drop"]
    return (f"The verdict over seeds {', '.join(map(str, v['seeds']))}: MMBERT's homophone drop "
            f"{f4(c['mmbert_homophone_drop'])} against the twin's {f4(c['twin_homophone_drop'])}, {pct(share, 1)} of it "
            f"(at most half: **{'met' if c['at_most_half_the_twins_drop'] else 'not met'}**); the twin's drop minus "
            f"MMBERT's {interval(c['twin_drop_minus_mmbert_drop_95'])} (above zero: "
            f"**{'met' if c['interval_excludes_zero'] else 'not met'}**); clean {f3(c['mmbert_clean_f1'])} against "
            f"{f3(c['twin_clean_f1'])} (within 0.01: **{'met' if c['clean_within_0.01'] else 'not met'}**). "
            f"The claim {'holds' if c['holds'] else 'does not hold'}.")


def f4(x: float) -> str:
    return f"{x:.4f}"


def e5_runs(r) -> list[Table]:
    tables = []
    for prefix, title, what in E5_RUNS:
        verdict = r(f"{prefix}_verdict.json")
        rows = []
        for seed, _, d in _seeds(r, prefix):
            rows += _pair_rows({"results": {k: v for k, v in d["results"].items() if k in ("text_only", "mmbert")}}, seed)
        rows += _verdict_rows(verdict)
        sources = [f"{prefix}_seed{seed}.json" for seed in verdict["seeds"]] + [f"{prefix}_verdict.json"]
        first = r(sources[0])
        tables.append(Table(title, sources, ["model", "seed", "clean"] + list(OPS), rows,
                            f"{what}. multilingual-e5-small, first {first['backbone']['layers_used']} layers, eSpeak NG "
                            f"speech, {first['posts']['train_posts']:,} training posts and a cloak of each, "
                            f"{first['posts']['test_posts']:,} test posts; macro-F1 (drop). " + _claim(verdict)))
    return tables


def ablation_and_single_runs(r) -> list[Table]:
    d = r("mmbert_e5_seed2.json")
    boot = d["bootstrap_95"]
    rows = []
    for model, name in (("text_only", "text-only twin"), ("text_speech", "text + speech"), ("text_vision", "text + vision"),
                        ("mmbert", "MMBERT (all three)")):
        res = d["results"][model]
        row = [name, f3(res["clean"]["all"]["f1"])]
        for op in OPS:
            cell = f"{f3(res[op]['all']['f1'])} ({f3(res[op]['drop_f1'])})"
            if model != "text_only":
                cell += " " + interval(boot[op][f"text_only_minus_{model}"])
            row.append(cell)
        rows.append(row)
    single = []
    for name, label in (("mmbert_e5_mask30_seed1.json", "text mask share 0.3, seed 1"),
                        ("mmbert_e5_nce_seed0.json", "contrastive stage 1, seed 0")):
        e = r(name)
        for row in _pair_rows({"results": {k: v for k, v in e["results"].items() if k in ("text_only", "mmbert")}}, label):
            single.append(row)
        single.append(["twin's drop minus MMBERT's, 95%", label, ""]
                      + [interval(e["bootstrap_95"][op]["text_only_minus_mmbert"]) for op in OPS])
    return [Table("The modality ablation, seed 2", ["mmbert_e5_seed2.json"], ["seed 2", "clean"] + list(OPS), rows,
                  "Xue et al.'s Table 2: each model through the same three stages, no masks; macro-F1 (drop) and the "
                  "interval of the twin's drop minus the model's."),
            Table("Single-seed runs", ["mmbert_e5_mask30_seed1.json", "mmbert_e5_nce_seed0.json"],
                  ["model", "run", "clean"] + list(OPS), single,
                  "Twice the text-mask share at the seed where 0.15 did worst; and the contrastive stage 1 (its twin is "
                  "seed 0's of the first run, reused).")]


def held_out(r) -> list[Table]:
    rows = []
    sources = []
    for run, label in (("mask", "0.15 share alone (no term masked)"), ("term", "whole terms, every term masked (control)"),
                       ("holdout", "whole terms, half held out")):
        name = f"mmbert_e5_{run}_heldout_verdict.json"
        sources.append(name)
        v = r(name)
        fig, iv = v["figures"], v["intervals_95"]["mmbert"]

        def drops(key: str) -> str:
            t, m = fig["text_only"][key]["mean"], fig["mmbert"][key]["mean"]
            return f"{f3(t)} / {f3(m)} ({pct(m / t, 0)}) {interval(iv.get('twin_drop_minus_' + key.replace('drop_f1_', 'drop_')))}"

        rows.append([label, f"{f3(fig['text_only']['clean_f1']['mean'])} / {f3(fig['mmbert']['clean_f1']['mean'])}",
                     drops("drop_f1_homophone"), drops("drop_f1_homophone_seen")])
    v = r(sources[-1])
    cloaks = v["test_cloaks"]
    return [Table("Terms the masks never touched", sources,
                  ["mean of the seeds", "clean, twin / MMBERT", "cloaks of the held-out terms: drop twin / MMBERT",
                   "cloaks of the masked terms"], rows,
                  f"The terms split in two by a hash of the term (the same split at every seed); the test posts cloaked "
                  f"by homophone on the {cloaks['held_out']['terms']} held-out terms alone "
                  f"({cloaks['posts_cloaked']['heldout_homophone']} posts changed) and on the "
                  f"{cloaks['seen']['terms']} masked ones alone ({cloaks['posts_cloaked']['heldout_homophone_seen']}). "
                  "MMBERT's share of the twin's drop, and the interval of the twin's drop minus MMBERT's.")]


TABLES = [speed, small_backbone, robustness, diagnosis, e5_runs, ablation_and_single_runs, held_out]
