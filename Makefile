# Self-bootstrapping: every target creates and reuses .venv itself.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
DEMO_INSTALLED := $(VENV)/.installed-demo
BENCH_INSTALLED := $(VENV)/.installed-bench
# The ops the augmented detector is trained on; it is attacked by every op, so seven of them it never saw
DEMO_OPS ?= homophone,similar,emoji,split,abbrev,pinyin

.PHONY: demo test bench bench-mmbert bench-attacks clean

# torch first, pinned to the CPU build on local disk: openai-whisper would otherwise pull a CUDA build.
TORCH ?= torch==2.13.0
# open_clip needs torchvision, and PyPI's (a CUDA build) does not load beside the CPU torch above
# ("operator torchvision::nms does not exist"): the open_clip tests and benchmark get a venv of their
# own with a torch + torchvision pair that does (5.6 GB, a CUDA build run on the CPU), so that every
# other test and benchmark keeps $(TORCH).
OPEN_CLIP_VENV ?= .venv-open-clip
OPEN_CLIP_TORCH ?= torch==2.14.1 torchvision==0.29.1
OPEN_CLIP_INSTALLED := $(OPEN_CLIP_VENV)/.installed

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The demo needs no torch and no models: the base package, scikit-learn, skops, jinja2 and matplotlib.
$(DEMO_INSTALLED): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[report]'
	touch $@

$(INSTALLED): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check $(TORCH)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[test,attacks,ray]'
	touch $@

$(OPEN_CLIP_VENV)/bin/python:
	$(PYTHON) -m venv $(OPEN_CLIP_VENV)

$(OPEN_CLIP_INSTALLED): pyproject.toml | $(OPEN_CLIP_VENV)/bin/python
	$(OPEN_CLIP_VENV)/bin/pip install --quiet --disable-pip-version-check $(OPEN_CLIP_TORCH)
	$(OPEN_CLIP_VENV)/bin/pip install --quiet --disable-pip-version-check -e '.[test,open-clip]'
	touch $@

$(BENCH_INSTALLED): $(INSTALLED)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[bench]'
	touch $@

## demo: the toolkit's question on the bundled COLD sample: how much does a detector lose when posters
## cloak, and does training on cloaked posts help? Cloak 2,000 training posts (the lexicon's terms and
## those mined from the posts, whole, as posters write them; each post its own label's words, so that
## non-offensive posts are cloaked as often and as heavily and a cloak does not mean offensive) with six
## ops, train tfidf-lr on the clean posts and on clean + cloaked, attack both with every op and the search
## attack on 300 test posts, and write demo_out/report.html
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
		--mine-from samples/cold/cold_train_2000.jsonl --out $(DEMO)/eval -q
	$(BIN)/attacks report $(DEMO)/eval --out $(DEMO)

## test: the test suite (fast, no network, no model downloads); the open_clip tests in their own venv
test: $(INSTALLED) $(OPEN_CLIP_INSTALLED)
	$(OPEN_CLIP_VENV)/bin/python -m pytest tests/test_open_clip.py
	$(BIN)/python -m pytest

## bench: benchmarks on real COLD data (COLD=path/to/cold), figures to bench/results/*.json. Each is a
## module run from the repository root (`python -m bench.NAME --help`); where one needs another's output
## it comes after it here, and run alone before it, it stops naming the command to run first.
COLD ?= ../shared/data/cold
PY := $(BIN)/python -m
bench: $(BENCH_INSTALLED)
	$(PY) bench.perturb --cold $(COLD)
	$(PY) bench.render --cold $(COLD)
	$(PY) bench.long_posts --cold $(COLD)
	$(PY) bench.cloak_augmentation --cold $(COLD) --held-out   # ~35 min
	$(PY) bench.demo   # make demo on a fresh virtual environment, pip install included
	$(PY) bench.ray_scale --cold $(COLD)   # cloak perturb --engine ray vs --workers 2, 1M posts
	$(PY) bench.command_vs_rev --cold $(COLD) --rev 7156814 --rounds 5   # the local path against before Ray
	$(PY) bench.unveil --cold $(COLD) --tune   # ~70 min: cloak unveil on COLD test's cloaks, clean posts, speed
	$(PY) bench.balanced_augmentation --cold $(COLD)   # ~25 min: false positives with and without --balance

## bench-mmbert: MMBERT speed, and MMBERT vs text-only under cloaking on COLD with real Kokoro + Whisper
## weights (WEIGHTS=folder made by shared/models/offline_weights.py); about 5 hours on 2 CPU cores, most
## of it Kokoro speaking ~4,300 texts (cached: a rerun takes about 30 minutes). Its last step attacks
## MMBERT beside bench-attacks' conventional victims: run bench-attacks first.
WEIGHTS ?= weights
bench-mmbert: $(BENCH_INSTALLED) $(OPEN_CLIP_INSTALLED)
	$(PY) bench.mmbert_speed --cold $(COLD)
	$(OPEN_CLIP_VENV)/bin/python -m bench.vision_table   # ~20 min
	$(PY) bench.speech --cold $(COLD) --weights $(WEIGHTS)
	$(PY) bench.speech_workers --cold $(COLD) --weights $(WEIGHTS)
	$(PY) bench.mmbert_data --cold $(COLD) --weights $(WEIGHTS) --workers 2
	$(PY) bench.mmbert_cold --cold $(COLD) --weights $(WEIGHTS)
	$(PY) bench.speech_backends --cold $(COLD) --weights $(WEIGHTS)
	$(PY) bench.mmbert_cold --cold $(COLD) --weights $(WEIGHTS) --tts espeak-ng --work bench/work/mmbert-espeak \
		--out bench/results/mmbert_cold_espeak.json --routing-out bench/results/mmbert_routing_espeak
	$(PY) bench.mmbert_robustness --work bench/work/mmbert-espeak   # after mmbert_cold and bench-attacks' victims

## bench-attacks: the detectors on COLD (every conventional one, the training-size curve, the shared
## small backbone pre-trained here, bert and chinesebert on it), the cloak attacks at scale, the
## robustness table, how true to real cloaking they are, HABERTOR and the attention regularisers; about
## 7 hours on 2 CPU cores, most of it the backbone, the RBF SVMs and HABERTOR's pre-training
SWSR ?= ../shared/data/swsr
bench-attacks: $(BENCH_INSTALLED)
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
	$(PY) bench.search_importance   # after robustness and victims --neural
	$(PY) bench.habertor_speed
	$(PY) bench.regularizers --cold $(COLD)   # after backbone
	$(PY) bench.habertor_cold --cold $(COLD) --swsr $(SWSR)   # after regularizers: its bert-none beside HABERTOR
	$(PY) bench.search_attack --cold $(COLD)   # last: needs TextAttack's own venv (see the README)

clean:
	rm -rf $(VENV) $(OPEN_CLIP_VENV) demo_out .pytest_cache .hypothesis *.egg-info
