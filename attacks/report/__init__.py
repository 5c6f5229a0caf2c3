"""The robustness report: folders of ``attacks evaluate`` -> ``report.json``, ``report.md``, ``report.html``.

``report.json`` holds every number (each folder's whole summary with its settings, data hash and
versions); ``report.md`` the tables, to paste into an issue or a paper; ``report.html`` one page that
works offline: plots inline as SVG (text drawn as paths), no script, nothing fetched, and every text from
the data escaped by jinja2's autoescape, under a content-security policy that would block a script anyway.

What a person can quote from it, and how sure it is:

- every drop carries its paired bootstrap 95% interval (:mod:`attacks.bootstrap`); a drop whose interval
  holds zero is marked as within the noise;
- "holds up best" ranks the victims by macro-F1 *under* the cloak attacks (the mean over them, and the
  worst case), not by the drop alone: a detector that starts low, or says one label for every post,
  loses little and detects little. Every victim ranked is judged on the same attacks, which the table
  names. A victim that predicts one label for every clean post, or scores below 0.5 macro-F1 clean, is
  flagged and left out; the lead over the next victim carries its interval, and an attack outside the
  ranking's under which the best does worse is said beside it;
- the search is split by gold label: an offensive post flipped evades the detector, a non-offensive one
  flipped is a false alarm;
- each victim is described: its kind, settings, the data it was trained on and the cloaks that data
  carried.

Several folders (say, one detector before and after training on cloaked posts) compare side by side:
each (folder, victim) is a row, and an attack one folder did not run is a blank in its rows.

The report knows no attack by name: it reads what each attack declared (:class:`attacks.attack.ReportedAs`,
recorded in the summary) — which figure it belongs to, the axis of its curve, whether its examples show
edits, how its settings read. The package, in the order the data flows: :mod:`.results` (the folders),
:mod:`.figures` (the matrix, coverage, search table and curves), :mod:`.ranking` (holds up best, and the
sentences), :mod:`.examples`, then the pages: :mod:`.markdown`, :mod:`.page` with :mod:`.plots`, and
:mod:`.terminal`; :mod:`.build` puts them together.
"""
from __future__ import annotations

from .build import build_report, write_report
from .examples import examples_of
from .figures import attack_order
from .markdown import markdown
from .page import html
from .plots import op_bars_svg
from .results import Results, load_results
from .terminal import terminal_matrix

__all__ = ["Results", "attack_order", "build_report", "examples_of", "html", "load_results", "markdown",
           "op_bars_svg", "terminal_matrix", "write_report"]
