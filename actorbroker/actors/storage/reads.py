"""Actors layer: what the storage actor answers when asked to read: messages by offset, a session to resume, the routing table, its status. Stdlib, pykka, persistence, durable, session.

Functions of the open log and the folded state, run on the storage actor's
thread (:mod:`.actor`), after it has folded every record it wrote.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from actorbroker.durable import DurableState, OffsetQueue, will_due_us
from actorbroker.durable.journal import message_of, subscription_of
from actorbroker.errors import StorageError
from actorbroker.persistence import CommitLog
from actorbroker.persistence.records import WillSet
from actorbroker.session import AppMessage
from supervisors import Teller, tell_if_alive

from .recovery import Housekeeper
from .requests import OfflineSession, PendingWill, RestoredFlight, RoutingLoad, SessionLoad

__all__ = ["load_offline", "load_routing", "load_session", "load_wills", "message_at",
           "status_figures", "tell"]

log = logging.getLogger("actorbroker.storage")


def tell(ref: Teller | None, message: object) -> None:
    """Tell ``ref`` (if any); a dead one is fine (the records are stored all the same)."""
    tell_if_alive(ref, message)


def message_at(current: CommitLog | None, offset: int) -> AppMessage | None:
    """The message the ``PublishAccepted`` at ``offset`` holds (None, logged, if there is none)."""
    if current is None:
        return None
    try:
        record = current.read_at(offset)
    except (ValueError, StorageError) as exc:
        log.error("storage: no message at offset %d: %s", offset, exc)
        return None
    return message_of(record, offset, now=time.monotonic(), wall=time.time())


def load_session(current: CommitLog | None, state: DurableState, client_id: str,
                 keeper: Teller | None) -> SessionLoad | None:
    """What a resumed durable session starts from; None if the log has no such session."""
    image = state.sessions.get(client_id)
    if image is None:
        # Only a restarted actor asks for a session the log does not have as durable: a
        # clean session whose connection went with the old actor; its Will is due.
        loose = state.loose_wills.get(client_id)
        if loose is not None:
            tell(keeper, PendingWill(client_id, loose, 0.0, False))
        return None
    flights = []
    for packet_id, flight in (image.inflight or {}).items():
        message = message_at(current, flight.offset)
        flights.append(RestoredFlight(packet_id, message, flight.qos, flight.retain,
                                      flight.released, flight.unsent))
    return SessionLoad(
        client_id, image.level, image.expiry, image.connected,
        tuple(subscription_of(f, options) for f, (options, _) in image.subs.items()),
        image.will, tuple(sorted(image.inbound or ())), tuple(flights),
        OffsetQueue() if image.queue is None else image.queue.copy(), state.position,
        0.0 if image.will is None else will_due_us(  # connected: its connection ends now
            image.will, int(time.time() * 1e6) if image.connected else image.since_us,
            image.expiry) / 1e6,
        tuple((f, sub_id) for f, (_, sub_id) in image.subs.items() if sub_id),
    )


def load_routing(current: CommitLog | None, state: DurableState) -> RoutingLoad:
    """Every durable subscription and the retained messages, for the registry's start."""
    subscriptions = tuple(
        (image.client_id, image.level, tuple((subscription_of(f, options), sub_id)
                                             for f, (options, sub_id) in image.subs.items()))
        for image in state.sessions.values() if image.subs)
    retained = [message_at(current, offset) for offset in state.retained.values()]
    return RoutingLoad(subscriptions, tuple(m for m in retained if m is not None))


def load_offline(state: DurableState) -> tuple[OfflineSession, ...]:
    """The durable sessions with no connection (the keeper expires them)."""
    return tuple(OfflineSession(i.client_id, i.expiry, i.since_us / 1e6, i.owner)
                 for i in state.offline())


def load_wills(state: DurableState, cut: dict[str, WillSet]) -> tuple[PendingWill, ...]:
    """Wills still to publish: of durable sessions, and the loose ones whose connections the
    actor's start cut (``cut``: a Will set since belongs to a live connection)."""
    sessions = state.sessions
    return tuple(PendingWill(cid, will, due / 1e6, cid in sessions)
                 for cid, will, due in state.wills()
                 if cid in sessions or cut.get(cid) is will)


def status_figures(current: CommitLog | None, state: DurableState, house: Housekeeper | None,
                   mode: str,
                   failure: StorageError | None, batches: int, records: int) -> dict[str, Any]:
    """The storage actor's figures for ``StorageStatus`` ($SYS, tests, the CLI)."""
    figures: dict[str, Any] = {
        "mode": mode, "batches": batches, "records": records,
        "failure": None if failure is None else str(failure),
        "sessions": len(state.sessions), "queued": state.queued_messages(),
        "retained": len(state.retained), "checkpoint": state.checkpoint,
        "needed_from": state.needed_from(),
    }
    if current is not None:
        figures.update(next_offset=current.next_offset, first_offset=current.first_offset,
                       size_bytes=current.size_bytes, segments=len(current.segments()))
    if house is not None:
        figures.update(house.figures())
    return figures
