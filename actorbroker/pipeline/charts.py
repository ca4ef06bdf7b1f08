"""Pipeline layer: the report's PNG charts and report.html, from small pandas frames. Imports pandas, matplotlib and the stdlib only.

The job hands over what the charts show, already reduced on Spark to one
row per time bucket (messages of the top topics, online/offline changes)
and the top rows of the tables; nothing here touches Spark, so the page can
be tested alone.

Time charts read well for a minute of traffic as for a month: the bucket is
chosen from the span of the records (:func:`pick_bucket`: the smallest of
:data:`BUCKETS` that gives at most :data:`MAX_BUCKETS` buckets), the x axis
runs from the first bucket to the end of the last one, and each bucket is
drawn as a step of its own width, so that even a single bucket is a visible
line instead of a point lost on an axis matplotlib stretched over years.
"""

from __future__ import annotations

import datetime as dt
import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display needed

import matplotlib.dates as mdates  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

__all__ = ["BUCKETS", "MAX_BUCKETS", "Chart", "ReportData", "bucket_name", "online_levels",
           "pick_bucket", "write_charts", "write_html"]

#: Bucket widths the time charts choose from, in seconds, smallest first.
BUCKETS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200,
           86400, 7 * 86400)
#: At most this many buckets on a time axis: enough to show a shape, few enough to read.
MAX_BUCKETS = 120
_WEEK = 7 * 86400

CHARTS = {
    "messages.png": "Messages per {bucket}, top topics",
    "online_clients.png": "Clients online (most at once in each {bucket})",
    "reconnects.png": "Reconnects per device (top 20)",
}


def pick_bucket(first: dt.datetime | None, last: dt.datetime | None) -> int:
    """The bucket width in seconds for records from ``first`` to ``last`` (see the module doc)."""
    span = (last - first).total_seconds() if first is not None and last is not None else 0.0
    for seconds in BUCKETS:
        if span / seconds <= MAX_BUCKETS:
            return seconds
    return _WEEK * math.ceil(span / _WEEK / MAX_BUCKETS)  # years: whole weeks


def bucket_name(seconds: int) -> str:
    """``10 s``, ``5 min``, ``6 h``, ``day``, ``7 days``: a bucket width as the titles say it."""
    if seconds % 86400 == 0:
        return "day" if seconds == 86400 else f"{seconds // 86400} days"
    if seconds % 3600 == 0:
        return f"{seconds // 3600} h"
    if seconds % 60 == 0:
        return f"{seconds // 60} min"
    return f"{seconds} s"


@dataclass(slots=True)
class ReportData:
    """What the page shows; every frame may be empty.

    ``span`` is the first and last record's time (naive UTC), None without
    records; ``bucket`` the width of the time charts' buckets, seconds.
    """

    title: str
    summary: Mapping[str, object]
    traffic: pd.DataFrame  # bucket_start, topic, messages (top topics only)
    online: pd.DataFrame  # bucket_start, delta (net change), rise (highest running change)
    sessions: pd.DataFrame  # client_id, reconnects, connects, disconnects, online_seconds, ...
    topics: pd.DataFrame  # topic, messages, bytes, publishers (totals, top N)
    latest: pd.DataFrame  # topic, timestamp, qos, client_id, payload
    span: tuple[dt.datetime, dt.datetime] | None = None
    bucket: int = 60
    notes: Sequence[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Chart:
    """A chart written: its file, title and, for a time chart with data, the x axis range."""

    path: Path
    title: str
    x_range: tuple[dt.datetime, dt.datetime] | None


def _buckets(data: ReportData) -> pd.DatetimeIndex | None:
    if data.span is None:
        return None
    width = f"{data.bucket}s"
    start, stop = (pd.Timestamp(t).floor(width) for t in data.span)
    return pd.date_range(start, stop, freq=width)


def online_levels(online: pd.DataFrame, index: pd.DatetimeIndex) -> pd.DataFrame:
    """Per bucket of ``index``: ``peak`` (most clients online at once in it) and ``end``
    (online at its end), from ``online`` (bucket_start, delta, rise; see ReportData).

    The level starts at 0: the clients online before the first record read
    are not known (a report with --since starts there).
    """
    per = online.set_index("bucket_start").reindex(index, fill_value=0)
    end = per["delta"].cumsum()
    level = end - per["delta"]  # at the bucket's start
    return pd.DataFrame({"peak": level + per["rise"].clip(lower=0), "end": end}, index=index)


def _time_axis(ax: plt.Axes, index: pd.DatetimeIndex, bucket: int) -> tuple[dt.datetime,
                                                                             dt.datetime]:
    """Date ticks that suit the span, the axis from the first bucket to the end of the last."""
    low = index[0].to_pydatetime()
    high = (index[-1] + pd.Timedelta(seconds=bucket)).to_pydatetime()
    locator = mdates.AutoDateLocator(minticks=4, maxticks=10)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    ax.set_xlim(low, high)
    ax.set_xlabel("time (UTC)")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(bottom=0)
    return low, high


def _steps(ax: plt.Axes, index: pd.DatetimeIndex, values: pd.Series, bucket: int,
           **style: object) -> None:
    """``values`` as steps, each as wide as its bucket (the last one closed at its end)."""
    x = list(index) + [index[-1] + pd.Timedelta(seconds=bucket)]
    y = list(values) + [values.iloc[-1]]
    ax.step(x, y, where="post", **{"linewidth": 1.6, **style})


def _empty(ax: plt.Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="grey")
    ax.set_xticks([])
    ax.set_yticks([])


def write_charts(data: ReportData, directory: Path) -> list[Chart]:
    """The three PNG charts of the report, in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    index = _buckets(data)
    titles = {name: title.format(bucket=bucket_name(data.bucket)) for name, title in CHARTS.items()}
    charts = [_messages(data, index, directory / "messages.png", titles["messages.png"]),
              _online(data, index, directory / "online_clients.png",
                      titles["online_clients.png"])]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    top = data.sessions
    if not top.empty:
        top = top[top["reconnects"] > 0].sort_values(["reconnects", "client_id"],
                                                     ascending=[False, True]).head(20)
    if top.empty:
        _empty(ax, "no reconnects" if not data.sessions.empty else "no sessions")
    else:
        ax.barh(top["client_id"].astype(str)[::-1], top["reconnects"][::-1], height=0.6)
        # Room for at least 5 bars, filled from the top: one bar stays a bar, not a block.
        ax.set_ylim(len(top) - max(len(top), 5) - 0.5, len(top) - 0.5)
        ax.set_xlabel("reconnects")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(titles["reconnects.png"])
    charts.append(Chart(_save(fig, directory / "reconnects.png"), titles["reconnects.png"], None))
    return charts


def _messages(data: ReportData, index: pd.DatetimeIndex | None, path: Path, title: str) -> Chart:
    fig, ax = plt.subplots(figsize=(10, 4.5))
    x_range = None
    if index is None or data.traffic.empty:
        _empty(ax, "no messages in the log")
    else:
        wide = data.traffic.pivot_table(index="bucket_start", columns="topic", values="messages",
                                        aggfunc="sum").reindex(index, fill_value=0).fillna(0)
        # Busiest first and widest: a topic drawn over another with the same counts (steady
        # publishers often have them) leaves the one below showing at its edges.
        for rank, topic in enumerate(wide.sum().sort_values(ascending=False).index):
            _steps(ax, index, wide[topic], data.bucket, label=str(topic),
                   linewidth=max(0.8, 3.2 - 0.6 * rank))
        x_range = _time_axis(ax, index, data.bucket)
        ax.set_ylim(top=max(1, float(wide.to_numpy().max())) * 1.12)  # the top line unclipped
        ax.set_ylabel(f"messages per {bucket_name(data.bucket)}")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small",
                  title="topic", title_fontsize="small")
    ax.set_title(title)
    return Chart(_save(fig, path), title, x_range)


def _online(data: ReportData, index: pd.DatetimeIndex | None, path: Path, title: str) -> Chart:
    fig, ax = plt.subplots(figsize=(10, 3.5))
    x_range = None
    if index is None or data.online.empty:
        _empty(ax, "no connections in the log")
    else:
        levels = online_levels(data.online, index)
        _steps(ax, index, levels["peak"], data.bucket, label="most at once")
        x = list(index) + [index[-1] + pd.Timedelta(seconds=data.bucket)]
        ax.fill_between(x, list(levels["peak"]) + [levels["peak"].iloc[-1]], step="post",
                        alpha=0.25)
        x_range = _time_axis(ax, index, data.bucket)
        ax.set_ylim(top=max(1, int(levels["peak"].max())) * 1.15)
        ax.set_ylabel("clients online")
    ax.set_title(title)
    return Chart(_save(fig, path), title, x_range)


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
    """A table cell: no value (None, NaN, NaT: e.g. no offline gap yet) is a dash, not nan."""
    if value is None or value is pd.NaT or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, (bytes, bytearray)):
        try:
            text = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            text = "0x" + bytes(value[:32]).hex()
        return text if len(text) <= 60 else text[:57] + "..."
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    if isinstance(value, float):  # seconds: a reconnect within 5 ms is 0.005, not 0.0
        return f"{value:,.1f}" if abs(value) >= 1 or value == 0 else f"{value:.3f}"
    return str(value)


def write_html(data: ReportData, path: Path, charts: Sequence[Chart] = (),
               chart_dir: str = "charts") -> Path:
    """report.html: the summary, the charts and the top rows of the tables."""
    summary = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(_cell(v))}</td></tr>"
                      for k, v in data.summary.items())
    shown = "".join(f"<h2>{html.escape(c.title)}</h2><img src='{chart_dir}/{c.path.name}' "
                    f"alt='{html.escape(c.title)}'>" for c in charts)
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
{shown}
<h2>Top topics</h2>{_table(data.topics)}
<h2>Latest value per topic</h2>{_table(data.latest)}
<h2>Sessions (most reconnects first)</h2>{_table(data.sessions)}
<p>Times are UTC. Tables in Parquet next to this page: topic_stats, client_stats,
latest_values, sessions, online_clients (docs/pipeline.md describes their columns).</p>
</body></html>
"""
    path.write_text(page, encoding="utf-8")
    return path
