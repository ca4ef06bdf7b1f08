"""The supervision tree as actors/tree.py declares it: shape and order from the settings; singletons found by name."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from actors_testkit import Harness, eventually

from actorbroker.actors import NodeSettings
from actorbroker.actors.connect.owners import Owners
from actorbroker.actors.names import Singleton
from actorbroker.actors.tree import build_node, core_children, root_children
from actorbroker.app import Broker
from actorbroker.codec import Publish, Subscribe, SubAck, Subscription
from actorbroker.config import Config, ListenerConfig, NodeConfig, RetryConfig, StorageConfig
from supervisors import ChildKind, ChildSpec, crash

Run = Callable[..., Any]

MEMORY = Config(listeners=(), storage=StorageConfig(durability="memory"))


def _durable(data: Path) -> Config:
    return Config(listeners=(ListenerConfig(port=0),), node=NodeConfig(data_dir=str(data)),
                  storage=StorageConfig(durability="fsync"))


def _node(config: Config) -> Any:
    return build_node(config, NodeSettings.from_config(config), stats=_NoStats(), owners=Owners())


class _NoStats:
    def snapshot(self) -> dict[str, int]:
        return {}


def _ids(specs: list[ChildSpec]) -> list[Any]:
    return [spec.id for spec in specs]


def test_memory_mode_has_no_storage_and_no_keeper() -> None:
    node = _node(MEMORY)
    assert node.durability is None
    assert _ids(core_children(MEMORY, node)) == ["registry", "topics", "sessions", "sys"]
    # Without a data directory, "fsync" keeps nothing either (an embedded broker).
    embedded = dataclasses.replace(MEMORY, storage=StorageConfig(durability="fsync"))
    assert _ids(core_children(embedded, _node(embedded))) == ["registry", "topics", "sessions",
                                                              "sys"]


def test_with_a_log_storage_starts_first_and_the_keeper_after_the_sessions(tmp_path: Path
                                                                           ) -> None:
    config = _durable(tmp_path)
    node = _node(config)
    assert node.durability is not None
    children = core_children(config, node)
    assert _ids(children) == ["storage", "registry", "topics", "sessions", "keeper", "sys"]
    kinds = {spec.id: spec.kind for spec in children}
    assert kinds["topics"] is kinds["sessions"] is ChildKind.SUPERVISOR
    assert kinds["storage"] is kinds["registry"] is ChildKind.WORKER
    # Declaring the tree starts nothing and names nothing.
    assert node.names.whereis(Singleton.STORAGE) is None


def test_listeners_come_last_under_the_root(tmp_path: Path) -> None:
    config = _durable(tmp_path)
    listener = ChildSpec(id="listener-0", start=lambda: None)  # type: ignore[arg-type, return-value]
    assert _ids(root_children(config, _node(config), [listener])) == ["core", "listeners"]


def test_in_session_resends_follow_retry() -> None:
    assert _node(MEMORY).retransmit is not None
    off = dataclasses.replace(MEMORY, retry=RetryConfig(mqtt3_in_session=False))
    assert _node(off).retransmit is None


def test_the_node_is_frozen() -> None:
    node = _node(MEMORY)
    try:
        node.durability = None  # type: ignore[misc]
    except dataclasses.FrozenInstanceError:
        return
    raise AssertionError("a Node field was rewritten")


def test_a_restarted_registry_is_found_by_name(run: Run) -> None:
    async def main() -> None:
        async with Harness() as h:
            names = h.node.names
            old = names.registry()
            old_sessions = names.whereis(Singleton.SESSIONS)
            crash(old, "test: the registry crashes")
            new = await eventually(
                lambda: names.registry() is not old and names.registry().is_alive()
                and names.registry())
            assert not old.is_alive()
            # rest_for_one: the session supervisor restarts after it, and is renamed too.
            await eventually(lambda: (ref := names.whereis(Singleton.SESSIONS)) is not old_sessions
                             and ref is not None and ref.is_alive())
            # A client after the restart routes through the new registry.
            sub = await h.connect("sub")
            sub.feed(Subscribe(1, (Subscription("t/1", 1),)))
            await sub.expect(SubAck)
            pub = await h.connect("pub")
            pub.feed(Publish("t/1", b"after the restart", 1, packet_id=7))
            [message] = await sub.expect(Publish)
            assert message.payload == b"after the restart"
            assert await new.proxy().subscription_count == 1
    run(main())


def test_a_restarted_storage_actor_is_found_by_name(run: Run, tmp_path: Path) -> None:
    async def main() -> None:
        config = dataclasses.replace(_durable(tmp_path), listeners=())
        broker = Broker(config, settings=NodeSettings.from_config(config, sys_interval=0.0))
        await broker.start()
        try:
            assert broker.node is not None
            names = broker.node.names
            singletons = (Singleton.STORAGE, Singleton.REGISTRY, Singleton.KEEPER)
            before = [names.whereis(name) for name in singletons]
            assert all(ref is not None and ref.is_alive() for ref in before)
            crash(names.whereis(Singleton.STORAGE), "test: the storage actor crashes")
            # rest_for_one: everything after the storage actor restarts, each under its name.
            await eventually(lambda: all(
                (ref := names.whereis(name)) is not old and ref is not None and ref.is_alive()
                for name, old in zip(singletons, before)), timeout=15.0)
            assert not any(ref.is_alive() for ref in before if ref is not None)
        finally:
            await broker.stop()
    run(main())
