"""SessionWills: the WillCleared a session journals, and the Will a session actor takes back from the log.

No actor and no loop: the effects are the ones a SessionCore returns, the
records the ones the session's journal would store.
"""

from __future__ import annotations

import time

from actorbroker.actors.sessions.journal.wills import SessionWills
from actorbroker.codec import Connect, Will
from actorbroker.persistence.records import WillCleared, WillSet
from actorbroker.session import AppMessage, EndSession, PublishWill, StartTimer
from actorbroker.session.effects import EXPIRY_TIMER, WILL_TIMER

TS = 1_700_000_000_000_000
LOADED = WillSet("c", "will/c", b"old", 1, True, b"", 30, timestamp_us=TS)


def connect(*, clean: bool = False, will: bool = True) -> Connect:
    return Connect("MQTT", 5, "c", clean, 60, will=Will("will/c", b"new") if will else None)


def published(effects: list[object]) -> list[bytes]:
    return [e.message.payload for e in effects if isinstance(e, PublishWill)]


def test_a_will_discarded_at_the_end_of_its_connection_is_journaled_cleared() -> None:
    wills = SessionWills()
    wills.attached(connect())
    assert wills.cleared([], "c", TS) is None, "no connection ended"
    wills.detached()
    assert wills.cleared([StartTimer(EXPIRY_TIMER, 60)], "c", TS) == WillCleared(
        "c", timestamp_us=TS), "the client sent DISCONNECT: no Will, no Will timer"
    assert wills.cleared([], "c", TS) is None, "once"


def test_a_will_published_or_delayed_or_absent_is_not_cleared() -> None:
    message = AppMessage("will/c", b"new", 0)
    for effects in ([PublishWill(message)], [StartTimer(WILL_TIMER, 5)]):
        wills = SessionWills()
        wills.attached(connect())
        wills.detached()
        assert wills.cleared(effects, "c", TS) is None, effects
    wills = SessionWills()
    wills.attached(connect(will=False))
    wills.detached()
    assert wills.cleared([], "c", TS) is None


def test_a_loaded_will_is_cancelled_by_a_connection_resuming_the_session_in_time() -> None:
    wills = SessionWills()
    assert wills.restored(LOADED, time.time() + 30) is not None
    wills.attached(connect(clean=False))
    assert published(wills.inject([], "c", 0.0)) == [] and wills.loaded is None


def test_a_loaded_will_goes_out_at_a_clean_start_an_overdue_resume_or_the_sessions_end() -> None:
    for setup, event in (("clean start", connect(clean=True)), ("overdue", connect(clean=False)),
                         ("session end", None)):
        wills = SessionWills()
        wills.restored(LOADED, time.time() + (30 if setup != "overdue" else -1))
        effects: list[object] = [EndSession("expired")] if event is None else []
        if event is not None:
            wills.attached(event)
        out = wills.inject(list(effects), "c", 0.0)  # type: ignore[arg-type]
        assert published(out) == [b"old"] and out[1:] == effects, setup
        assert isinstance(out[0], PublishWill) and out[0].message.retain and (
            out[0].message.publisher == "c"), "the Will as the client set it"
        assert published(wills.inject([], "c", 0.0)) == [], f"{setup}: once"


def test_a_loaded_will_falls_due_on_its_tick_or_goes_to_the_keeper() -> None:
    wills = SessionWills()
    wills.restored(LOADED, time.time() + 60)
    assert not wills.tick() and published(wills.inject([], "c", 0.0)) == []
    assert wills.hand_over()[0] == LOADED and wills.loaded is None
    wills.restored(LOADED, time.time() - 1)
    assert wills.tick() and published(wills.inject([], "c", 0.0)) == [b"old"]
