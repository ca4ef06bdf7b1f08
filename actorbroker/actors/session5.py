"""Actors layer: the MQTT 5 handlers of SessionActor, as a mixin. Stdlib, pykka, session, codec, auth.

Kept apart from :mod:`.session` so that the MQTT 3 hot path there stays as
it was; SessionActor dispatches to these for the MQTT 5 messages and
effects only:

* ``DeliverMatched`` (subscriptions with options) and ``DeliverShared`` (a
  shared group chose this client) become ``SessionCore.deliver_matched`` /
  ``deliver5`` calls; a ``DeliverShared`` of another epoch (for a session
  state this actor discarded) goes straight back to the group;
* ``HandBackShared``: owed by each group again in the commit log
  (``SharedPending``), then the registry redelivers (``RedeliverShared``);
* ``SetKeepAlive``: apply the Server Keep Alive to the connection;
* ``Reauthenticate``: run the AUTH through :class:`~.connect.enhanced_auth.Reauthentication`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from actorbroker.codec import Auth, Packet
from actorbroker.session import AppMessage, Effect, SessionCore
from actorbroker.session.effects import HandBackShared, Reauthenticate, SetKeepAlive

from .connect.enhanced_auth import Reauthentication
from .messages import DeliverMatched, DeliverShared, RedeliverShared
from .node import Node
from .sessions.journal.interface import Journal

__all__ = ["Mqtt5Session"]


class Mqtt5Session:
    """The MQTT 5 half of SessionActor (see the module doc)."""

    client_id: str
    _node: Node
    _core: SessionCore
    connection: Any
    epoch: int
    _retired: bool
    _reauth: Reauthentication | None
    _journal: Journal
    _run: Callable[[list[Effect]], None]

    if TYPE_CHECKING:
        actor_ref: Any

        def _now(self) -> float: ...

    def _hold_if_congested(self) -> None:
        conn, core = self.connection, self._core
        if conn is not None and not core.output_held and conn.congested:
            core.hold_output()

    def _deliver_matched(self, message: DeliverMatched) -> None:
        if message.epoch != self.epoch:
            self._node.metrics.drop("session_ended", len(message.messages),
                                    client_id=self.client_id, topic=message.messages[0].topic)
            return
        self._hold_if_congested()
        core, now, matches = self._core, self._now(), message.matches
        effects: list[Effect] = []
        for item in message.messages:
            effects += core.deliver_matched(item, matches, now)
        self._run(effects)

    def _deliver_shared(self, message: DeliverShared) -> None:
        # For a discarded session state, or reaching an actor that is retiring (its
        # session ended, or it hibernated: what it queued now would be lost): back to the group.
        if message.epoch != self.epoch or self._retired:
            self._hand_back(message.group, message.messages)
            return
        self._hold_if_congested()
        options = message.options
        sub_ids = (options.subscription_id,) if options and options.subscription_id else ()
        as_published = options is not None and options.retain_as_published
        core, now = self._core, self._now()
        effects: list[Effect] = []
        for item in message.messages:
            effects += core.deliver5(item, message.qos, now, retain=as_published and item.retain,
                                     subscription_ids=sub_ids, group=message.group,
                                     final=message.final)
        self._run(effects)

    def _hand_back(self, group: str, messages: tuple[AppMessage, ...],
                   journaled: bool = False) -> None:
        """Give ``messages`` back to shared subscription ``group``: owed by the group again in
        the commit log (out of this session's queue there), unless ``journaled`` (the
        records of a ``HandBackShared`` went with the session's own, sessions/journal/records.py),
        then the registry picks another member (see actors/topics/shared_groups.py)."""
        if not journaled:
            self._journal.handed_back(group, messages)
        self._node.registry().tell(RedeliverShared(self.client_id, group, messages))

    def _mqtt5_effect(self, effect: Effect, out: list[Packet]) -> tuple[int, str] | None:
        """Carry out an MQTT 5 effect (packets to send go to ``out``).

        Returns (reason code, reason) when the connection must now be closed
        (a failed re-authentication): the caller flushes ``out`` and runs
        ``core.disconnect``.
        """
        if isinstance(effect, SetKeepAlive):
            if self.connection is not None:
                self.connection.set_keepalive(effect.seconds)
        elif isinstance(effect, HandBackShared):
            groups: dict[str, list[AppMessage]] = {}
            for delivery in effect.deliveries:
                if delivery.group is not None:
                    groups.setdefault(delivery.group, []).append(delivery.message)
            for group, messages in groups.items():  # their records are stored already
                self._hand_back(group, tuple(messages), journaled=True)
        elif isinstance(effect, Reauthenticate):
            if self._reauth is None:
                self._reauth = Reauthentication(self._node.settings.auth, self.client_id)
            reply = self._reauth.handle(effect.packet)
            if isinstance(reply, Auth):
                out.append(reply)
                return None
            return reply.reason_code, reply.reason
        return None
