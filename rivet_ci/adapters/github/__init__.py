"""GitHub: the REST transport, its models, the sticky comment, the event payload."""
