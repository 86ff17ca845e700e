"""Redaction sees every value before any escaping (issue 30, item 4; docs/security.md).

A value the workflow masks (`add-mask`) that a pull request also writes — as a source group,
in a waiver's reason — reaches every output through a different escaper: the comment's Markdown
text (`&lt;`, `@` + a zero-width space), its code spans and table cells (`\\|`), the Mermaid
picture's entity codes (`#64;`), plan.json's JSON, the annotations' `%25`. The action's
outputs are scanned for the value in the spelling each of those escapers itself writes (the
shipped functions, not a list of forms): none may be there, and the mask is where the value
was.
"""

from __future__ import annotations

import html
import json
import re

import orjson
from support.action import PR, REPO, Workspace, example_configs, run_action
from support.fake_github import FakeGitHub
from support.pr import parse_outputs

from rivet_ci.core.comment.picture import label_text
from rivet_ci.github_action.annotations import _escape_property, escape_data
from rivet_ci.output.redaction import MASK
from rivet_ci.output.render import cell_code, code, md_text

# Every character one of the escapers below changes: `@` `<` `>` `&` `|` `%` `:`, a space, a
# quote.
SECRET = 'p@ss word%<x>|y&z"q:1'


def spellings(value: str) -> dict[str, str]:
    """`value` as each output's own escaper writes it."""
    return {
        "raw": value,
        "markdown text": md_text(value),
        "code span": str(code(value)).strip("`").strip(),
        "table cell": str(cell_code(value)).strip("`").strip(),
        "html entities": html.escape(value),
        "mermaid label": label_text(value),
        "json": json.dumps(value)[1:-1],
        "orjson": orjson.dumps(value).decode()[1:-1],
        "annotation": escape_data(value),
        "annotation property": _escape_property(value),
    }


def test_every_escaped_form_of_a_masked_value_is_masked(gh: FakeGitHub,
                                                         ws: Workspace) -> None:
    forms = spellings(SECRET)
    assert len(set(forms.values())) >= 8  # the escapers really write it differently
    replica_a, order_items, _ = example_configs()
    head_a = (replica_a + order_items).replace("source_group: replica_a",
                                               f"source_group: '{SECRET}'")
    head_a = head_a.replace("  - name: order_items",
                            f"  - name: order_items  # rivet-ci: allow new-isolation -- {SECRET}")
    head = ws.repo.commit("order_items", {"rivet/replica_a.yaml": head_a})
    gh.add_pull(REPO, PR, head_sha=head)

    result, outputs_file = run_action(gh, ws, head, fail_on="new-isolation",
                                      waiver_in_pr="allow", add_mask=SECRET)

    assert result.code in (0, 1), result.stderr
    outputs = parse_outputs(outputs_file.read_text(encoding="utf-8"))
    (comment,) = gh.comments(REPO, PR)
    texts = {
        "posted comment": comment["body"],
        "comment file": (ws.path / outputs["comment-file"]).read_text(encoding="utf-8"),
        "plan.json": (ws.path / "plan.json").read_text(encoding="utf-8"),
        "job summary": (ws.runner_temp / "summary.md").read_text(encoding="utf-8"),
        "annotations and log": result.stdout + result.stderr,
    }
    for where, text in texts.items():
        for form, spelled in forms.items():
            assert spelled not in text, f"{where}: the value as {form} ({spelled!r})"
    body = comment["body"]
    mermaid = re.search(r"```mermaid\n(.*?)\n```", body, re.DOTALL)
    assert mermaid is not None and label_text(MASK) in mermaid.group(1)  # in the picture
    assert f"🔒 runs alone on {cell_code(MASK)}" in body  # a table cell
    assert f"“{md_text(MASK)}”" in body  # the waiver's reason, as Markdown text
    assert f'"source_group":"{MASK}"' in texts["plan.json"]
    errors = [line for line in result.stdout.splitlines() if line.startswith("::error ")]
    assert errors and all(MASK in line for line in errors)  # on 'the group'
