"""Actors layer: SessionActor, one per client id, outliving its connections. Stdlib, pykka, supervisors, session, codec.

A thin shell around :class:`~actorbroker.session.SessionCore`: each message
becomes one core call, and the core's effects are carried out here
(:meth:`SessionActor._run`). The connection is used through the
transport's ``Connection`` interface only (``send``, ``close``,
``batch_done``, ``congested``); this module never imports the transport.

Hot path, per read of the client's socket: one ``Inbound`` -> one
``handle_all`` -> at most one ``tell`` per topic published to (messages of
one read to the same topic travel as one batch) -> one ``conn.send`` with
every PUBACK/PUBREC/... of the read -> one ``batch_done``. Per batch a topic
delivers: one ``Deliver`` -> one ``conn.send`` (per 64 messages for big
batches; live QoS 0 takes the core's fast path without effects, see
:mod:`.sessions.output`). No ask, no task, no timer per packet (the
transport enforces the keepalive).

Slow subscribers: when the connection reports ``congested`` the core holds
its output (every delivery waits in the queue); ``Drained`` releases it 64
at a time. Publishers are held back at the queue's high-water mark, and
only a stuck subscriber drops (:mod:`.backpressure`).

Publishing: a batch goes straight to the topic actor found in the name
table, or through the registry, never reordered per topic ([MQTT-4.6.0-6]):
see :mod:`.publish_route`.

A QoS 1 PUBACK / QoS 2 PUBREC (``Route.ack``) is sent after its message was
handed on (the "accepted" step); :mod:`.sessions.journal` holds it until the
commit log has the record.

Life: started by the gateway (``StartMode.FRESH``, or ``WAKE`` for a
hibernated session) or restarted by its supervisor after a crash
(``RESTART``: :mod:`.sessions.start`); ``on_start`` registers the name and takes back the subscriptions
(and durable state) of a persistent session. Connections come and go
(:mod:`.session_conn`). When the session ends (clean session disconnected,
expiry) the actor *retires*: it drops its name and stops. MQTT 5 messages
and effects are handled by :class:`~.session5.Mqtt5Session`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from actorbroker.codec import Packet, ReasonCode, shown
from actorbroker.ports import ConnectionLost, Drained, Inbound, ReadCredit
from actorbroker.session import (
    AppMessage,
    HandBackShared,
    Reauthenticate,
    SetKeepAlive,
    CancelTimer,
    Close,
    Dropped,
    Effect,
    EndSession,
    PublishWill,
    RequestSubscribe,
    RequestUnsubscribe,
    RevokeSubscriptions,
    Route,
    Send,
    SessionCore,
    SessionState,
    StartTimer,
)
from supervisors import LoopActor, tell_if_alive

from .admin import DiscardSession
from .backpressure import HoldExpired, PublisherHolds
from .connect.enhanced_auth import Reauthentication
from .storage.requests import RetryJournal
from .faults import CrashForTest, crash_for_test
from .messages import (
    AddSubscriptions,
    Attach,
    Reauthorize,
    Deliver,
    DeliverMatched,
    DeliverShared,
    RemoveSubscriptions,
    Routed,
    SessionEnded,
    SessionStarted,
    SubscriptionsAdded,
    SubscriptionsRemoved,
    Timer,
)
from .node import Node
from .publish_route import PublishRouter
from .session5 import Mqtt5Session
from .session_conn import ConnectionLifecycle, about, peer
from .session_durable import DurableSession
from .sessions.output import Output
from .sessions.retransmit import Retransmit, Retransmitter
from .sessions.start import StartMode
from .storage.requests import Durable, Fetched, NotDurable

__all__ = ["SessionActor"]

log = logging.getLogger("actorbroker.session")



class SessionActor(ConnectionLifecycle, Mqtt5Session, DurableSession, LoopActor):
    """The session of one client id (see the module doc); a
    :class:`~.sessions.host.SessionHost` to its output and retransmission."""

    def __init__(self, client_id: str, node: Node, *, redispatch: Callable[[Attach], None],
                 start: StartMode = StartMode.FRESH) -> None:
        super().__init__()
        self.client_id = client_id
        self._node = node
        self._redispatch = redispatch  # the gateway's, for Attaches that reach a retiring actor
        self._names = node.names
        self._metrics = node.metrics
        self._core = SessionCore(client_id, node.settings.session)
        #: The attached connection (None: none attached).
        self.connection: Any = None
        self._conn_id = 0
        #: The reason code of the Close this actor carried out on the attached connection
        #: (None: it closed none): the cause its SessionDisconnected journals.
        self._close_code: int | None = None
        self._timers: dict[str, Any] = {}
        self._router = PublishRouter(node, self.actor_ref)
        self._forward: dict[int, Any] = {}  # conn id -> port of a connection handed back
        self._retired = False
        self._start_mode = start  # the gateway's FRESH or WAKE, or its supervisor's RESTART
        #: The epoch of this session's current subscriptions (see actors.messages: stale
        #: Delivers are ignored).
        self.epoch = node.next_epoch()
        self._reauth: Reauthentication | None = None  # MQTT 5 re-authentication in progress
        self._clock: Callable[[], float] = self.actor_loop.time  # the loop's clock, bound
        #: The read credit of the read whose effects are carried out now (None: no read's).
        self._credit: ReadCredit | None = None
        self._journal_init(node)  # journal, held acks, resumed queue (session_durable.py)
        # MQTT 3.x resends while connected, and what goes out to the client.
        self._retransmitter = Retransmitter(self, self._core, node.retransmit)
        self._output = Output(self, self._core, self._journal, self._metrics, self._retransmitter,
                              self._run, self._clock)
        #: Take a Deliver: the Output's, bound once (with or without the journal).
        self._deliver: Callable[[Deliver], None] = self._output.deliver
        self._queue = self._core.queue
        # The ref, not a bound method: a collaborator the actor keeps holding the actor
        # would make a reference cycle (the ref lets go of a stopped one).
        self._holds = PublisherHolds(client_id, self._queue, self.actor_loop,
                                     node.settings.backpressure_timeout, self._metrics,
                                     self.actor_ref)

    @property
    def via_registry(self) -> dict[str, int]:
        """Topics whose batches are on their way through the registry, and how many."""
        return dict(self._router.via)

    @property
    def credit(self) -> ReadCredit | None:
        """The read credit of the read whose effects are carried out now (None: no read's)."""
        return self._credit

    @property
    def core(self) -> SessionCore:
        """The session's protocol core (read it on the loop thread only)."""
        return self._core

    # -- lifecycle -------------------------------------------------------------

    async def on_start(self) -> None:  # type: ignore[override]
        self._names.register_session(self.client_id, self.actor_ref)
        found = await self._node.registry().ask(SessionStarted(self.client_id), block=False)
        subscriptions = found.subscriptions
        if subscriptions:
            self.epoch = found.epoch
        if await self._durable_start(subscriptions):
            return
        if subscriptions:
            self.epoch = found.epoch
            self._run(self._core.restore(subscriptions, self._now()))
            log.info("client %s: session restored with %d subscription(s) after a restart",
                     shown(self.client_id), len(subscriptions))
        elif self._start_mode is StartMode.RESTART:
            self._retire()  # nothing survived the crash

    def on_stop(self) -> None:
        self._cleanup("session stopped")

    def on_failure(self, exception_type: Any, exception_value: Any,
                   traceback: Any) -> None:
        self._count_crash_losses()
        self._cleanup(f"session crashed: {exception_value!r}")

    def _count_crash_losses(self) -> None:
        """Count what the crash loses: the deliveries this actor held that no log brings back.

        With the commit log a persistent session's QoS 1/2 flows and queue
        are reloaded by the restarted actor; QoS 0 never is, nor anything of
        a clean session or of a node without storage. (Messages still in the
        inbox go with it too: the runtime cannot count those.)
        """
        core = self._core
        durable = self._journal.logged and not core.clean_session
        lost = sum(1 for d in core.queued if not durable or d.qos == 0)
        if not durable:
            lost += len(core.inflight)
        if lost:
            self._metrics.drop("session_crashed", lost, client_id=self.client_id)

    def _cleanup(self, reason: str) -> None:
        self._holds.release()
        # The journal points back at this actor (to reach its core and connection), and the
        # bound effect paths too: they let go, so that reference counting frees an ended
        # session at once. A served broker runs its full collections rarely
        # (actorbroker.collector), and a session that lived a while would wait for one, a
        # few KB per ended client.
        self._journal_close()
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        self._names.unregister_session(self.client_id, self.actor_ref)
        conn, self.connection = self.connection, None
        if conn is not None:
            self._names.online.discard(self.client_id)
            self._metrics.disconnected()
            log.info("client %s disconnected from %s: %s", shown(self.client_id), peer(conn),
                     reason, extra=about(self.client_id, conn))
            conn.close(reason=reason)

    def _retire(self) -> None:
        """Give up the name and stop once everything already queued is handled."""
        self._retired = True
        self._names.unregister_session(self.client_id, self.actor_ref)
        self.stop()

    def _now(self) -> float:
        return self._clock()

    # -- messages --------------------------------------------------------------

    def on_receive(self, message: Any) -> Any:
        cls = type(message)
        if cls is Deliver:  # the fan-out hot path first
            credit = message.credit
            if credit is None:
                self._deliver(message)
            else:  # see actors/backpressure.py; attributes only unless the queue is pressed
                queue = self._queue
                queue.elastic = (self.connection is not None and credit.conn_id != self._conn_id
                                 and not self._holds.stuck)  # it can hold this publisher
                self._deliver(message)
                queue.elastic = False
                if queue.pressed:
                    self._holds.taken(credit, self._conn_id if self._core.attached else None)
                else:
                    credit.take()
        elif cls is Inbound:
            self._inbound(message)
        elif cls is Routed:
            self._router.routed(message.topics)
        elif cls is Attach:
            self._attach(message)
        elif cls is ConnectionLost:
            self._lost(message)
            if self.connection is None and self._holds.active:
                self._holds.detached()
        elif cls is Durable or cls is NotDurable or cls is Fetched:
            self._carry_releases(self._journal.on_reply(message, self.connection))
            self._journal.settle()
        elif cls is SubscriptionsAdded:
            self._router.changing -= 1
            self._journal.subscribed(message.packet_id, message.results)
            self._run(self._core.subscribed(message.packet_id, message.results,
                                            message.retained, self._now()))
        elif cls is SubscriptionsRemoved:
            self._router.changing -= 1
            self._run(self._core.unsubscribed(message.packet_id, self._now()))
        elif cls is Timer:
            self._run(self._core.on_timer(message.name, self._now()))
            self._journal.settle()
        elif cls is Retransmit:
            self._retransmitter.fired(message)
        elif cls is RetryJournal:
            self._journal.retry()
        elif cls is Drained:
            self._drained(message)
            if self._holds.active:
                self._holds.check()
        elif cls is DeliverMatched:
            credit = message.credit
            if credit is None:
                self._deliver_matched(message)
            else:
                self._holds.admit(self.connection is not None and credit.conn_id != self._conn_id)
                self._deliver_matched(message)
                self._holds.taken(credit, self._conn_id if self._core.attached else None)
        elif cls is HoldExpired:
            self._holds.expired()
        elif cls is DeliverShared:
            credit = message.credit
            if credit is None:
                self._deliver_shared(message)
            else:
                self._holds.admit(self.connection is not None and credit.conn_id != self._conn_id)
                self._deliver_shared(message)
                self._holds.taken(credit, self._conn_id if self._core.attached else None)
        elif cls is Reauthorize:
            self._reauthorize()
        elif cls is CrashForTest:
            crash_for_test(self._node.settings, f"session {self.client_id!r}", message)
        elif cls is DiscardSession:
            return self._discard()
        else:
            raise TypeError(f"session {self.client_id!r}: unexpected message {message!r}")
        return None

    def _discard(self) -> bool:
        """An operator deleted this session: end it as its expiry would (offline only)."""
        if (self._retired or self.connection is not None
                or self._core.state is not SessionState.DISCONNECTED):
            return False  # retiring (hibernated: the keeper holds it now), or connected
        log.info("client %r: session deleted by an operator", self.client_id)
        self._run(self._core.expire(self._now()))
        self._journal.settle()
        return True

    def _inbound(self, message: Inbound) -> None:
        conn = self.connection
        credit = message.credit
        if conn is None or message.conn_id != self._conn_id:
            # Else a taken-over connection: nothing of the read goes on, its credit is back.
            if not self._forward_or(message.conn_id, message) and credit is not None:
                credit.take()
            return
        journal = self._journal
        self._credit = credit  # what the read routes carries it (see actors/backpressure.py)
        try:
            journal.read(message.packets)
            self._run(self._core.handle_all(message.packets, self._now()))
            journal.pump()  # the resumed queue's next chunk, if the acks made room
        finally:
            self._credit = None
            if credit is not None:
                credit.take()
            if self._holds.active:  # the read's acknowledgements may have drained the queue
                self._holds.check()

    # -- effects ---------------------------------------------------------------

    def carry_out(self, effects: list[Effect]) -> None:
        """Carry out the core's effects, in order; one conn.send at the end. ``self._run``
        is this without a log, else through the journal first (``_journal_init``)."""
        out: list[Packet] = []
        routes: dict[str, list[AppMessage]] = {}
        for effect in effects:
            match effect:
                case Send(packets):
                    out.extend(packets)
                case Route(message, ack):
                    self._metrics.publish_received += 1
                    self._metrics.received_qos[message.qos] += 1
                    routes.setdefault(message.topic, []).append(message)
                    if ack is not None:
                        out.append(ack)  # sent once handed on: the "accepted" step
                case Dropped(message, _, reason):
                    self._metrics.drop(reason.value, client_id=self.client_id,
                                       topic=message.topic)
                case PublishWill(message):
                    routes.setdefault(message.topic, []).append(message)
                case RequestSubscribe() | RequestUnsubscribe():
                    routes = self._route(routes)  # earlier PUBLISHes of the read go first
                    self._registry_request(effect)
                case RevokeSubscriptions(filters):
                    self._node.registry().tell(RemoveSubscriptions(
                        self.client_id, None, filters, self.actor_ref))
                case StartTimer(name, delay):
                    self._start_timer(name, delay)
                case CancelTimer(name):
                    handle = self._timers.pop(name, None)
                    if handle is not None:
                        handle.cancel()
                case Close():
                    routes = self._route(routes)
                    self._output.flush(out)
                    out = []
                    self._close(effect)
                case EndSession():
                    self._node.registry().tell(SessionEnded(self.client_id))
                    self._node.owners.release(self.client_id, self._claim)
                    self._retire()
                case SetKeepAlive() | HandBackShared() | Reauthenticate():
                    failed = self._mqtt5_effect(effect, out)
                    if failed is not None:  # re-authentication failed: DISCONNECT, close
                        routes = self._route(routes)
                        self._output.flush(out)
                        out = []
                        self._run(self._core.disconnect(ReasonCode(failed[0]), failed[1]))
        if routes:
            self._route(routes)
        if out:
            self._output.flush(out)

    def _route(self, routes: dict[str, list[AppMessage]]) -> dict[str, list[AppMessage]]:
        """Hand the batches on (see :mod:`.publish_route`); a new empty dict for the next."""
        self._router.route(routes, self._credit)
        return {}

    def _registry_request(self, effect: Effect) -> None:
        registry = self._node.registry()
        if isinstance(effect, RequestSubscribe):
            self._router.changing += 1  # answered by SubscriptionsAdded
            registry.tell(AddSubscriptions(self.client_id, effect.packet_id, effect.subscriptions,
                                           self._core.clean_session, self.epoch,
                                           self.actor_ref, effect.subscription_id,
                                           self._core.protocol_level))
        elif isinstance(effect, RequestUnsubscribe):
            registry.tell(RemoveSubscriptions(self.client_id, effect.packet_id,
                                              effect.topic_filters, self.actor_ref))
            if effect.packet_id is None and not self._journal.logged:
                self.renew_epoch()  # (with storage: LogJournal did, when it saw it)
            else:
                self._router.changing += 1  # answered by SubscriptionsRemoved

    def renew_epoch(self) -> None:
        """The core discarded the session state: Delivers of its old subscriptions are stale."""
        self.epoch = self._node.next_epoch()

    def _close(self, effect: Close) -> None:
        conn = self.connection
        if conn is None:
            return
        if not conn.closed:  # else the transport ended it first: its ConnectionLost says why
            self._close_code = effect.reason_code
        # Any MQTT 5 DISCONNECT was in a Send before the Close: no reason code here.
        conn.close(None, effect.reason)

    def _start_timer(self, name: str, delay: float) -> None:
        old = self._timers.pop(name, None)
        if old is not None:
            old.cancel()
        self._timers[name] = self.actor_loop.call_later(delay, self._fire, name)

    def _fire(self, name: str) -> None:
        # Not send_after: the timer leaves _timers when it fires, not when its Timer is
        # handled (may_hibernate and a restarted timer of the same name read _timers).
        self._timers.pop(name, None)
        tell_if_alive(self.actor_ref, Timer(name))
