"""Named exit codes, shared by every command and the action."""

OK = 0
GATE_FAILED = 1
USAGE_ERROR = 2  # tool usage, configuration, or setup error
UNEXPECTED = 3

ISSUES_URL = "https://github.com/rivet-ci/rivet-ci/issues/new"
