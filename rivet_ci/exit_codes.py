"""Named exit codes, shared by every command and the action.

One map, applied at one boundary (`rivet_ci.cli.run`):

* 0 — success, or the gate passed;
* 1 — the gate was blocked by policy;
* 2 — usage, setup or configuration error: bad arguments or inputs, an unreadable or unwritable
  file (any `OSError` on inputs or outputs), a malformed event payload, a facts file that cannot
  be read, a repository git cannot use;
* 3 — a genuine bug in rivet-ci (the traceback is printed with a link to report it);
* 130 — interrupted (Ctrl-C), the shell's convention of 128 + SIGINT.
"""

OK = 0
GATE_FAILED = 1
USAGE_ERROR = 2  # tool usage, configuration, or setup error
UNEXPECTED = 3
INTERRUPTED = 130  # 128 + SIGINT

ISSUES_URL = "https://github.com/rivet-ci/rivet-ci/issues/new"
