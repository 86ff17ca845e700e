"""Subcommands of `rivet-ci`; each module has `register(subparsers)` and `run(args, ctx)`."""
