"""rivet-ci-plan/1 carries rivet's `resolved_plan` (the keys rivet copies verbatim into its plan,
rivet-config.md §5.2), identical to the one `--format rivet-json` writes."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path
from typing import Any

from rivet_ci.cli import run
from rivet_ci.commands.context import Context
from rivet_ci.exit_codes import OK

REPO = Path(__file__).resolve().parent.parent
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

CONFIG = """\
source:
  type: postgres
  url: postgresql://reader:hunter2hunter2@db.internal:5432/shop
  environment: production
  tuning: {batch_size: 5000, throttle_ms: 10}
exports:
  - name: orders
    table: public.orders
    mode: incremental
    cursor_column: updated_at
    format: parquet
    compression_profile: compact
    max_file_size: 512MB
    tuning: {batch_size: 2000}
    destination: {type: local, path: "out/{export}/{date}/{run_id}"}
  - name: customers
    query: SELECT id, name FROM public.customers
    format: parquet
    destination: {type: s3, bucket: raw, prefix: "{table}/"}
"""


def plan_json(cwd: Path, fmt: str) -> Any:
    out, err = StringIO(), StringIO()
    ctx = Context(stdout=out, stderr=err, environ={}, cwd=cwd, now=lambda: NOW)
    code = run(["plan", "shop.yaml", "--format", fmt], ctx)
    assert code == OK, err.getvalue()
    return json.loads(out.getvalue())


def test_plan_json_carries_rivets_resolved_plan(tmp_path: Path) -> None:
    (tmp_path / "shop.yaml").write_text(CONFIG)
    ours = plan_json(tmp_path, "json")
    exports = {e["export_name"]: e for e in ours["configs"][0]["exports"]}
    orders = exports["orders"]["resolved_plan"]
    # Export tuning over source tuning over the production profile.
    assert orders["tuning"]["batch_size"] == 2000
    assert orders["tuning"]["throttle_ms"] == 10
    assert orders["format"] == "parquet"
    assert (orders["compression"], orders["compression_level"]) == ("zstd", 9)
    assert orders["max_file_size_bytes"] == 512 * 1024 * 1024
    # {export} and {date} (the document's date) expanded; {run_id} kept for the run.
    assert orders["destination"]["path"] == "out/orders/2026-11-29/{run_id}"
    assert exports["customers"]["resolved_plan"]["destination"]["prefix"] == "customers/"
    assert exports["customers"]["resolved_plan"]["base_query"] == (
        "SELECT id, name FROM public.customers")
    # The source block is there, with the password gone.
    assert orders["source"]["type"] == "postgres"
    assert "hunter2hunter2" not in json.dumps(ours)


def test_plan_json_and_rivet_json_resolve_every_export_the_same(tmp_path: Path) -> None:
    (tmp_path / "shop.yaml").write_text(CONFIG)
    ours = plan_json(tmp_path, "json")
    theirs = plan_json(tmp_path, "rivet-json")
    artifacts = theirs if isinstance(theirs, list) else [theirs]
    rivet_resolved = {a["export_name"]: a["resolved_plan"] for a in artifacts}
    ours_resolved = {e["export_name"]: e["resolved_plan"]
                     for c in ours["configs"] for e in c["exports"]}
    assert ours_resolved == rivet_resolved
    assert set(ours_resolved) == {"orders", "customers"}
