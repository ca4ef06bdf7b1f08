"""A user's first try: a minute of real traffic, then the report, whose charts must show it.

A real broker on a data dir (``[storage] log_qos0 = true``, so that QoS 0
traffic counts), real paho clients publishing QoS 0 and 1 for one minute,
one of them reconnecting and one coming and going within a second; then the
report job on the data dir. Each time chart must have drawn its data (pixels
in colour, spread over the width) on an axis that spans the run, not years;
the page must show no ``nan``.
"""

from __future__ import annotations

import datetime as dt
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pipeline_testkit import colored_pixels

from actorbroker.app import Broker
from actorbroker.config import Config, ListenerConfig, NodeConfig, StorageConfig
from actorbroker.pipeline.report import run_report

sys.path.insert(0, str(Path(__file__).parents[1] / "integration"))

from mqtt_testkit import Client  # noqa: E402

RUN_SECONDS = 60.0  # what a first try produces: about a minute of traffic
ROUND_SECONDS = 0.5  # a round of publishes every half second


def one_minute_run(data_dir: Path) -> tuple[int, int]:
    """The traffic described in the module doc; (messages published, of which QoS 0)."""
    config = Config(listeners=(ListenerConfig(bind="127.0.0.1", port=0),),
                    node=NodeConfig(name="first-try", data_dir=str(data_dir)),
                    storage=StorageConfig(log_qos0=True))
    published = qos0 = 0
    pace = threading.Event()  # never set: its wait() paces the rounds, it synchronises nothing
    with Broker.run_in_thread(config) as broker:
        viewer = Client(broker.host, broker.port, "viewer")
        viewer.connect()
        viewer.subscribe("plant/#", 1)
        sensors = [Client(broker.host, broker.port, f"sensor-{i}") for i in range(3)]
        for sensor in sensors:
            sensor.connect()
        started = time.monotonic()
        rounds = 0
        while time.monotonic() - started < RUN_SECONDS:
            for i, sensor in enumerate(sensors):
                qos = i % 2  # sensor-0 and sensor-2 at QoS 0, sensor-1 at QoS 1
                for _ in range(i + 1):  # 1, 2 and 3 a round: lines apart on the chart
                    sensor.publish(f"plant/line{i}/temp", f"{20 + rounds % 7}.{i}".encode(),
                                   qos=qos)
                    published, qos0 = published + 1, qos0 + (qos == 0)
            rounds += 1
            if rounds == 40:  # sensor-2 loses its connection and comes back
                sensors[2].disconnect()
                sensors[2] = Client(broker.host, broker.port, "sensor-2")
                sensors[2].connect()
            if rounds == 80:  # a client that comes and goes within a second
                blip = Client(broker.host, broker.port, "blip")
                blip.connect()
                blip.disconnect()
            pace.wait(ROUND_SECONDS)
        for sensor in sensors:
            sensor.disconnect()
        viewer.disconnect()
    return published, qos0


@pytest.mark.timeout(600)
def test_the_report_of_a_one_minute_run_shows_its_traffic(spark: Any, tmp_path: Path) -> None:
    data_dir, out = tmp_path / "data", tmp_path / "report"
    published, qos0 = one_minute_run(data_dir)
    result = run_report(spark, data_dir, out)
    assert result.messages == published  # QoS 0 included: log_qos0

    clients = spark.read.parquet(str(out / "client_stats")).collect()
    assert sum(r.qos0 for r in clients) == qos0 > 0
    first = min(r.first_publish for r in clients)
    last = max(r.last_publish for r in clients)
    span = last - first
    assert dt.timedelta(seconds=RUN_SECONDS - 5) < span < dt.timedelta(seconds=RUN_SECONDS + 30)

    charts = {chart.path.name: chart for chart in result.charts}
    assert charts["messages.png"].title.startswith("Messages per 1 s")
    for name in ("messages.png", "online_clients.png"):
        low, high = charts[name].x_range
        assert low <= first and last <= high, (name, low, first, last, high)
        assert high - low <= span + dt.timedelta(seconds=20), (name, low, high)  # not years
        pixels, spread = colored_pixels(charts[name].path)
        assert pixels > 1000 and spread > 0.6, (name, pixels, spread)
    pixels, _ = colored_pixels(charts["reconnects.png"].path)
    assert pixels > 500  # sensor-2's bar

    page = result.html.read_text()
    assert not re.search(r"\bnan\b", page, re.IGNORECASE)
    assert "<td>–</td>" in page  # no offline gap yet: a dash
    for name in charts:
        assert f"charts/{name}" in page
    assert "log_qos0" not in page  # the hint shows only when no QoS 0 is in the log

