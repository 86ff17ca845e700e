"""The pure planner core: no I/O, only functions over frozen models."""
