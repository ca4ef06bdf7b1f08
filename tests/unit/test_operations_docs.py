"""docs/operations.md and the Grafana example follow the metrics the code exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

from actorbroker.ops import docs
from actorbroker.ops.prometheus import METRICS

ROOT = Path(__file__).resolve().parents[2]


def test_the_metrics_table_is_generated_from_the_code() -> None:
    assert not docs.stale(), "run: python -m actorbroker.ops.docs --write"


def test_a_new_metric_makes_the_page_stale(tmp_path: Path, monkeypatch) -> None:
    page = tmp_path / "operations.md"
    page.write_text(docs.PAGE.read_text())
    assert not docs.stale(page)
    monkeypatch.setattr(docs, "render_markdown", lambda: "| `actorbroker_new` |\n")
    assert docs.stale(page)


def test_the_grafana_dashboard_queries_only_metrics_that_exist() -> None:
    dashboard = json.loads((ROOT / "docs" / "grafana-actorbroker.json").read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    used = {m for e in exprs for m in re.findall(r"actorbroker_[a-z_]+", e)}
    exported = {m.name for m in METRICS} | {
        f"{m.name}_{suffix}" for m in METRICS if m.kind == "histogram"
        for suffix in ("bucket", "sum", "count")}
    assert used and used <= exported, used - exported
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])
