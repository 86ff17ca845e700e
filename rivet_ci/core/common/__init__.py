"""Shared by every step of the core:

limits, patterns, problems, text helpers, the YAML line map, the fast model builder.
"""
