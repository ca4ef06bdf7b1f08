"""The report's charts and page from pandas frames alone (no Spark): the bucket follows the span,
a minute of data and a month of data both draw something across the axis, no ``nan`` in the page."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pandas as pd
import pytest
from pipeline_testkit import colored_pixels

from actorbroker.pipeline.charts import (
    MAX_BUCKETS,
    ReportData,
    online_levels,
    pick_bucket,
    write_charts,
    write_html,
)

T0 = dt.datetime(2025, 3, 1, 12, 0, 0)


@pytest.mark.parametrize(("span", "bucket"), [
    (dt.timedelta(0), 1), (dt.timedelta(seconds=59.5), 1), (dt.timedelta(minutes=5), 5),
    (dt.timedelta(hours=1), 30), (dt.timedelta(days=1), 900), (dt.timedelta(days=30), 21600),
    (dt.timedelta(days=365), 7 * 86400), (dt.timedelta(days=3650), 5 * 7 * 86400),
])
def test_the_bucket_follows_the_span(span: dt.timedelta, bucket: int) -> None:
    assert pick_bucket(T0, T0 + span) == bucket
    assert span.total_seconds() / bucket <= MAX_BUCKETS
    assert pick_bucket(None, None) == 1


def test_online_levels_count_clients_that_came_and_went_within_a_bucket() -> None:
    index = pd.date_range(T0, periods=4, freq="10s")
    # bucket 0: two connect, one leaves (rise 2, net +1); bucket 2: the other leaves.
    online = pd.DataFrame({"bucket_start": [index[0], index[2]], "delta": [1, -1],
                           "rise": [2, -1]})
    levels = online_levels(online, index)
    assert list(levels["peak"]) == [2, 1, 1, 0]
    assert list(levels["end"]) == [1, 1, 0, 0]


def _data(span: dt.timedelta, rows: int) -> ReportData:
    """Messages on two topics spread over ``span`` and clients coming and going."""
    first, last = T0, T0 + span
    bucket = pick_bucket(first, last)
    times = [first + span * i / (rows - 1) for i in range(rows)]
    floor = [pd.Timestamp(t).floor(f"{bucket}s") for t in times]
    traffic = pd.DataFrame({"bucket_start": floor * 2, "topic": ["a/1"] * rows + ["b/2"] * rows,
                            "messages": [3] * rows + [1] * rows})
    online = pd.DataFrame({"bucket_start": [floor[0], floor[rows // 2], floor[-1]],
                           "delta": [2, 0, -2], "rise": [2, 1, 0]}).groupby(
        "bucket_start", as_index=False).agg({"delta": "sum", "rise": "max"})
    sessions = pd.DataFrame({"client_id": ["dev-1", "dev-2"], "reconnects": [2, 0],
                             "connects": [3, 1], "disconnects": [3, 1],
                             "online_seconds": [12.5, 3.0],
                             "longest_offline_seconds": [4.0, float("nan")],
                             "online": [False, False]})
    return ReportData("report", {"records read": "10", "first record (UTC)": first}, traffic,
                      online, sessions, pd.DataFrame(), pd.DataFrame(), (first, last), bucket)


@pytest.mark.parametrize("span", [dt.timedelta(seconds=58), dt.timedelta(days=30)],
                         ids=["one minute", "one month"])
def test_time_charts_draw_across_the_span(tmp_path: Path, span: dt.timedelta) -> None:
    data = _data(span, 40)
    charts = {c.path.name: c for c in write_charts(data, tmp_path)}
    for name in ("messages.png", "online_clients.png"):
        low, high = charts[name].x_range
        assert low <= T0 and T0 + span <= high  # all the data is on the axis ...
        assert high - low <= span + dt.timedelta(seconds=2 * data.bucket)  # ... and no more
        pixels, spread = colored_pixels(charts[name].path)
        assert pixels > 1000 and spread > 0.6, (name, pixels, spread)
    pixels, _ = colored_pixels(charts["reconnects.png"].path)
    assert pixels > 1000
    assert charts["messages.png"].title.startswith("Messages per 1 s" if span.days == 0
                                                   else "Messages per 6 h")


def test_a_single_second_of_data_is_still_drawn(tmp_path: Path) -> None:
    data = _data(dt.timedelta(milliseconds=300), 3)
    charts = {c.path.name: c for c in write_charts(data, tmp_path)}
    low, high = charts["messages.png"].x_range
    assert high - low == dt.timedelta(seconds=1)
    pixels, spread = colored_pixels(charts["messages.png"].path)
    assert pixels > 500 and spread > 0.5


def test_no_records_give_captioned_empty_charts_and_a_page(tmp_path: Path) -> None:
    empty = pd.DataFrame()
    data = ReportData("report", {"first record (UTC)": None}, empty, empty, empty, empty, empty)
    charts = write_charts(data, tmp_path / "charts")
    assert [c.x_range for c in charts] == [None, None, None]
    assert all(colored_pixels(c.path)[0] == 0 for c in charts)
    page = write_html(data, tmp_path / "report.html", charts).read_text()
    assert "nan" not in page and "None" not in page


def test_the_page_shows_no_nan(tmp_path: Path) -> None:
    data = _data(dt.timedelta(seconds=30), 5)
    charts = write_charts(data, tmp_path / "charts")
    page = write_html(data, tmp_path / "report.html", charts).read_text()
    assert "nan" not in page.lower().replace("span", "")
    assert "<td>–</td>" in page  # dev-2 never went offline: no longest gap
    assert "2025-03-01 12:00:00.000" in page
    for chart in charts:
        assert f"charts/{chart.path.name}" in page
