"""Durability layer: what shared subscriptions owe their durable members, folded from records. Stdlib, routing and persistence only.

A message to a shared group (``$share/{group}/{filter}``, MQTT 5) goes to
one member, chosen by the router when it routes. The publisher's PUBACK
waits only for the ``PublishAccepted`` record, so the fold must know, from that
record alone, that the group still owes the message: :class:`SharedBacklog`
keeps the groups of the durable members (a filter trie on the inner
filters) and, per group, the QoS 1/2 messages published to it that no
``SharedRouted`` record has given to a member yet.

* ``PublishAccepted`` (QoS 1/2): owed to every group with a durable member whose
  filter matches and whose grant is above QoS 0.
* ``SharedRouted``: no longer owed (the fold queues it for the member when
  that member is a durable session, as ``SessionQueued`` does).
* ``SharedPending``: owed (again). A member that hands messages back to
  its group (an MQTT 5 member leaving with messages it has not taken, or a
  session that could no longer take them) writes it, after its own
  ``SessionDropped``, before the registry picks the next member and writes
  that ``SharedRouted``; checkpoints restate what is owed with it too.
* A group left without durable members owes nothing (there is no one to
  deliver it to after a restart; live members are served by the router).

After a crash, what is still owed is given to the group's durable members in
turn (:meth:`SharedBacklog.assign`): the storage actor writes those
``SharedRouted`` records at start, before any session or router runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from actorbroker.routing import FilterTrie

from .queue import Entry

__all__ = ["SharedBacklog", "inner_filter"]


def inner_filter(whole: str) -> str:
    """The filter a ``$share/{group}/{filter}`` subscription matches topics against."""
    parts = whole.split("/", 2)
    return parts[2] if len(parts) == 3 else whole


class SharedBacklog:
    """Shared groups of durable members and the messages they are owed (see the module doc)."""

    def __init__(self) -> None:
        self._trie: FilterTrie[tuple[str, str], int] = FilterTrie()  # (group, client) -> QoS
        self._members: dict[str, dict[str, int]] = {}  # group -> client -> granted QoS
        #: Group -> log offset -> the message owed (QoS and RETAIN as published).
        self.owed: dict[str, dict[int, Entry]] = {}
        self._turn: dict[str, int] = {}

    def __len__(self) -> int:
        return sum(map(len, self.owed.values()))

    # -- membership ----------------------------------------------------------------

    def join(self, group: str, client_id: str, qos: int) -> None:
        """``client_id`` (a durable session) subscribed to ``group`` with ``qos`` granted."""
        self._trie.add(inner_filter(group), (group, client_id), qos)
        self._members.setdefault(group, {})[client_id] = qos

    def leave(self, group: str, client_id: str) -> None:
        """``client_id`` left ``group`` (unsubscribed, or its session ended)."""
        members = self._members.get(group)
        if members is None or members.pop(client_id, None) is None:
            return
        self._trie.remove(inner_filter(group), (group, client_id))
        if not members:
            del self._members[group]
            self.owed.pop(group, None)
            self._turn.pop(group, None)

    # -- messages ------------------------------------------------------------------

    def published(self, offset: int, qos: int, retain: bool, size: int, topic: str,
                  topic_id: Callable[[str], int]) -> None:
        """A QoS 1/2 message was logged at ``offset``: owed to each matching group."""
        if not self._members:
            return
        groups: set[str] = set()
        for _, members in self._trie.match_filters(topic):
            for (group, _client), granted in members.items():
                if granted:
                    groups.add(group)
        if groups:
            entry = Entry(offset, qos, retain, size, topic_id(topic))
            for group in groups:
                self.owed.setdefault(group, {})[offset] = entry

    def owe(self, group: str, entry: Entry) -> None:
        """``SharedPending``: ``group`` owes ``entry`` (again: a member handed it back; or a
        checkpoint restated it)."""
        if group in self._members:
            self.owed.setdefault(group, {})[entry.offset] = entry

    def routed(self, group: str, offset: int) -> None:
        """``SharedRouted``: the message at ``offset`` went to a member (or to none)."""
        owed = self.owed.get(group)
        if owed is not None and owed.pop(offset, None) is not None and not owed:
            del self.owed[group]

    def first_offset(self) -> int | None:
        """The lowest offset owed to any group (the log must keep it)."""
        return min((min(owed) for owed in self.owed.values() if owed), default=None)

    def items(self) -> Iterator[tuple[str, Entry]]:
        """(group, entry) of everything owed, in offset order per group."""
        for group, owed in self.owed.items():
            for offset in sorted(owed):
                yield group, owed[offset]

    def assign(self, accept: Callable[[str], bool]) -> Iterator[tuple[str, str, Entry, int]]:
        """(group, member, entry, delivery QoS) for everything owed, the members of each group
        in turn, skipping those ``accept`` refuses; member "" when none accepts."""
        for group, entry in list(self.items()):
            members = sorted(self._members.get(group, {}).items())
            start = self._turn.get(group, 0)
            chosen = ("", 0)
            for step in range(len(members)):
                client_id, granted = members[(start + step) % len(members)]
                if accept(client_id):
                    chosen = (client_id, min(entry.qos, granted))
                    self._turn[group] = start + step + 1
                    break
            yield group, chosen[0], entry, chosen[1]
