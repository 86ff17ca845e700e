"""rivet-ci: the CI gate for rivet extraction configs."""

__version__ = "0.1.0"
# The rivet-cli release whose config schema, rules and planner rivet-ci models
# (docs/compatibility.md).
RIVET_VERSION = "0.32.2"
