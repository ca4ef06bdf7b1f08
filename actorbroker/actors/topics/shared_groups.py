"""Actors layer: MQTT 5 shared subscriptions for the registry and the topic actors. Stdlib, supervisors, routing, session.

A shared subscription ``$share/{group}/{filter}`` (section 4.8.2) gets each
matching message to **one** of the sessions subscribed to it. The group is
named by the whole string; its members are client ids with a grant each
(QoS and epoch, as for plain subscriptions).

* The registry owns the groups (:class:`SharedIndex`: a filter trie on the
  inner filter, keyed by (group, client id)); it tells every live topic actor
  whose topic a group's filter matches, in the same ``SubscribersChanged``
  as plain subscriptions.
* A topic actor keeps the groups matching its topic (:class:`SharedSlots`)
  and picks the member of each group for each message with the configured
  strategy (:class:`~actorbroker.routing.SharedGroup`: round robin, random,
  or a hash of the publisher's client id) among the **online** members
  (the name table's ``online`` set); if none is online, among the members
  whose session can queue it (:class:`Reachable`): an offline session whose
  actor runs queues it; a hibernated durable one (``actors/storage/keeper.py``) gets it in
  its queue in the commit log.
* Durability: the router writes ``SharedRouted`` for each logged message
  before the chosen member hears of it (:func:`journal_routed`); a member
  handing messages back writes ``SharedPending`` (:func:`journal_handed_back`).
  With the ``PublishAccepted`` record the fold knows what each group still owes
  (durable/shared.py), so a crash loses no acknowledged message.
* Redelivery: when a member's connection ends, its session hands back what
  it does not have yet (queued, or QoS 1 without PUBACK) with
  ``RedeliverShared``; the registry gives each message to another member
  (:func:`pick`, the leaving member excluded) and only falls back to the
  leaving member itself while its session lives. A message a member has
  acknowledged is never sent to another; a QoS 2 message in flight stays
  with its member ([MQTT-4.8.2-4], [MQTT-4.8.2-5]). Delivery through a group
  is a separate copy from the client's non-shared subscriptions.

Strategies keep their state per topic actor (round robin turns per topic)
and per registry (for redeliveries).
"""

from __future__ import annotations

import random
import time
from collections.abc import Collection, Iterator, Mapping
from typing import Any

from actorbroker.durable.journal import handed_back_records
from actorbroker.persistence.records import SharedRouted
from actorbroker.routing import FilterTrie, SharedFilter, SharedGroup, SharedStrategy, parse_shared
from actorbroker.session import AppMessage
from supervisors import Teller, tell_if_alive

from ..names import Asleep, Waking
from ..storage.requests import Append
from .grants import NO_GRANT, Grant

__all__ = ["Reachable", "SharedIndex", "SharedSlots", "hash_key", "is_shared",
           "journal_handed_back", "journal_routed", "pick"]

_PREFIX = "$share/"
_RNG = random.Random()  # shared by SharedSlots without a generator of their own


def is_shared(topic_filter: str) -> bool:
    """True for a ``$share/...`` filter (of an MQTT 5 client: the caller knows the level)."""
    return topic_filter.startswith(_PREFIX)


def hash_key(message: AppMessage) -> str:
    """What the hash strategy hashes: the publisher's client id (the topic for the broker's own)."""
    return message.publisher if message.publisher is not None else message.topic


def pick(group: SharedGroup[str], key: str, online: Collection[str],
         alive: Collection[str], exclude: Collection[str] = ()) -> tuple[str, bool] | None:
    """(member, final) for one message: an online member (final False) or, failing that, one
    whose session lives (final True: it queues); None if there is neither."""
    chosen = group.choose(key, accept=lambda m: m in online and m not in exclude)
    if chosen is not None:
        return chosen, False
    chosen = group.choose(key, accept=lambda m: m in alive and m not in exclude)
    return None if chosen is None else (chosen, True)


class Reachable(Collection[str]):
    """Client ids whose session can take a shared message: a running session actor, or a
    hibernated durable session when there is a commit log (``in`` reads the name table)."""

    __slots__ = ("_sessions", "_storage")

    def __init__(self, sessions: Mapping[str, Any], storage: Teller | None) -> None:
        self._sessions = sessions
        self._storage = storage

    def __contains__(self, client_id: object) -> bool:
        ref = self._sessions.get(client_id)  # type: ignore[call-overload]
        if isinstance(ref, Asleep | Waking):  # hibernated: its queue is in the log
            return self._storage is not None
        return ref is not None and bool(ref.is_alive())

    def __iter__(self) -> Iterator[str]:
        return (c for c in list(self._sessions) if c in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def journal_routed(storage: Teller | None, group: str, client_id: str, messages: Collection[AppMessage],
                   grant: Grant) -> int:
    """Tell the commit log which member group ``group`` gave its logged messages to (``""``:
    none could take them), before that member hears of them; return how many of
    ``messages`` a hibernated member could not have queued (QoS 0, or not logged).

    The ``SharedRouted`` records settle what the group owed since the
    ``PublishAccepted`` (durable/shared.py) and queue the message for a durable
    member in the log, so a crash loses nothing the publisher saw
    acknowledged; for a hibernated member they are its queue.
    """
    options = grant.options
    sub_ids = (options.subscription_id,) if options and options.subscription_id else ()
    as_published = options is not None and options.retain_as_published
    ts = int(time.time() * 1e6)
    qos = grant.qos if client_id else 0
    records = [SharedRouted(group, client_id, m.log_offset, min(m.qos, qos),
                            as_published and m.retain, sub_ids, m.topic, m.size, timestamp_us=ts)
               for m in messages if m.log_offset >= 0]
    if storage is None:
        return len(messages)
    if records and not tell_if_alive(storage, Append(tuple(records), None, 0)):
        return len(messages)
    return sum(1 for m in messages if m.log_offset < 0 or not min(m.qos, qos))


def journal_handed_back(storage: Teller | None, group: str, client_id: str,
                        messages: Collection[AppMessage], durable: bool) -> None:
    """A member hands ``messages`` back to ``group``: out of its queue in the log (a durable
    one: ``SessionDropped``) and owed by the group again (``SharedPending``) until the
    registry's ``SharedRouted`` names the next member."""
    if storage is None:
        return
    records = handed_back_records(client_id, ((group, m) for m in messages), durable,
                                  int(time.time() * 1e6))
    if records:  # a dead storage actor: the broker is stopping, and the next start finds
        tell_if_alive(storage, Append(tuple(records), None, 0))  # them owed (or queued)


def _new_group(strategy: SharedStrategy, rng: random.Random) -> SharedGroup[str]:
    return SharedGroup(strategy, rng=rng)


class SharedIndex:
    """The registry's shared subscriptions (see the module doc)."""

    __slots__ = ("_trie", "_members", "_groups", "_strategy", "_rng")

    def __init__(self, strategy: SharedStrategy = SharedStrategy.ROUND_ROBIN,
                 rng: random.Random | None = None) -> None:
        self._trie: FilterTrie[tuple[str, str], Grant] = FilterTrie()
        self._members: dict[str, dict[str, Grant]] = {}  # whole filter -> client -> grant
        self._groups: dict[str, SharedGroup[str]] = {}
        self._strategy = strategy
        self._rng = rng or random.Random()

    def add(self, shared: SharedFilter, client_id: str, grant: Grant) -> None:
        """Add (or replace) ``client_id``'s membership of ``shared``."""
        whole = str(shared)
        self._trie.add(shared.filter, (whole, client_id), grant)
        self._members.setdefault(whole, {})[client_id] = grant
        group = self._groups.get(whole)
        if group is None:
            group = self._groups[whole] = _new_group(self._strategy, self._rng)
        group.add(client_id)

    def remove(self, whole: str, client_id: str) -> bool:
        """End ``client_id``'s membership of group ``whole``; False if it had none."""
        members = self._members.get(whole)
        if members is None or client_id not in members:
            return False
        shared = parse_shared(whole)
        assert shared is not None
        self._trie.remove(shared.filter, (whole, client_id))
        del members[client_id]
        self._groups[whole].remove(client_id)
        if not members:
            del self._members[whole]
            del self._groups[whole]
        return True

    def holds(self, whole: str, client_id: str) -> bool:
        """True if ``client_id`` is a member of group ``whole``."""
        return client_id in self._members.get(whole, ())

    def members(self, whole: str) -> dict[str, Grant]:
        """The members of group ``whole`` and their grants."""
        return self._members.get(whole, {})

    def group(self, whole: str) -> SharedGroup[str] | None:
        """The registry's member picker of group ``whole`` (for redeliveries)."""
        return self._groups.get(whole)

    def match(self, topic: str) -> dict[str, dict[str, Grant]]:
        """Group -> members of every group whose filter matches ``topic``."""
        found: dict[str, dict[str, Grant]] = {}
        for _, members in self._trie.match_filters(topic):
            for (whole, client_id), grant in members.items():
                found.setdefault(whole, {})[client_id] = grant
        return found

    def __len__(self) -> int:
        return len(self._trie)


class SharedSlots:
    """The shared groups matching one topic actor's topic (see the module doc)."""

    __slots__ = ("_members", "groups", "_strategy", "_rng")

    def __init__(self, groups: dict[str, dict[str, Grant]] | None = None,
                 strategy: SharedStrategy = SharedStrategy.ROUND_ROBIN,
                 rng: random.Random | None = None) -> None:
        self._members: dict[str, dict[str, Grant]] = {}
        #: Group -> member picker; empty when no shared subscription matches the topic.
        self.groups: dict[str, SharedGroup[str]] = {}
        self._strategy = strategy
        # One generator for all topic actors (loop thread): a Random is ~2.9 KiB and
        # seeding one from os.urandom costs more than the rest of a topic actor's start.
        self._rng = rng or _RNG
        for whole, members in (groups or {}).items():
            for client_id, grant in members.items():
                self.change(client_id, whole, grant)

    def change(self, client_id: str, whole: str, grant: Grant | None) -> None:
        """Add, replace (``grant``) or remove (None) a member of group ``whole``."""
        members = self._members.get(whole)
        if grant is not None:
            if members is None:
                members = self._members[whole] = {}
                self.groups[whole] = _new_group(self._strategy, self._rng)
            members[client_id] = grant
            self.groups[whole].add(client_id)
        elif members is not None and client_id in members:
            del members[client_id]
            self.groups[whole].remove(client_id)
            if not members:
                del self._members[whole]
                del self.groups[whole]

    def route(self, messages: tuple[AppMessage, ...], online: Collection[str],
              alive: Collection[str]) -> Iterator[tuple[str, str, Grant, bool, list[AppMessage]]]:
        """(member, group, grant, final, its messages) per member chosen; (``""``, group, ...)
        collects the messages no member could take."""
        for whole, group in self.groups.items():
            members = self._members[whole]
            batches: dict[tuple[str, bool], list[AppMessage]] = {}
            for message in messages:
                choice = pick(group, hash_key(message), online, alive)
                key = ("", True) if choice is None else choice
                batches.setdefault(key, []).append(message)
            for (client_id, final), batch in batches.items():
                yield client_id, whole, members.get(client_id, NO_GRANT), final, batch

    def __bool__(self) -> bool:
        return bool(self.groups)

    def __len__(self) -> int:
        return sum(map(len, self._members.values()))
