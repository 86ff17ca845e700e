"""Adapters at the edge: live preflight, state history, git and GitHub."""
