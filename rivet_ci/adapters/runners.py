"""The forges' CI runners, found by their packages: which one a run is on, and what follows.

A forge is a package under `rivet_ci/adapters/` (GitHub's: `adapters/github/`) with a module
`runner.py` that declares `RUNNER`, a `ForgeRunner`: the variable the forge's runner sets to
say a run is on it, the variables it sets that look secret by name but are public (masking
them would blank every link), the most characters a comment may hold there, how a config line
links from the runner's environment, and the command that is the forge's entry point
(`rivet-ci action`, in `rivet_ci/github_action/`). The command line (`rivet_ci.cli`), the
redactor's public names and the links of `rivet-ci diff` and `show` come from here, so a
second forge adds its two packages — `adapters/<forge>/` and its entry point's — and no entry
anywhere else (docs/development.md).

A `runner.py` stays light: it is imported by every process, before any command.
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from rivet_ci.output.redaction import SHELL_NAMES

if TYPE_CHECKING:
    from rivet_ci.core.comment.view import LinkFor

# `links_from_environ(environ, sha)`: links to config lines at `sha`, from what the forge's
# runner sets (its server and repository); None where the environment names no repository.
EnvironLinks = Callable[[Mapping[str, str], str], "LinkFor | None"]


class EntryCommand:
    """The `rivet-ci` subcommand a forge's runner runs: `module` has `register(subparsers)` and
    `run(args, ctx)` and is imported only when that command runs; `examples` end its `--help`.
    (Plain slotted classes here: every process builds them, and a dataclass costs ~3M
    instructions to create.)"""

    __slots__ = ("examples", "module", "name")

    def __init__(self, name: str, module: str, examples: tuple[str, str]) -> None:
        self.name, self.module, self.examples = name, module, examples


class ForgeRunner:
    """A forge's CI runner: `forge` its name ("GitHub"); `marker` the variable its runner sets
    to "true" (`GITHUB_ACTIONS`); `public_names` the variables it sets that look secret by name
    but are not (`GITHUB_SERVER_URL`); `comment_limit` the most characters one comment may hold
    on the forge; `links_from_environ`; `entry` its entry command."""

    __slots__ = ("comment_limit", "entry", "forge", "links_from_environ", "marker",
                 "public_names")

    def __init__(self, *, forge: str, marker: str, public_names: frozenset[str],
                 comment_limit: int, links_from_environ: EnvironLinks,
                 entry: EntryCommand) -> None:
        self.forge, self.marker, self.public_names = forge, marker, public_names
        self.comment_limit, self.links_from_environ = comment_limit, links_from_environ
        self.entry = entry


def discover(package: str, paths: Iterable[str]) -> tuple[ForgeRunner, ...]:
    """The `RUNNER` of every subpackage of `package` (its directories on `paths`) that has a
    `runner.py`, by forge name. Nothing else of `package` is imported."""
    found = []
    for path in paths:
        with os.scandir(path) as entries:
            names = sorted(e.name for e in entries
                           if e.is_dir() and os.path.isfile(os.path.join(e.path, "runner.py")))
        for name in names:
            runner = importlib.import_module(f"{package}.{name}.runner").RUNNER
            if not isinstance(runner, ForgeRunner):
                raise TypeError(f"{package}.{name}.runner.RUNNER is not a ForgeRunner")
            found.append(runner)
    return tuple(sorted(found, key=lambda r: r.forge))


@functools.cache
def runners() -> tuple[ForgeRunner, ...]:
    """Every forge rivet-ci knows (the packages under `rivet_ci/adapters/`)."""
    import rivet_ci.adapters

    return discover(rivet_ci.adapters.__name__, rivet_ci.adapters.__path__)


def runner_on(environ: Mapping[str, str],
              known: Iterable[ForgeRunner] | None = None) -> ForgeRunner | None:
    """The forge whose runner `environ` says the run is on; None outside every forge."""
    return next((r for r in (runners() if known is None else known)
                 if environ.get(r.marker, "").strip().lower() == "true"), None)


def _candidates(environ: Mapping[str, str],
                known: Iterable[ForgeRunner] | None) -> tuple[ForgeRunner, ...]:
    """The forge the run is on; outside every forge (a local run, a test), all of them."""
    every = tuple(runners() if known is None else known)
    on = runner_on(environ, every)
    return (on,) if on is not None else every


def public_names(environ: Mapping[str, str],
                 known: Iterable[ForgeRunner] | None = None) -> frozenset[str]:
    """The names the redactor leaves unmasked: the shell's, and the public names of the forge
    the run is on (outside every forge, of each forge: none of them is set by a person)."""
    return SHELL_NAMES.union(*(r.public_names for r in _candidates(environ, known)))


def comment_limit(environ: Mapping[str, str],
                  known: Iterable[ForgeRunner] | None = None) -> int:
    """The comment limit of the forge the run is on; outside every forge the smallest, so a
    comment `rivet-ci diff` prints fits wherever it is pasted."""
    return min(r.comment_limit for r in _candidates(environ, known))


def links_from_environ(environ: Mapping[str, str], sha: str,
                       known: Iterable[ForgeRunner] | None = None) -> LinkFor | None:
    """Links to config lines at `sha` from the runner's environment: the forge the run is on;
    outside every forge the first whose variables name a repository; else none."""
    return next((links for r in _candidates(environ, known)
                 if (links := r.links_from_environ(environ, sha)) is not None), None)
