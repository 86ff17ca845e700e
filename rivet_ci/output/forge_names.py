"""The environment variables each forge's runner sets that look secret by name but are not.

The redactor (`rivet_ci.output.redaction`) masks the value of every variable whose name looks
secret — any `*_URL` among them, since a database URL carries its password. A forge's runner
sets public ones too (GitHub's `GITHUB_SERVER_URL`; GitLab's `CI_SERVER_URL`, ...): masking
those would blank every link in the comment. Each forge lists its own here, with the variable
its runner sets to say it is that forge; a run uses the list of the forge it runs on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ForgeNames:
    forge: str
    marker: str  # set to "true" by the forge's runner (`GITHUB_ACTIONS`)
    public: frozenset[str]


GITHUB = ForgeNames("GitHub", "GITHUB_ACTIONS", frozenset({
    "GITHUB_API_URL", "GITHUB_SERVER_URL", "GITHUB_GRAPHQL_URL", "ACTIONS_RESULTS_URL",
    "ACTIONS_CACHE_URL", "ACTIONS_ID_TOKEN_REQUEST_URL", "RUNNER_TRACKING_ID",
    "GITHUB_EVENT_PATH", "GITHUB_PATH",
}))
FORGES: tuple[ForgeNames, ...] = (GITHUB,)
# Public on any runner: the shell's working directories (`PWD` is not a password).
SHELL_NAMES = frozenset({"PWD", "OLDPWD"})
# Where no forge's marker is set (a local run, a test): GitHub's, rivet-ci's first forge.
DEFAULT = GITHUB


def public_names(environ: Mapping[str, str], forges: Sequence[ForgeNames] = FORGES,
                 ) -> frozenset[str]:
    """The public names of the forge `environ` says it runs on (`DEFAULT` when none)."""
    forge = next((f for f in forges if environ.get(f.marker) == "true"), DEFAULT)
    return forge.public | SHELL_NAMES
