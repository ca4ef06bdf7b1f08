"""Helpers of the durability tests: brokers on one data directory, started and stopped in turn, and raw MQTT 5 bits."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from actorbroker.actors import NodeSettings
from actorbroker.actors.storage.requests import StorageStatus
from actorbroker.app import Broker, RunningBroker
from actorbroker.codec import ConnAck, Connect, Properties
from actorbroker.config import Config, ListenerConfig, NodeConfig, RetryConfig, StorageConfig

sys.path.insert(0, str(Path(__file__).parents[1]))

from mqtt_testkit import RawClient  # noqa: E402


def durable_config(data: Path, *, retry: dict[str, Any] | None = None,
                   limits: dict[str, Any] | None = None, **storage: Any) -> Config:
    """One listener on 127.0.0.1 port 0, the log in ``data``; ``storage`` sets [storage] options,
    ``retry`` and ``limits`` those of [retry] and [limits]."""
    config = Config(listeners=(ListenerConfig(port=0),),
                    node=NodeConfig(name="durable", data_dir=str(data)),
                    storage=StorageConfig(**storage))
    if retry:
        config = dataclasses.replace(config, retry=RetryConfig(**retry))
    if limits:
        config = dataclasses.replace(config, limits=dataclasses.replace(config.limits, **limits))
    return config


@contextmanager
def running(config: Config, **settings: Any) -> Iterator[RunningBroker]:
    """A broker on ``config`` for the ``with`` block (stopped cleanly after it)."""
    node = NodeSettings.from_config(config, **{"sys_interval": 0.0, **settings})
    with Broker.run_in_thread(config, settings=node) as broker:
        yield broker


def status(broker: RunningBroker) -> dict[str, Any]:
    """The storage actor's figures (an ask from this thread: it is not the loop's)."""
    storage = broker.node.names.storage()
    assert storage is not None, "no storage actor: durability memory?"
    figures: dict[str, Any] = storage.ask(StorageStatus(), timeout=10)
    return figures


def raw(broker: RunningBroker, level: int = 4) -> RawClient:
    return RawClient(broker.host, broker.port, level)


def connect5(client: RawClient, client_id: str, *, clean: bool = True,
             expiry: int | None = None) -> ConnAck:
    """CONNECT at MQTT 5 with a Session Expiry Interval (None: none, the session ends with it)."""
    props = Properties(session_expiry_interval=expiry) if expiry is not None else Properties()
    client.send(Connect("MQTT", 5, client_id, clean, 60, properties=props))
    packet = client.recv()
    assert isinstance(packet, ConnAck), packet
    return packet
