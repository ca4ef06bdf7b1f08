"""Actors layer: the commit log half of SessionActor, as a mixin. Stdlib, supervisors, session, durable.

The actor takes its journal once (:func:`~.sessions.journal.journal_for`:
a :class:`~.sessions.journal.log.LogJournal` when the node has a storage
actor, durability fsync or os, else the MemoryJournal) and binds its effect
paths for it (:meth:`DurableSession._journal_init`), so that a node without
storage never checks for one per effect. The LogJournal calls back through
the small interface below (``connection``, ``run_effects``, ``now``,
``call_later``, ``end_now``, ``may_hibernate``, ``hibernate``). What its
held output lets go comes back as ``Release`` values that the actor
carries out itself (:meth:`DurableSession._carry_releases`): the journal
never carries anything out through the actor, so nothing it releases
passes through it again.

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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from actorbroker.codec import Subscription, shown
from actorbroker.durable import NEVER
from actorbroker.persistence.records import WillSet
from actorbroker.ports import ReadCredit
from actorbroker.session import EXPIRY_TIMER, AppMessage, Delivery, Effect, SessionCore
from supervisors import send_after, tell_if_alive

from .messages import Deliver, SessionEnded
from .names import Asleep, Singleton
from .node import Node
from .sessions.journal.hold import Release
from .sessions.journal.interface import Journal, journal_for
from .sessions.journal.memory import MemoryJournal
from .sessions.output import Output
from .sessions.retransmit import Retransmitter
from .sessions.start import StartMode
from .storage.requests import Hibernated, SessionLoad

__all__ = ["DurableSession"]

log = logging.getLogger("actorbroker.session")


class DurableSession:
    """What SessionActor does for the commit log (see the module doc)."""

    client_id: str
    _node: Node
    _core: SessionCore
    connection: Any
    _timers: dict[str, Any]
    _retired: bool
    _claim: int
    _start_mode: StartMode
    _journal: Journal
    _credit: ReadCredit | None
    #: Carry out the core's effects, through the journal if it may hold them: bound once
    #: to one of the two below (:meth:`_journal_init`).
    _run: Callable[[list[Effect]], None]
    _deliver: Callable[[Deliver], None]
    _output: Output
    _retransmitter: Retransmitter

    if TYPE_CHECKING:
        actor_ref: Any

        def _now(self) -> float: ...

        def _retire(self) -> None: ...

        def stop(self) -> None: ...

        def carry_out(self, effects: list[Effect]) -> None: ...

    def _journal_init(self, node: Node) -> None:
        """Take the journal (:func:`journal_for`) and bind the effect path for it, once: with
        a MemoryJournal the effects go straight on, no call and no check per effect (the
        :class:`~.sessions.output.Output` binds the QoS 0 fast path's packets and each
        Deliver the same way: the ``routes`` benchmark makes 6.3 Delivers of each publish)."""
        journal = self._journal = journal_for(self, node)
        if isinstance(journal, MemoryJournal):
            self._run = self.carry_out
        else:
            self._run = self._run_journaled

    def _journal_close(self) -> None:
        """The actor stopped: the journal and the components let go of it, and so do the
        effect paths bound at construction (bound methods, each a reference cycle through
        the actor), so that reference counting frees an ended session at once."""
        self._journal.close()
        self._output.close()
        self._retransmitter.close()
        for name in ("_run", "_deliver"):
            self.__dict__.pop(name, None)

    def _run_journaled(self, effects: list[Effect]) -> None:
        """Carry out the core's effects, in order, once the journal let them through."""
        effects = self._journal.intercept(effects, self.connection, self._credit)
        if effects:
            self.carry_out(effects)

    def _carry_releases(self, releases: list[Release]) -> None:
        """Carry out what the journal let go, in order, past it: each release's effects with
        the read credit they held (taken back once they went), its callbacks, the stop."""
        for release in releases:
            credit = release.credit
            if release.effects:
                outer, self._credit = self._credit, credit
                try:
                    self.carry_out(release.effects)
                finally:
                    self._credit = outer
            if credit is not None:
                credit.take()
            for callback in release.then:
                callback()
            if release.then_stop:
                self.stop()

    async def _durable_start(self, subscriptions: tuple[Subscription, ...]) -> bool:
        """Take back the durable state the log holds; True if there was one.

        ``subscriptions`` are the registry's (it routes by them); the log's
        serve when the registry has none.
        """
        journal = self._journal
        load: SessionLoad | None = await journal.load(self._start_mode)
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
        journal.restored(load)
        log.info("client %s: durable session loaded from the commit log (%d subscription(s), "
                 "%d in flight, %d queued)", shown(self.client_id), len(load.subscriptions),
                 len(flights), len(load.queue))
        if load.connected:
            self._run([])  # journal the end of the connection its previous actor had
        if self._start_mode is StartMode.RESTART:
            journal.settle()
        return True

    # -- what LogJournal calls ------------------------------------------------

    def run_effects(self, effects: list[Effect], credit: ReadCredit | None = None) -> None:
        """Carry ``effects`` out; what they route carries the read credit ``credit``."""
        outer, self._credit = self._credit, credit
        try:
            self._run(effects)
        finally:
            self._credit = outer

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

    def hibernate(self, will: WillSet | None, due: float) -> None:
        """Hand the name to an Asleep record (see actors/storage/keeper.py), tell the keeper (with
        ``will``, a Will taken back from the log, due at ``due``), stop."""
        asleep: Any = Asleep(self.client_id, self._node.metrics)
        self._node.names.register_session(self.client_id, asleep)
        log.debug("client %s: offline session hibernated", shown(self.client_id))
        self._retire()
        expiry = self._core.session_expiry
        keeper = self._node.names.whereis(Singleton.KEEPER)
        # No keeper (or a dead one): the broker is stopping, and the next start finds the
        # session in the log.
        tell_if_alive(keeper, Hibernated(self.client_id,
                                         NEVER if expiry is None else min(NEVER, int(expiry)),
                                         will, due))
