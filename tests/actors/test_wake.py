"""Waking a hibernated session: the name table's Asleep and Waking entries, StartMode, the keeper.

A real tree with a commit log (fsync) on the test's loop, fake connections
(actors_testkit). A durable MQTT 5 session hibernates when its client goes
(an ``Asleep`` entry takes its name); its next CONNECT makes the entry
``Waking`` and starts one actor with ``StartMode.WAKE`` (its supervisor's
restarts are ``RESTART``). The keeper neither
expires nor ends a Waking session; a failed start puts the Asleep entry back,
and the keeper expires it as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from actors_testkit import FakeConnection, Harness, eventually

from actorbroker.actors import NodeSettings
from actorbroker.actors.messages import Deliver
from actorbroker.actors.names import Asleep, Waking
from actorbroker.actors.session import SessionActor
from actorbroker.actors.sessions.start import StartMode
from actorbroker.actors.storage.keeper import TICK_SECONDS
from actorbroker.app import Broker
from actorbroker.codec import ConnAck, Disconnect, Properties, ReasonCode
from actorbroker.config import Config, NodeConfig, StorageConfig
from actorbroker.session import AppMessage

Run = Callable[..., Any]


class LoggedHarness(Harness):
    """The testkit's harness with a commit log in ``data``, so that sessions hibernate."""

    def __init__(self, data: Path) -> None:
        config = Config(listeners=(), node=NodeConfig(data_dir=str(data)),
                        storage=StorageConfig(durability="fsync"))
        self.broker = Broker(config, settings=NodeSettings.from_config(config, sys_interval=0.0))


def _v5(h: Harness, client_id: str, expiry: int) -> FakeConnection:
    return h.attach(client_id, clean=False, level=5,
                    properties=Properties(session_expiry_interval=expiry))


async def _hibernated(h: Harness, client_id: str, expiry: int) -> Asleep:
    """Connect ``client_id`` (a durable MQTT 5 session), disconnect: its Asleep entry."""
    conn = _v5(h, client_id, expiry)
    await conn.expect(ConnAck)
    conn.feed(Disconnect())
    names = h.node.names
    asleep: Asleep = await eventually(
        lambda: type(entry := names.sessions.get(client_id)) is Asleep and entry, timeout=10.0)
    return asleep


@pytest.fixture
def starts(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, StartMode]]:
    """Each session actor start, with its StartMode (the real start, spied on)."""
    seen: list[tuple[str, StartMode]] = []
    real = SessionActor.start

    def spy(client_id: str, *args: Any, **kwargs: Any) -> Any:
        seen.append((client_id, kwargs["start"]))
        return real(client_id, *args, **kwargs)

    monkeypatch.setattr(SessionActor, "start", spy)
    return seen


def test_an_attach_to_a_hibernated_session_starts_one_actor_with_wake(
        run: Run, tmp_path: Path, starts: list[tuple[str, StartMode]]) -> None:
    async def main() -> None:
        async with LoggedHarness(tmp_path) as h:
            asleep = await _hibernated(h, "sleeper", 300)
            names = h.node.names
            assert names.is_asleep("sleeper") and names.asleep("sleeper") is asleep
            first = _v5(h, "sleeper", 300)
            entry = names.sessions.get("sleeper")  # the gateway's dispatch ran: no loop turn yet
            assert type(entry) is Waking and entry.asleep is asleep
            assert names.is_asleep("sleeper") and names.asleep("sleeper") is asleep
            second = _v5(h, "sleeper", 300)  # joins the start in flight
            [connack] = await second.expect(ConnAck)
            assert connack.reason_code == 0 and connack.session_present, connack
            await eventually(lambda: first.closed)  # taken over by the second
            ref = names.sessions.get("sleeper")
            assert ref is not None and ref.is_alive() and not names.is_asleep("sleeper")
            assert starts == [("sleeper", StartMode.FRESH), ("sleeper", StartMode.WAKE)]
    run(main())


def test_a_woken_actor_that_crashes_is_restarted_with_restart(
        run: Run, tmp_path: Path, starts: list[tuple[str, StartMode]]) -> None:
    async def main() -> None:
        async with LoggedHarness(tmp_path) as h:
            await _hibernated(h, "sleeper", 300)
            conn = _v5(h, "sleeper", 300)
            await conn.expect(ConnAck)
            names = h.node.names
            ref = names.sessions["sleeper"]
            ref.tell("not a message")  # a bug: the actor crashes
            await eventually(lambda: names.sessions.get("sleeper") not in (None, ref),
                             timeout=10.0)
            assert starts == [("sleeper", StartMode.FRESH), ("sleeper", StartMode.WAKE),
                              ("sleeper", StartMode.RESTART)]
            back = _v5(h, "sleeper", 300)
            [connack] = await back.expect(ConnAck)
            assert connack.reason_code == 0 and connack.session_present, connack
    run(main())


def test_a_deliver_to_a_waking_session_is_counted_not_raised(run: Run, tmp_path: Path) -> None:
    async def main() -> None:
        async with LoggedHarness(tmp_path) as h:
            await _hibernated(h, "sleeper", 300)
            metrics, names = h.node.metrics, h.node.names
            before = metrics.dropped.get("offline_qos0", 0)
            conn = _v5(h, "sleeper", 300)
            entry = names.sessions.get("sleeper")
            assert type(entry) is Waking
            # As a topic actor does: told, never raising; QoS 0 for an offline session is lost.
            entry.tell(Deliver((AppMessage("t", b"qos0", 0), AppMessage("t", b"q1", 1, log_offset=7)),
                               1, 0))
            assert metrics.dropped.get("offline_qos0", 0) == before + 1
            assert "session_unavailable" not in metrics.dropped  # the logged QoS 1 one is queued
            [connack] = await conn.expect(ConnAck)
            assert connack.session_present
    run(main())


def test_the_keeper_does_not_expire_a_waking_session(run: Run, tmp_path: Path) -> None:
    """The expiry falls due while the session wakes: deferred; once Asleep again, it expires."""
    async def main() -> None:
        async with LoggedHarness(tmp_path) as h:
            asleep = await _hibernated(h, "sleeper", 1)
            names, loop = h.node.names, asyncio.get_running_loop()
            # What the gateway's dispatch does before it starts the actor (the start itself is
            # left out, so that the session stays Waking past its deadline).
            names.register_session("sleeper", Waking(asleep))  # type: ignore[arg-type]
            due = loop.time() + 1.0 + 2 * TICK_SECONDS  # past the expiry and a keeper tick
            await eventually(lambda: loop.time() > due, timeout=10.0)
            entry = names.sessions.get("sleeper")
            assert type(entry) is Waking and entry.asleep is asleep, "expired while waking"
            names.register_session("sleeper", asleep)  # type: ignore[arg-type]  # start failed
            await eventually(lambda: "sleeper" not in names.sessions, timeout=10.0)
            conn = _v5(h, "sleeper", 300)
            [connack] = await conn.expect(ConnAck)
            assert not connack.session_present, "the expired session came back"
    run(main())


def test_a_failed_wake_leaves_the_session_asleep_and_expirable(
        run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        async with LoggedHarness(tmp_path) as h:
            asleep = await _hibernated(h, "sleeper", 2)
            names = h.node.names
            real = SessionActor.start

            def failing(client_id: str, *args: Any, **kwargs: Any) -> Any:
                if kwargs["start"] is StartMode.WAKE:
                    raise RuntimeError("test: the session actor cannot start")
                return real(client_id, *args, **kwargs)

            monkeypatch.setattr(SessionActor, "start", failing)
            conn = _v5(h, "sleeper", 2)
            [connack] = await conn.expect(ConnAck)
            assert connack.reason_code == ReasonCode.SERVER_UNAVAILABLE, connack
            assert names.sessions.get("sleeper") is asleep, "the same Asleep entry is back"
            monkeypatch.setattr(SessionActor, "start", real)
            await eventually(lambda: "sleeper" not in names.sessions, timeout=10.0)  # expired
            again = _v5(h, "sleeper", 300)
            [connack] = await again.expect(ConnAck)
            assert connack.reason_code == 0 and not connack.session_present, connack
    run(main())
