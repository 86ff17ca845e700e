"""The `rivet-ci` command line: parses arguments, builds the real I/O, and handles errors once.

Exit codes (`rivet_ci.exit_codes`): 0 success / gate passed, 1 gate failed by policy, 2 usage,
configuration or setup error (including any `OSError` on an input or output), 3 unexpected error
(with a request to report it), 130 interrupted.
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import importlib
import os
import signal
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TextIO, cast

from rivet_ci import RIVET_VERSION, __version__
from rivet_ci.adapters.runners import public_names, runners
from rivet_ci.cli.runtime import drop_model_attribute_hook, leave_heap_to_exit, tune_gc
from rivet_ci.commands.context import Context
from rivet_ci.errors import UsageError
from rivet_ci.exit_codes import INTERRUPTED, ISSUES_URL, UNEXPECTED, USAGE_ERROR
from rivet_ci.output.redaction import Redactor, environment_secrets, param_secrets, redactor_for
from rivet_ci.output.sink import RedactingStream, logging_to
from rivet_ci.output.workflow_commands import CommandGuard

# Each command is a module with `register(subparsers)` and `run(args, ctx) -> int`. They are
# imported by name and only when needed: a command pulls in what it uses (SQLAlchemy and the
# drivers for live preflight, Jinja for the comment) and `rivet-ci --version` imports none.
# Each forge's entry point (`rivet-ci action` on GitHub) is its runner's (`adapters/runners.py`).
COMMANDS: dict[str, str] = {
    "plan": "rivet_ci.commands.plan",
    "check": "rivet_ci.commands.check",
    "facts": "rivet_ci.commands.facts",
    "diff": "rivet_ci.commands.diff",
    "show": "rivet_ci.commands.show",
    **{runner.entry.name: runner.entry.module for runner in runners()},
    "post": "rivet_ci.commands.post",
    "schema": "rivet_ci.commands.schema",
}


def commands_to_register(argv: Sequence[str]) -> list[str]:
    """The commands whose parsers `argv` needs: the one it names; none for a bare `--version`;
    every one otherwise (`--help` lists them all, a typo is answered with the choices)."""
    named = next((arg for arg in argv if not arg.startswith("-")), None)
    if named in COMMANDS:
        return [named]
    if named is None and ("--version" in argv) and ("-h" not in argv) and ("--help" not in argv):
        return []
    return list(COMMANDS)


# Two examples end every subcommand's --help (tests/test_cli_help.py checks each has them).
EXAMPLES: dict[str, tuple[str, str]] = {
    "plan": ("rivet-ci plan rivet/ --facts facts.yaml",
             "rivet-ci plan rivet/orders.yaml --facts facts.yaml --export events --format json"),
    "check": ("rivet-ci check rivet/",
              "rivet-ci check rivet/orders.yaml -p SCHEMA=shop --check-environment --format json"),
    "facts": ("rivet-ci facts rivet/ --output facts.yaml",
              "rivet-ci facts rivet/orders.yaml --statement-timeout 2 --output facts.json"),
    "diff": ("rivet-ci diff --base origin/main --facts facts.yaml",
             "rivet-ci diff --base main --head HEAD --fail-on new-isolation --output plan.json"),
    "show": ("rivet-ci show plan.json",
             "rivet plan --format json > rivet.json && rivet-ci show rivet.json --format json"),
    **{runner.entry.name: runner.entry.examples for runner in runners()},
    "post": ("rivet-ci post --plan plan.json --pr 42",
             "rivet-ci post --plan rivet-ci-plan/plan.json --run-id 4242 --id warehouse"),
    "schema": ("rivet-ci schema > plan.schema.json",
               "rivet-ci schema | check-jsonschema --schemafile /dev/stdin plan.json"),
}


class _HelpFormatter(argparse.HelpFormatter):
    """Keeps the examples' line breaks and says every option's default."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("examples:"):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if ("default" in text or action.default is argparse.SUPPRESS or action.required
                or not action.option_strings):
            return text
        if action.default in (None, False):
            return text + " (default: off)" if isinstance(action, argparse._StoreTrueAction) \
                else text + " (default: none)"
        return text + " (default: %(default)s)"


def _document(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    for name, parser in sub.choices.items():
        parser.formatter_class = _HelpFormatter
        examples = EXAMPLES.get(name)
        if examples:
            parser.epilog = "examples:\n" + "\n".join(f"  {e}" for e in examples)


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rivet-ci",
        description="Source-aware extraction prioritization for rivet configs, in CI.")
    parser.add_argument("--version", action="version",
                        version=f"rivet-ci {__version__} (models rivet {RIVET_VERSION})")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in commands_to_register(argv) if argv else COMMANDS:
        importlib.import_module(COMMANDS[name]).register(sub)
    _document(sub)
    return parser


def run(argv: Sequence[str], ctx: Context, *,
        before_command: Callable[[], None] | None = None) -> int:
    """Parse and dispatch; every error ends here as a message and an exit code.

    Everything the command writes to stdout, stderr or the logging module passes the output
    boundary's redactor (`rivet_ci.output.sink`), built here from the environment's secrets.
    `before_command` runs once the command's modules are imported, just before it runs (the
    process entry point's runtime settings).
    """
    redact = ctx.redact
    redact.add(*environment_secrets(ctx.environ, public=public_names(ctx.environ)))
    active = in_github_actions(ctx.environ)
    out, err = (guarded(stream, redact, active=active) for stream in (ctx.stdout, ctx.stderr))
    safe = dataclasses.replace(ctx, stdout=out, stderr=err)
    try:
        with logging_to(err):
            return _run(argv, safe, before_command)
    finally:
        out.flush()
        err.flush()


def in_github_actions(environ: Mapping[str, str]) -> bool:
    return environ.get("GITHUB_ACTIONS", "").strip().lower() == "true"


def guarded(stream: TextIO, redact: Redactor, *, active: bool) -> TextIO:
    """`stream` behind the output boundary: redacted (`RedactingStream`), then passed through
    the command-stream guard (`CommandGuard`: in GitHub Actions no line rivet-ci did not build
    as a workflow command can start one). A stream already behind both is kept."""
    if isinstance(stream, RedactingStream) and stream.redact is redact:
        if not isinstance(stream.raw, CommandGuard):
            stream.raw = cast(TextIO, CommandGuard(stream.raw, active=active))
        elif active:
            cast(CommandGuard, stream.raw).active = True
        return stream
    return cast(TextIO, RedactingStream(cast(TextIO, CommandGuard(stream, active=active)),
                                        redact))


def _run(argv: Sequence[str], ctx: Context,
         before_command: Callable[[], None] | None) -> int:
    parser = build_parser(argv)
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exc:  # argparse already printed usage or help
        return int(exc.code or 0) if exc.code in (0, None) else USAGE_ERROR
    # `--param` values are secrets until shown otherwise: masked like secret env values.
    ctx.redact.add(*param_secrets(getattr(args, "params", None)))
    module = importlib.import_module(COMMANDS[args.command])
    command: Callable[[argparse.Namespace, Context], int] = module.run
    if before_command is not None:
        before_command()
    try:
        return command(args, ctx)
    except UsageError as exc:
        ctx.stderr.write(f"rivet-ci: error: {exc}\n")
        return USAGE_ERROR
    except OSError as exc:
        # A file or directory rivet-ci was told to read or write: a setup problem, not a bug.
        ctx.stderr.write(f"rivet-ci: error: {describe_os_error(exc)}\n")
        return USAGE_ERROR
    except KeyboardInterrupt:
        ctx.stderr.write("rivet-ci: interrupted\n")
        return INTERRUPTED
    except Exception as exc:
        loop = _symlink_loop(exc)
        if loop is not None:  # a path given to rivet-ci, not a bug
            ctx.stderr.write(f"rivet-ci: error: {describe_os_error(loop)}\n")
            return USAGE_ERROR
        ctx.stderr.write(
            "rivet-ci: unexpected error — this is a bug in rivet-ci, please report it at "
            f"{ISSUES_URL} with the traceback below.\n{traceback.format_exc()}")
        return UNEXPECTED


def _symlink_loop(exc: BaseException) -> OSError | None:
    """The "too many levels of symbolic links" error behind `exc`: Python 3.11's `Path.resolve`
    reports such a loop as a RuntimeError raised while handling it (3.13 raises the OSError)."""
    cause = exc.__context__
    if isinstance(exc, RuntimeError) and isinstance(cause, OSError) and cause.errno == errno.ELOOP:
        return cause
    return None


def describe_os_error(exc: OSError) -> str:
    """The cause first, then the file: `permission denied: /github/workspace/plan.json`."""
    cause = (exc.strerror or str(exc) or type(exc).__name__).strip()
    cause = cause[:1].lower() + cause[1:]
    names = [str(n) for n in (exc.filename, exc.filename2) if n is not None]
    return f"{cause}: {' -> '.join(names)}" if names else cause


def _terminate(signum: int, frame: object) -> None:  # noqa: ARG001 (a signal handler)
    """SIGTERM (a cancelled job, a runner's timeout) ends the command as an interrupt does:
    the `finally` blocks run, so an output being written is either left whole or not replaced
    (`output.sink`), and no temporary file stays behind."""
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    tune_gc()
    try:
        signal.signal(signal.SIGTERM, _terminate)
        environ = dict(os.environ)
        # The process-wide streams too: whatever bypasses the command's context (a traceback
        # at exit, a warning, a library printing) still leaves through the redactor.
        redact = redactor_for(environ, public=public_names(environ))
        active = in_github_actions(environ)
        sys.stdout = guarded(sys.stdout, redact, active=active)
        sys.stderr = guarded(sys.stderr, redact, active=active)
        ctx = Context(stdout=sys.stdout, stderr=sys.stderr, environ=environ, cwd=Path.cwd(),
                      redact=redact)
        return run(sys.argv[1:] if argv is None else argv, ctx,
                   before_command=drop_model_attribute_hook)
    except KeyboardInterrupt:  # before the command started (imports, parsing)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        sys.stderr.write("rivet-ci: interrupted\n")
        sys.stderr.flush()
        return INTERRUPTED
    finally:
        # From here on (the exit itself) a SIGTERM ends the process as it always did: every
        # output is already whole.
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        leave_heap_to_exit()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
