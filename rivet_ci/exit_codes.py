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

# What each code means, as docs/action.md's table shows it (rendered from this by
# tests/support/generated/action_docs.py).
MEANINGS: dict[int, str] = {
    OK: "The gate passed (or, for other commands, success).",
    GATE_FAILED: "The gate failed by policy: at least one blocking finding.",
    USAGE_ERROR: (
        "Usage, setup or configuration error: invalid inputs (all of them reported at once, with "
        "an unreadable or malformed event payload), any file that cannot be read or written (an "
        "output path that is a directory or not writable: `rivet-ci: error: is a directory: "
        "plan.json`), a facts file that cannot be read, `diff` outside a git repository, a base "
        "commit missing from a shallow clone, a GitHub API URL that is not a URL, a broken user "
        "template. The message names the cause first."),
    UNEXPECTED: ("Unexpected error: a bug in rivet-ci. The log carries the traceback and a link "
                 "to report it."),
    INTERRUPTED: "Interrupted (Ctrl-C).",
}

ISSUES_URL = "https://github.com/rivet-ci/rivet-ci/issues/new"
