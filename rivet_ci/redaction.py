"""Keeping secrets out of everything rivet-ci writes: plan.json, comments, summaries, logs.

A pull request's config is untrusted and `${NAME}` placeholders are filled from the CI
environment, so a PR could try `source_group: ${ORDERS_REPLICA_URL}` to get a secret printed in
the comment. Every text rivet-ci writes passes through a `Redactor` that knows the values of the
environment variables whose names look secret (and URL passwords, always).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from rivet_ci.adapters.preflight.safety import Redactor

_SECRET_NAME = re.compile(
    r"TOKEN|PASSWORD|PASSWD|SECRET|PRIVATE|CREDENTIAL|API_?KEY|ACCESS_?KEY|DSN|(^|_)URL$|"
    r"^INPUT_STATE-URL$", re.IGNORECASE)
# Variables GitHub sets that match the pattern but are public.
_PUBLIC = frozenset({"GITHUB_API_URL", "GITHUB_SERVER_URL", "GITHUB_GRAPHQL_URL",
                     "ACTIONS_RESULTS_URL", "ACTIONS_CACHE_URL", "ACTIONS_ID_TOKEN_REQUEST_URL",
                     "RUNNER_TRACKING_ID"})
_MIN_SECRET_LENGTH = 6  # shorter values ("true", "1") would mask ordinary words


def environment_secrets(environ: Mapping[str, str]) -> list[str]:
    """Values of the variables whose names look like they hold a secret."""
    return [value for name, value in environ.items()
            if name not in _PUBLIC and _SECRET_NAME.search(name)
            and len(value) >= _MIN_SECRET_LENGTH]


def redactor_for(environ: Mapping[str, str], extra: Iterable[str | None] = ()) -> Redactor:
    redact = Redactor(environment_secrets(environ))
    redact.add(*extra)
    return redact
