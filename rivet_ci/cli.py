"""The `rivet-ci` command line: parses arguments, builds the real I/O, and handles errors once.

Exit codes (`rivet_ci.exit_codes`): 0 success / gate passed, 1 gate failed by policy, 2 usage,
configuration or setup error, 3 unexpected error (with a request to report it).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

from rivet_ci import __version__, action
from rivet_ci.commands import diff, facts, plan, post, show
from rivet_ci.context import Context
from rivet_ci.errors import UsageError
from rivet_ci.exit_codes import ISSUES_URL, UNEXPECTED, USAGE_ERROR
from rivet_ci.runtime import tune_gc

COMMANDS: dict[str, ModuleType] = {
    "plan": plan,
    "facts": facts,
    "diff": diff,
    "show": show,
    "action": action,
    "post": post,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rivet-ci",
        description="Source-aware extraction prioritization for rivet configs, in CI.")
    parser.add_argument("--version", action="version", version=f"rivet-ci {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS.values():
        module.register(sub)
    return parser


def run(argv: Sequence[str], ctx: Context) -> int:
    """Parse and dispatch; every error ends here as a message and an exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exc:  # argparse already printed usage or help
        return int(exc.code or 0) if exc.code in (0, None) else USAGE_ERROR
    command: Callable[[argparse.Namespace, Context], int] = COMMANDS[args.command].run
    try:
        return command(args, ctx)
    except UsageError as exc:
        ctx.stderr.write(f"rivet-ci: error: {exc}\n")
        return USAGE_ERROR
    except KeyboardInterrupt:
        ctx.stderr.write("rivet-ci: interrupted\n")
        return USAGE_ERROR
    except Exception:
        ctx.stderr.write(
            "rivet-ci: unexpected error — this is a bug in rivet-ci, please report it at "
            f"{ISSUES_URL} with the traceback below.\n{traceback.format_exc()}")
        return UNEXPECTED


def main(argv: Sequence[str] | None = None) -> int:
    tune_gc()
    ctx = Context(stdout=sys.stdout, stderr=sys.stderr, environ=dict(os.environ), cwd=Path.cwd())
    return run(sys.argv[1:] if argv is None else argv, ctx)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
