"""`--param KEY=VALUE` and `--check-environment`: how commands load configs (spec §4.3).

Shared by `plan`, `facts`, `diff` and `check`: params win over the environment; a param no
config references is warned about, as rivet does; `--check-environment` turns the rules that
depend on this machine (unset placeholders, a missing credentials_file) from notes into errors.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TextIO

from rivet_ci.core.config.loader import LoadedConfig
from rivet_ci.core.config.rules import RULE_BY_ID
from rivet_ci.errors import UsageError


def add_param_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--param", "-p", action="append", metavar="KEY=VALUE", dest="params",
                   help="fill ${KEY} placeholders (repeatable; wins over the environment)")


def add_config_arguments(p: argparse.ArgumentParser) -> None:
    add_param_argument(p)
    p.add_argument("--check-environment", action="store_true",
                   help="also check what depends on this machine (unset ${VAR}, a missing "
                        "credentials_file); otherwise those are notes")


def parse_params(items: Sequence[str] | None) -> dict[str, str] | None:
    """KEY=VALUE items split at the first `=` (last one wins); None when none was given."""
    if not items:
        return None
    params: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(RULE_BY_ID["R0"].message.format(item=item))
        params[key] = value
    return params


def path_checker(args: argparse.Namespace, cwd: Path) -> Callable[[str], bool] | None:
    """With `--check-environment`: whether a path exists, relative to the working directory."""
    if not getattr(args, "check_environment", False):
        return None
    return lambda path: (cwd / path).exists()


def warn_unused_params(params: dict[str, str] | None,
                       configs: Iterable[LoadedConfig] | frozenset[str], stderr: TextIO) -> None:
    """rivet's warning for a `--param` no `${KEY}` placeholder of the configs uses (`configs`:
    the loaded configs, or the placeholder names they use)."""
    if not params:
        return
    used: set[str] = (set(configs) if isinstance(configs, frozenset)
                      else set().union(*(c.placeholders for c in configs)))
    for key in sorted(params):
        if key not in used:
            message = RULE_BY_ID["W-param"].message.format(key=key)
            stderr.write(f"rivet-ci: warning: {message}\n")
