"""Clients never publish into $SYS (otherwise a retained ``$SYS/broker/evil`` would be
accepted and survive a restart, and a forged ``$SYS/broker/clients/connected`` would reach
``$SYS/#`` subscribers). MQTT 5 gets PUBACK/PUBREC 0x87; MQTT 3 is acknowledged and dropped."""

from __future__ import annotations

from pathlib import Path

from mqtt_testkit import broker_config
from security_kit import login, publishes_until

from actorbroker.app import Broker
from actorbroker.codec import PubAck, Publish, PubRec, ReasonCode, SubAck, Subscribe, Subscription


def test_a_forged_sys_message_never_reaches_sys_subscribers(tmp_path: Path) -> None:
    config = broker_config(tmp_path, interval=1.0)  # [sys] interval: the genuine ones flow
    with Broker.run_in_thread(config) as broker:
        watcher, _ = login(broker.host, broker.port, "watcher")
        watcher.send(Subscribe(1, (Subscription("$SYS/#", 0), Subscription("marker", 1))))
        assert watcher.recv() == SubAck(1, (0, 1))
        v3, _ = login(broker.host, broker.port, "v3")
        v5, _ = login(broker.host, broker.port, "v5", level=5)
        topic = "$SYS/broker/clients/connected"
        v3.send(Publish(topic, b"forged", 0), Publish(topic, b"forged", 1, packet_id=1),
                Publish("$SYS", b"forged", 1, packet_id=2))
        assert (v3.recv(), v3.recv()) == (PubAck(1), PubAck(2))
        v5.send(Publish(topic, b"forged", 1, packet_id=1),
                Publish(topic, b"forged", 2, packet_id=2))
        assert v5.recv() == PubAck(1, ReasonCode.NOT_AUTHORIZED)
        assert v5.recv() == PubRec(2, ReasonCode.NOT_AUTHORIZED)
        v3.send(Publish("marker", b"m", 1, packet_id=3))
        assert v3.recv() == PubAck(3)
        got = publishes_until(watcher, "marker")
        # The broker's own count comes after: the topic flows, the forgery never came.
        got += publishes_until(watcher, topic)
        assert b"forged" not in [p.payload for p in got]
        assert got[-1].payload.isdigit()
        assert broker.metrics()["dropped"] == {}
        for raw in (watcher, v3, v5):
            raw.close()


def test_a_retained_sys_message_is_not_kept_nor_brought_back(tmp_path: Path) -> None:
    config = broker_config(tmp_path, interval=0.0)  # no $SYS of the broker's own
    for run in (1, 2):
        with Broker.run_in_thread(config) as broker:
            client, _ = login(broker.host, broker.port, f"c{run}")
            if run == 1:
                client.send(Publish("$SYS/broker/evil", b"evil", 1, retain=True, packet_id=1),
                            Publish("known", b"kept", 1, retain=True, packet_id=2))
                assert (client.recv(), client.recv()) == (PubAck(1), PubAck(2))
            client.send(Subscribe(1, (Subscription("$SYS/#", 0), Subscription("known", 0))))
            assert client.recv() == SubAck(1, (0, 0))
            retained = publishes_until(client, "known")
            assert [(p.topic, p.payload) for p in retained] == [("known", b"kept")], run
            client.close()
