"""The user-facing error raised by the shell; handled in one place (`rivet_ci.cli.main`)."""


class UsageError(Exception):
    """Wrong arguments or setup: printed without a traceback, exit code 2.

    The message should say what to do next.
    """
