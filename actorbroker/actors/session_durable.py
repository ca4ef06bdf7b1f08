"""Actors layer: the commit log half of SessionActor, as a mixin. Stdlib, supervisors, session, durable.

Kept apart from :mod:`.session` so that its hot path reads as before; the
actor calls these at a few seams (see :mod:`.sessions.journal.log` for what happens
there) when the node has a storage actor (durability fsync or os), and
:class:`~.durability.LogJournal` calls back through the small
interface below (``connection``, ``run_effects``, ``now``, ``call_later``,
``may_hibernate``, ``hibernate``).

Start: a session actor started for a client id the log knows as durable
(after a broker restart, a crash of its actor, or a hibernation) takes its
state back from the storage actor: subscriptions (from the registry, as
any restarted session), the outbound flows in flight with their packet
ids and stages, the inbound QoS 2 packet ids, its queue as log offsets,
and a Will not sent yet whose connection is gone (see :mod:`.sessions.journal.wills`).
The client's next CONNECT with Clean Session 0 resumes all of it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from actorbroker.codec import Subscription, shown
from actorbroker.durable import NEVER
from actorbroker.ports import ReadCredit
from actorbroker.session import EXPIRY_TIMER, AppMessage, Delivery, Effect, SessionCore
from supervisors import send_after, tell_if_alive

from .sessions.journal.log import LogJournal
from .messages import SessionEnded
from .node import Node
from .storage.keeper import Sleeping
from .storage.requests import Hibernated, LoadSession, SessionLoad

__all__ = ["DurableSession"]

log = logging.getLogger("actorbroker.session")


class DurableSession:
    """What SessionActor does for the commit log (see the module doc)."""

    client_id: str
    _node: Node
    _core: SessionCore
    _conn: Any
    _timers: dict[str, Any]
    _retired: bool
    _claim: int
    _restarted: bool
    _durability: LogJournal | None
    _credit: ReadCredit | None

    if TYPE_CHECKING:
        actor_ref: Any

        def _run(self, effects: list[Effect]) -> None: ...

        def _now(self) -> float: ...

        def _retire(self) -> None: ...

    def _durable_init(self, node: Node) -> None:
        settings = node.durability
        self._durability = (LogJournal(self, node, settings)
                            if settings is not None and node.refs.storage is not None else None)

    async def _durable_start(self, subscriptions: tuple[Subscription, ...]) -> bool:
        """Take back the durable state the log holds; True if there was one.

        ``subscriptions`` are the registry's (it routes by them); the log's
        serve when the registry has none.
        """
        durability = self._durability
        storage = self._node.refs.storage
        if durability is None or storage is None:
            return False
        woken = self._node.woken
        if self.client_id in woken:
            woken.discard(self.client_id)
        elif not self._restarted:
            return False  # a new client id: the log has nothing of it (no ask on the way)
        load: SessionLoad | None = await storage.ask(LoadSession(self.client_id), block=False)
        if load is None:
            return False
        core, now = self._core, self._now()
        self._run(core.restore(subscriptions or load.subscriptions, now))
        flights = []
        for flight in load.flights:
            message = flight.message or AppMessage("", b"", flight.qos)
            flights.append((flight.packet_id, Delivery(message, flight.qos, flight.retain),
                            flight.released))
        core.restore_flows(flights, load.inbound_qos2,
                           {flight.packet_id for flight in load.flights if flight.unsent})
        durability.restored(load)
        log.info("client %s: durable session loaded from the commit log (%d subscription(s), "
                 "%d in flight, %d queued)", shown(self.client_id), len(load.subscriptions),
                 len(flights), len(load.queue))
        if load.connected:
            self._run([])  # journal the end of the connection its previous actor had
        if self._restarted:
            durability.settle()
        return True

    # -- what LogJournal calls ------------------------------------------------

    @property
    def connection(self) -> Any:
        """The attached connection (None when there is none)."""
        return self._conn

    def run_effects(self, effects: list[Effect], credit: ReadCredit | None = None) -> None:
        """Carry ``effects`` out; what they route carries the read credit ``credit``."""
        outer, self._credit = self._credit, credit
        try:
            self._run(effects)
        finally:
            self._credit = outer

    def held_credit(self) -> ReadCredit | None:
        """The read credit of the effects held now, held once more until they go on."""
        credit = self._credit
        if credit is not None:
            credit.hold(1)
        return credit

    def now(self) -> float:
        return self._now()

    def call_later(self, delay: float, message: Any) -> None:
        """Tell this actor ``message`` in ``delay`` seconds."""
        loop: Any = getattr(self, "actor_loop")  # noqa: B009 (LoopActor's, typed there)
        send_after(loop, self.actor_ref, delay, message)

    def end_now(self) -> None:
        """The session ended while effects wait for the log: drop its name and subscriptions now."""
        self._node.registry().tell(SessionEnded(self.client_id))
        self._node.owners.release(self.client_id, self._claim)
        self._retired = True
        self._node.names.unregister_session(self.client_id, self.actor_ref)

    def may_hibernate(self) -> bool:
        """No timer of the core pending but the expiry one (e.g. a delayed Will), so the actor
        can go. (A shared group's messages for a hibernated member go into its queue in the
        log: ``SharedRouted``, actors/topics/shared_groups.py.)"""
        return not self._retired and all(name == EXPIRY_TIMER for name in self._timers)

    def hibernate(self) -> None:
        """Hand the name to a placeholder (see actors/storage/keeper.py), tell the keeper, stop."""
        sleeping: Any = Sleeping(self.client_id, self._node)
        self._node.names.register_session(self.client_id, sleeping)
        log.debug("client %s: offline session hibernated", shown(self.client_id))
        self._retire()
        expiry = self._core.session_expiry
        keeper = self._node.refs.keeper
        durability = self._durability
        will, due = (None, 0.0) if durability is None else durability.wills.hand_over()
        # No keeper (or a dead one): the broker is stopping, and the next start finds the
        # session in the log.
        tell_if_alive(keeper, Hibernated(self.client_id,
                                         NEVER if expiry is None else min(NEVER, int(expiry)),
                                         will, due))
