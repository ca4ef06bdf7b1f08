"""Actors layer: Grant, one client's subscription as routing needs it. Stdlib and session only.

The registry builds one per subscription it adds (per SUBSCRIBE, so its
cost does not matter) and hands the same object to the trie, the shared
groups and the topic actors (``SubscribersChanged``); those read it for
every publish they route (``_copy`` in :mod:`.subscribers`, the
``DeliverShared`` of :mod:`.topic`), which is why it is a slotted class with
plain fields: reading ``grant.qos`` costs what ``grant[0]`` did.
"""

from __future__ import annotations

from dataclasses import dataclass

from actorbroker.codec.frozen import quick_init
from actorbroker.session.suboptions import SubOptions

__all__ = ["NO_GRANT", "Grant"]


@quick_init
@dataclass(frozen=True, slots=True)
class Grant:
    """A client's subscription as routing needs it.

    ``epoch`` is the session's epoch when it subscribed (see
    :mod:`~actorbroker.actors.messages`): only the newest epoch's subscriptions of a client
    count. ``options`` are the MQTT 5 subscription options, None when the
    subscription has none (every MQTT 3 one, and most MQTT 5 ones).
    """

    qos: int
    epoch: int
    options: SubOptions | None = None


#: What a shared group's messages are routed with when no member can take them.
NO_GRANT = Grant(0, 0)
