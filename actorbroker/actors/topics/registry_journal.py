"""Actors layer: the commit log half of RegistryActor, as a mixin. Stdlib, pykka, session, persistence, durable.

With storage on (durability fsync or os), the registry

* starts with what the log holds: it asks the storage actor (which folded
  the log before the registry was started: the core starts it first) for
  every durable session's subscriptions and for the retained messages, and
  adds them as if their sessions had subscribed (each with a fresh epoch)
  and their publishers had published, before any listener accepts a client;
* journals the retained changes that no ``PublishAccepted`` record carries: those
  of QoS 0 messages (a QoS 1/2 retained message is stored as its
  ``PublishAccepted`` before it is routed). ``$SYS`` topics are not journaled: the
  broker republishes them.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from actorbroker.codec import Subscription
from actorbroker.durable.journal import blob_of
from actorbroker.persistence.records import RetainedCleared, RetainedSet
from actorbroker.session import AppMessage

from ..messages import AddSubscriptions
from ..node import Node
from ..storage.requests import Append, LoadRouting, RoutingLoad

__all__ = ["DurableRegistry"]

log = logging.getLogger("actorbroker.registry")


class DurableRegistry:
    """What RegistryActor does for the commit log (see the module doc)."""

    _node: Node

    if TYPE_CHECKING:
        def _subscribe(self, request: AddSubscriptions) -> None: ...

        def _retain(self, message: AppMessage) -> None: ...

    async def _load_durable(self) -> None:
        """Take the durable subscriptions and the retained messages from the storage actor."""
        storage = self._node.names.storage()
        if storage is None:
            return
        load: RoutingLoad = await storage.ask(LoadRouting(), block=False)
        count = 0
        for client_id, level, subscriptions in load.subscriptions:
            by_id: dict[int, list[Subscription]] = {}
            for sub, sub_id in subscriptions:
                by_id.setdefault(sub_id, []).append(sub)
            epoch = self._node.next_epoch()
            for sub_id, subs in by_id.items():
                nobody: Any = None  # no reply: nobody asked
                self._subscribe(AddSubscriptions(client_id, 0, tuple(subs), False, epoch, nobody,
                                                 sub_id or None, level))
                count += len(subs)
        for message in load.retained:
            self._retain(message)
        if count or load.retained:
            log.info("registry: %d subscription(s) of %d durable session(s) and %d retained "
                     "message(s) restored from the commit log", count, len(load.subscriptions),
                     len(load.retained))

    def _journal_retained(self, message: AppMessage) -> None:
        """Store a retained change that no PublishAccepted record carries (QoS 0, not $SYS)."""
        storage = self._node.names.storage()
        if storage is None or message.log_offset >= 0 or message.topic.startswith("$"):
            return
        ts = int(time.time() * 1e6)
        record = (RetainedSet(message.topic, message.payload, message.qos,
                              blob_of(message.properties), message.publisher or "",
                              timestamp_us=ts)
                  if message.payload else RetainedCleared(message.topic, timestamp_us=ts))
        storage.tell(Append((record,), None, 0))
