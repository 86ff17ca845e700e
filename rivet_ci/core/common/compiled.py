"""Rule tables run as one function made from the rules' own expressions.

A rule table (the score rules, the preflight warnings) keeps each rule as one object: its
condition and values as Python expressions over a few named inputs, beside its text. Looping
over the table and calling each rule's condition costs a Python call per rule per export (~1,500
instructions each); the planner instead runs one function written from the table — the same
expressions, in the table's order. The expressions are rivet-ci's own source text, written in
the rule modules, never input: nothing a config or a pull request holds reaches them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

# What a rule expression may call besides the names its module gives it.
BUILTINS: Mapping[str, Any] = {"bool": bool, "int": int, "max": max, "min": min,
                               "round": round}


def compiled_function(name: str, parameters: str, body: list[str],
                      names: Mapping[str, Any]) -> Callable[..., Any]:
    """The function `def name(parameters): body` (each line of `body` indented once), seeing
    `names` and `BUILTINS` as its globals."""
    source = "\n".join([f"def {name}({parameters}):", *(f"    {line}" for line in body)])
    namespace: dict[str, Any] = {"__builtins__": dict(BUILTINS), **names}
    exec(compile(source, f"<rule table {name}>", "exec"), namespace)  # the module's own text
    function: Callable[..., Any] = namespace[name]
    return function
