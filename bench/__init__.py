"""mmcloak's benchmarks, run from the repository root as ``.venv/bin/python -m bench.NAME``.

What they share is in ``bench/common.py`` (its docstring shows the shape of a benchmark); the order
in which they run, where one needs another's output, is the Makefile's (``make bench``,
``make bench-attacks``, ``make bench-mmbert``). Figures go to ``bench/results/*.json``.
"""
