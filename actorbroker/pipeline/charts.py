"""Pipeline layer: the report's PNG charts and report.html, from small pandas frames. Imports pandas, matplotlib and the stdlib only.

The job hands over the published tables, already reduced on Spark to what a
chart shows (the top topics' minutes, the online count per minute, the
sessions); nothing here touches Spark, so the page can be tested alone.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display needed

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

__all__ = ["ReportData", "write_charts", "write_html"]

CHARTS = {
    "messages_per_minute.png": "Messages per minute, top topics",
    "online_clients.png": "Online clients over time",
    "reconnects.png": "Reconnects per device (top 20)",
}


@dataclass(slots=True)
class ReportData:
    """What the page shows; every frame may be empty."""

    title: str
    summary: Mapping[str, object]
    top_minutes: pd.DataFrame  # window_start, topic, messages (top topics only)
    online: pd.DataFrame  # minute, online
    sessions: pd.DataFrame  # client_id, reconnects, connects, disconnects, online_seconds, ...
    topics: pd.DataFrame  # topic, messages, bytes, publishers (totals, top N)
    latest: pd.DataFrame  # topic, timestamp, qos, client_id, payload
    notes: Sequence[str] = field(default_factory=list)


def _empty(ax: plt.Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="grey")
    ax.set_xticks([])
    ax.set_yticks([])


def write_charts(data: ReportData, directory: Path) -> list[Path]:
    """The three PNG charts of the report, in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    fig, ax = plt.subplots(figsize=(10, 4.5))
    if data.top_minutes.empty:
        _empty(ax, "no messages")
    else:
        wide = data.top_minutes.pivot_table(index="window_start", columns="topic",
                                            values="messages", aggfunc="sum").fillna(0)
        for topic in wide.columns:
            ax.plot(wide.index, wide[topic], label=str(topic), linewidth=1.2)
        ax.set_ylabel("messages / minute")
        ax.legend(loc="upper left", fontsize="small")
        fig.autofmt_xdate()
    ax.set_title(CHARTS["messages_per_minute.png"])
    written.append(_save(fig, directory / "messages_per_minute.png"))

    fig, ax = plt.subplots(figsize=(10, 3.5))
    if data.online.empty:
        _empty(ax, "no session events")
    else:
        ax.step(data.online["minute"], data.online["online"], where="post")
        ax.set_ylabel("clients online")
        ax.set_ylim(bottom=0)
        fig.autofmt_xdate()
    ax.set_title(CHARTS["online_clients.png"])
    written.append(_save(fig, directory / "online_clients.png"))

    fig, ax = plt.subplots(figsize=(10, 4.5))
    top = data.sessions[data.sessions["reconnects"] > 0] if not data.sessions.empty else data.sessions
    top = top.sort_values(["reconnects", "client_id"], ascending=[False, True]).head(20)
    if top.empty:
        _empty(ax, "no reconnects" if not data.sessions.empty else "no sessions")
    else:
        ax.barh(top["client_id"].astype(str)[::-1], top["reconnects"][::-1])
        ax.set_xlabel("reconnects")
    ax.set_title(CHARTS["reconnects.png"])
    written.append(_save(fig, directory / "reconnects.png"))
    return written


def _save(fig: plt.Figure, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=96)
    plt.close(fig)
    return path


def _table(frame: pd.DataFrame, limit: int = 20) -> str:
    if frame.empty:
        return "<p class='none'>none</p>"
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = []
    for record in frame.head(limit).itertuples(index=False):
        cells = "".join(f"<td>{html.escape(_cell(v))}</td>" for v in record)
        rows.append(f"<tr>{cells}</tr>")
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _cell(value: object) -> str:
    if isinstance(value, (bytes, bytearray)):
        try:
            text = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            text = "0x" + bytes(value[:32]).hex()
        return text if len(text) <= 60 else text[:57] + "..."
    if isinstance(value, float):
        return f"{value:,.1f}"
    return str(value)


def write_html(data: ReportData, path: Path, chart_dir: str = "charts") -> Path:
    """report.html: the summary, the charts and the top rows of the tables."""
    summary = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(_cell(v))}</td></tr>"
                      for k, v in data.summary.items())
    charts = "".join(f"<h2>{html.escape(title)}</h2><img src='{chart_dir}/{name}' alt='{title}'>"
                     for name, title in CHARTS.items())
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in data.notes)
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(data.title)}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; max-width: 1100px; color: #222; }}
table {{ border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }}
th, td {{ border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }}
img {{ max-width: 100%; border: 1px solid #eee; }} .none {{ color: grey; }}
</style></head><body>
<h1>{html.escape(data.title)}</h1>
<table>{summary}</table>
{f"<ul>{notes}</ul>" if notes else ""}
{charts}
<h2>Top topics</h2>{_table(data.topics)}
<h2>Latest value per topic</h2>{_table(data.latest)}
<h2>Sessions (most reconnects first)</h2>{_table(data.sessions)}
<p>Tables in Parquet next to this page: topic_stats, client_stats, latest_values, sessions,
online_clients (docs/pipeline.md describes their columns).</p>
</body></html>
"""
    path.write_text(page, encoding="utf-8")
    return path
