# Self-bootstrapping: every target creates and reuses .venv itself.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
DEMO_INSTALLED := $(VENV)/.installed-demo
BENCH_INSTALLED := $(VENV)/.installed-bench
DEMO_OPS ?= homophone,similar,emoji,split,abbrev,pinyin,english

.PHONY: demo test bench bench-mmbert bench-attacks clean

# torch first, pinned to the CPU build on local disk: openai-whisper would otherwise pull a CUDA build.
TORCH ?= torch==2.13.0

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The demo needs the base package only: no torch, no models.
$(DEMO_INSTALLED): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check -e .
	touch $@

$(INSTALLED): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check $(TORCH)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[test,attacks]'
	touch $@

$(BENCH_INSTALLED): $(INSTALLED)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[bench]'
	touch $@

## demo: cloak the bundled COLD sample and show source vs cloak with the edits marked
demo: $(DEMO_INSTALLED)
	mkdir -p demo_out
	$(BIN)/cloak perturb --in samples/cold/cold_test_300.jsonl --out demo_out/cloaked.jsonl \
		--ops $(DEMO_OPS) --variants 2 --seed 0
	$(BIN)/cloak show demo_out/cloaked.jsonl --limit 12

## test: the test suite (fast, no network, no model downloads)
test: $(INSTALLED)
	$(BIN)/python -m pytest

## bench: benchmarks on real COLD data (COLD=path/to/cold), figures to bench/results/*.json
COLD ?= ../shared/data/cold
bench: $(BENCH_INSTALLED)
	$(BIN)/python bench/perturb.py --cold $(COLD)
	$(BIN)/python bench/render.py --cold $(COLD)
	$(BIN)/python bench/long_posts.py --cold $(COLD)

## bench-mmbert: MMBERT speed, and MMBERT vs text-only under cloaking on COLD with real Kokoro + Whisper
## weights (WEIGHTS=folder made by shared/models/offline_weights.py); about 5 hours on 2 CPU cores, most
## of it Kokoro speaking ~4,300 texts (cached: a rerun takes about 30 minutes)
WEIGHTS ?= weights
bench-mmbert: $(BENCH_INSTALLED)
	$(BIN)/python bench/mmbert_speed.py --cold $(COLD)
	$(BIN)/python bench/mmbert_data.py --cold $(COLD) --weights $(WEIGHTS) --workers 2
	$(BIN)/python bench/mmbert_cold.py --cold $(COLD) --weights $(WEIGHTS)

## bench-attacks: the detectors on COLD (every conventional one, the training-size curve, the shared
## small backbone pre-trained here, bert and chinesebert on it), the cloak attacks at scale and the
## robustness table; about 4 hours on 2 CPU cores, most of it the backbone and the RBF SVMs
SWSR ?= ../shared/data/swsr
bench-attacks: $(BENCH_INSTALLED)
	$(BIN)/python bench/backbone.py --cold $(COLD) --swsr $(SWSR) --epochs 3
	$(BIN)/python bench/victims.py --cold $(COLD) --swsr $(SWSR)
	$(BIN)/python bench/victims.py --cold $(COLD) --swsr $(SWSR) --neural bert,chinesebert --no-curve
	$(BIN)/python bench/attacks_scale.py --cold $(COLD)
	$(BIN)/python bench/robustness.py --cold $(COLD)
	$(BIN)/python bench/search_attack.py --cold $(COLD)   # needs TextAttack's venv: see the README

clean:
	rm -rf $(VENV) demo_out .pytest_cache .hypothesis *.egg-info
