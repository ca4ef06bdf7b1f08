"""Records written by a real broker run: publish through the broker with real clients
(Debian's mosquitto_pub), stop the broker, run the report job on its data dir."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from pipeline_testkit import rows_by

from actorbroker.app import Broker
from actorbroker.config import Config, ListenerConfig, NodeConfig
from actorbroker.pipeline.report import run_report


def publish(port: int, client_id: str, topic: str, *payloads: str, qos: int = 1,
            version: str = "mqttv311") -> None:
    """One connection of mosquitto_pub sending ``payloads`` (one per line), acknowledged."""
    done = subprocess.run(
        ["mosquitto_pub", "-h", "127.0.0.1", "-p", str(port), "-i", client_id, "-V", version,
         "-q", str(qos), "-t", topic, "-l"],
        input="".join(p + "\n" for p in payloads), capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr


@pytest.mark.timeout(300)
def test_report_on_records_written_by_a_real_broker(spark: Any, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    config = Config(listeners=(ListenerConfig(port=0),),
                    node=NodeConfig(name="pipeline-test", data_dir=str(data_dir)))
    with Broker.run_in_thread(config) as broker:
        publish(broker.port, "sensor-1", "plant/line1/temp", "20.1", "20.2", "20.3")
        publish(broker.port, "sensor-2", "plant/line2/temp", "30", qos=2, version="mqttv5")
        publish(broker.port, "sensor-1", "plant/line1/temp", "20.4")
    out = tmp_path / "report"
    result = run_report(spark, data_dir, out)
    assert result.messages == 5

    def table(name: str) -> dict[object, Any]:
        key = {"client_stats": "client_id", "latest_values": "topic", "sessions": "client_id"}
        return rows_by(spark.read.parquet(str(out / name)).collect(), key[name])

    clients = table("client_stats")
    assert {c: (r.messages, r.bytes, r.qos1, r.qos2) for c, r in clients.items()} == {
        "sensor-1": (4, 16, 4, 0), "sensor-2": (1, 2, 0, 1)}
    latest = table("latest_values")
    assert {t: (bytes(r.payload), r.client_id, r.qos) for t, r in latest.items()} == {
        "plant/line1/temp": (b"20.4", "sensor-1", 1), "plant/line2/temp": (b"30", "sensor-2", 2)}
    sessions = table("sessions")
    assert {c: (r.connects, r.reconnects, r.disconnects, r.online)
            for c, r in sessions.items()} == {
        "sensor-1": (2, 1, 2, False), "sensor-2": (1, 0, 1, False)}
    assert dict(sessions["sensor-1"].disconnects_by_reason) == {"client_disconnect": 2}
    assert sessions["sensor-1"].online_seconds > 0
    topics = spark.read.parquet(str(out / "topic_stats")).groupBy("topic").sum("messages").collect()
    assert {r[0]: r[1] for r in topics} == {"plant/line1/temp": 4, "plant/line2/temp": 1}
