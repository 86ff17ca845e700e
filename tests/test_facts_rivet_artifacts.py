"""`--facts DIR`: facts from rivet's own plan artifacts, written by the real rivet binary
(rivet-cli 0.32.2) against the seeded PostgreSQL, in both shapes (docs/facts.md, "Facts from
rivet's plan artifacts")."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import yaml
from support.real_rivet import run_rivet

from rivet_ci.cli import run
from rivet_ci.commands.context import Context

EXPORTS: list[dict[str, Any]] = [
    {"name": "orders", "table": "public.orders", "mode": "chunked", "chunk_column": "id",
     "chunk_size": 50_000, "chunk_checkpoint": True},
    {"name": "customers", "table": "public.customers", "mode": "full"},
]


def _cli(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(argv, Context(stdout=out, stderr=err, environ={}, cwd=cwd))
    return code, out.getvalue(), err.getvalue()


def _plan(out: str) -> dict[str, dict[str, Any]]:
    return {e["export_name"]: e for c in json.loads(out)["configs"] for e in c["exports"]}


@pytest.mark.postgres
def test_a_directory_of_rivet_plan_artifacts_is_a_facts_source(pg_db: str,
                                                                tmp_path: Path) -> None:
    config = {"source": {"type": "postgres", "url_env": "SHOP_URL"},
              "exports": [{**e, "format": "parquet", "destination": {"type": "local",
                                                                    "path": "./out"}}
                          for e in EXPORTS]}
    (tmp_path / "rivet.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    url = sa.make_url(pg_db).set(drivername="postgresql", password=None)
    work = tmp_path / "rivet-run"
    work.mkdir()
    (work / "rivet.yaml").write_text((tmp_path / "rivet.yaml").read_text())
    done = run_rivet(["--no-notify", "plan", "-c", "rivet.yaml", "--format", "json", "-o",
                      "out.json"], workdir=work, network=True,
                     env={"SHOP_URL": url.render_as_string(hide_password=False)})
    assert done.returncode == 0, done.stderr
    one_per_export = tmp_path / "artifacts"
    one_per_export.mkdir()
    for name in ("orders", "customers"):
        (one_per_export / f"out.{name}.json").write_text((work / f"out.{name}.json").read_text())
    rivet_scores = {e["name"]: json.loads((work / f"out.{e['name']}.json").read_text())
                    ["prioritization"]["export_recommendation"] for e in EXPORTS}

    code, out, err = _cli(["plan", "rivet.yaml", "--facts", "artifacts", "--format", "json"],
                          tmp_path)
    assert code == 0, err
    plan = _plan(out)
    orders = plan["orders"]
    artifact = json.loads((one_per_export / "out.orders.json").read_text())
    assert orders["computed"]["row_estimate"] == artifact["computed"]["row_estimate"]
    assert orders["computed"]["chunk_count"] == artifact["computed"]["chunk_count"] == 6
    assert orders["diagnostics"]["verdict"] == artifact["diagnostics"]["verdict"]
    assert orders["diagnostics"]["warnings"] == artifact["diagnostics"]["warnings"]
    assert any("rivet 0.32.2 plan artifact artifacts/out.orders.json" in n
               for n in orders["diagnostics"]["notes"])
    assert orders["diagnostics"]["facts"]["origin"] == "export"
    for name in ("orders", "customers"):  # rivet's own scores, classes and waves
        mine = plan[name]["prioritization"]["export_recommendation"]
        theirs = rivet_scores[name]
        assert (mine["priority_score"], mine["cost_class"], mine["recommended_wave"]) == (
            theirs["priority_score"], theirs["cost_class"], theirs["recommended_wave"]), name

    # The multi-export shape `show` reads: one array of artifacts.
    both = tmp_path / "multi"
    both.mkdir()
    (both / "plan.json").write_text(json.dumps(
        [json.loads((one_per_export / f"out.{n}.json").read_text())
         for n in ("orders", "customers")]))
    code, again, err = _cli(["plan", "rivet.yaml", "--facts", "multi", "--format", "json"],
                            tmp_path)
    assert code == 0, err
    assert {n: e["prioritization"] for n, e in _plan(again).items()} == {
        n: e["prioritization"] for n, e in plan.items()}

    # Something else in the directory is reported, not guessed at (exit 2, the plan written).
    (both / "notes.json").write_text('{"hello": 1}')
    code, _, err = _cli(["plan", "rivet.yaml", "--facts", "multi", "--format", "json"],
                        tmp_path)
    assert code == 2 and "multi/notes.json" in err and "not a rivet plan artifact" in err
