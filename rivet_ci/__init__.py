"""rivet-ci: the CI gate for rivet extraction configs."""

__version__ = "0.1.0"
