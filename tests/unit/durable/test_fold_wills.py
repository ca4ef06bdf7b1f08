"""DurableState: which Wills the log still owes (pending and loose ones), and shared subscriptions.

A restarted broker publishes what :meth:`DurableState.wills` lists: the
Wills of connections that are gone and whose Will was neither sent
(``WillSent``) nor discarded by a DISCONNECT (``WillCleared``). Records are
folded as in test_fold.py (``Log``).
"""

from __future__ import annotations

from fold_kit import TS, Log, connected, disconnected, publish, subscribed

from actorbroker.durable import NEVER, DurableState, restate
from actorbroker.persistence.records import (
    CheckpointCompleted,
    SessionExpired,
    SessionQueued,
    Unsubscribed,
    WillCleared,
    WillSent,
    WillSet,
)

S = 1_000_000  # a second, in microseconds


def will(cid: str, delay: int = 0, payload: bytes = b"bye") -> WillSet:
    return WillSet(cid, f"will/{cid}", payload, 1, False, b"", delay, timestamp_us=TS)


def owed(state: DurableState) -> dict[str, tuple[bytes, int]]:
    return {cid: (w.payload, due) for cid, w, due in state.wills()}


def test_a_clean_sessions_will_is_loose_until_sent_cleared_or_replaced() -> None:
    log = Log()
    log.add(connected("c", clean=True, expiry=0), will("c"))
    assert "c" not in log.state.sessions and owed(log.state) == {"c": (b"bye", 0)}, (
        "a clean session connected at a crash owes its Will at once")
    log.add(disconnected("c", expiry=0))
    assert owed(log.state) == {"c": (b"bye", 0)}, "its WillSent follows when it is sent"
    log.add(WillSent("c", "will/c", timestamp_us=TS))
    assert owed(log.state) == {}
    log.add(connected("c", clean=True, expiry=0), will("c", payload=b"2"))
    log.add(disconnected("c", expiry=0), WillCleared("c", timestamp_us=TS))
    assert owed(log.state) == {}, "DISCONNECT discarded it"
    log.add(connected("c", clean=True, expiry=0), will("c", payload=b"3"),
            connected("c", clean=True, expiry=0))
    assert owed(log.state) == {}, "a new connection brings its own Will (or none)"


def test_a_durable_sessions_will_is_owed_once_its_connection_is_gone() -> None:
    log = Log()
    log.add(connected("d", level=5, expiry=3600), will("d", delay=30))
    assert owed(log.state) == {}, "connected: its Will is its connection's business"
    log.add(disconnected("d", expiry=3600, ts=TS + 5 * S))
    assert owed(log.state) == {"d": (b"bye", TS + 35 * S)}, "due after its Will Delay Interval"
    log.add(connected("d", level=5, expiry=3600))
    assert owed(log.state) == {} and log.state.sessions["d"].will is None, (
        "a connection resuming the session in time cancels it [MQTT-3.1.3-9]")


def test_the_session_expiry_bounds_the_will_delay_and_mqtt3_wills_are_due_at_once() -> None:
    log = Log()
    log.add(connected("short", level=5, expiry=10), will("short", delay=60),
            disconnected("short", expiry=10, ts=TS),
            connected("m3", expiry=NEVER), will("m3"), disconnected("m3", ts=TS + S),
            connected("never", level=5, expiry=NEVER), will("never", delay=7),
            disconnected("never", ts=TS))
    assert owed(log.state) == {"short": (b"bye", TS + 10 * S), "m3": (b"bye", TS + S),
                               "never": (b"bye", TS + 7 * S)}


def test_a_will_whose_session_ends_unsent_becomes_loose() -> None:
    log = Log()
    log.add(connected("zero", level=5, expiry=60), will("zero"),
            disconnected("zero", expiry=0),  # MQTT 5: expiry set to 0 at DISCONNECT time
            connected("exp", level=5, expiry=60), will("exp", delay=600),
            disconnected("exp", expiry=60), SessionExpired("exp", timestamp_us=TS))
    assert log.state.sessions == {}
    assert owed(log.state) == {"zero": (b"bye", 0), "exp": (b"bye", 0)}
    log.add(WillSent("zero", "will/zero", timestamp_us=TS),
            WillSent("exp", "will/exp", timestamp_us=TS))
    assert owed(log.state) == {}


def test_a_checkpoint_restates_loose_wills() -> None:
    log = Log()
    log.add(connected("c", clean=True, expiry=0), will("c"),
            connected("d", expiry=NEVER), will("d"), disconnected("d", ts=TS))
    restated = list(restate(log.state, 1, log.read, TS))
    again = Log()
    [start] = again.add(restated[0])
    again.add(*restated[1:], CheckpointCompleted(1, start, timestamp_us=TS))
    assert owed(again.state) == owed(log.state) == {"c": (b"bye", 0), "d": (b"bye", TS)}


def test_shared_subscriptions_are_kept_but_not_derived_and_keep_their_queued_messages() -> None:
    log = Log()
    log.add(connected("m", level=5), subscribed("m", "$share/g/s/#"), subscribed("m", "x"),
            connected("old", level=4), subscribed("old", "$share/g/s/#"))
    [shared, plain] = log.add(publish("s/t"), publish("x"))
    image = log.state.sessions["m"]
    assert set(image.subs) == {"$share/g/s/#", "x"}
    assert [e.offset for e in image.queue or ()] == [plain], (
        "the topic actor picks the group's member: the log cannot derive it")
    [dollar] = log.add(publish("$share/g/s/t"))
    assert [e.offset for e in log.state.sessions["old"].queue or ()] == [dollar], (
        "at MQTT 3 '$share/...' is a plain filter, as the registry has it")
    log.add(SessionQueued("m", shared, 1, False, (), "s/t", 1, timestamp_us=TS))  # queue_asleep
    log.add(Unsubscribed("m", "x", timestamp_us=TS))
    assert [e.offset for e in image.queue or ()] == [shared], (
        "unsubscribing another filter keeps what the shared subscription queued")
