"""Actors layer: the storage actor's deferred history, appends nobody waits for. Stdlib, persistence.

A clean session's SUBSCRIBE and UNSUBSCRIBE are journaled for the pipeline
only (``Append(records, None, 0)``: nothing is held for them, and the fold
keeps no subscriptions of a session that has none). A subscription storm
makes many of them (a 1,000-filter SUBSCRIBE is 1,000 ``Subscribed``
records, 15 ms to encode and write), and first come, first served, a
publisher's ``PublishAccepted`` that its PUBACK waits for queued behind tens of
thousands of them: 600 ms during 100,000 filters (bench/storm.py).

So the storage actor moves such appends here as it takes them and writes
them when nothing waits (:meth:`History.take`, :data:`DRAIN_RECORDS`
records at a time between two looks at the inbox, splitting a larger append). Order is kept where it
means something:

* per client id: an append that carries a record of client ``X`` is
  written after every deferred append of ``X`` (:meth:`History.before`), so a
  takeover by a durable session can never see a clean session's
  ``Subscribed`` land after its own records;
* for everything else in the log (reads, checkpoints' restated state, a
  stop): :meth:`History.take_all` before it. Only ``Subscribed`` and
  ``Unsubscribed`` are deferred: each concerns one client and nothing else.

A crash loses what is deferred, as it loses what the inbox held: history
of sessions the crash ends anyway.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from actorbroker.persistence.records import Subscribed, Unsubscribed

from .requests import Append

__all__ = ["DRAIN_RECORDS", "History"]

#: Deferred records written per turn at most: ~8 ms.
DRAIN_RECORDS = 512
_DEFERRABLE = (Subscribed, Unsubscribed)


def _client_ids(append: Append) -> set[str]:
    return {cid for r in append.records if (cid := getattr(r, "client_id", None)) is not None}


class History:
    """Deferred appends, in order, counted per client id (see the module doc)."""

    __slots__ = ("_appends", "_clients", "records")

    def __init__(self) -> None:
        self._appends: deque[tuple[str, Append]] = deque()
        self._clients: dict[str, int] = {}  # deferred appends per client id
        self.records = 0

    def __bool__(self) -> bool:
        return bool(self._appends)

    def defer(self, append: Append) -> bool:
        """Keep ``append`` for later if nobody waits for it and it is history of one
        client; False: write it now (after :meth:`before`)."""
        records = append.records
        if append.reply_to is not None or not records:
            return False
        cid = None
        for record in records:
            if not isinstance(record, _DEFERRABLE) or cid not in (None, record.client_id):
                return False
            cid = record.client_id
        assert cid is not None
        self._appends.append((cid, append))
        self._clients[cid] = self._clients.get(cid, 0) + 1
        self.records += len(records)
        return True

    def split(self, batch: list[Append]) -> list[Append]:
        """What of ``batch`` to write now, in order: the appends not deferred, after the
        deferred ones of their client ids (usually none)."""
        now = [append for append in batch if not self.defer(append)]
        if not now or not self._clients:
            return now
        ordered: list[Append] = []
        for append in now:
            ordered += self.of(_client_ids(append))
            ordered.append(append)
        return ordered

    def of(self, client_ids: set[str]) -> list[Append]:
        """The deferred appends of ``client_ids``, taken out in order."""
        wanted = client_ids & self._clients.keys()
        if not wanted:
            return []
        taken: list[tuple[str, Append]] = []
        kept: deque[tuple[str, Append]] = deque()
        for cid, append in self._appends:
            (taken if cid in wanted else kept).append((cid, append))
        self._appends = kept
        return [self._forget(cid, append) for cid, append in taken]

    def take(self, limit: int = DRAIN_RECORDS) -> list[Append]:
        """The oldest deferred appends, ``limit`` records' worth: a larger one is split
        (nobody waits for its answer, so its parts can be written apart)."""
        taken: list[Append] = []
        appends = self._appends
        while appends and limit > 0:
            cid, append = appends[0]
            records = append.records
            if len(records) > limit:
                appends[0] = (cid, dataclasses.replace(append, records=records[limit:]))
                self.records -= limit
                taken.append(dataclasses.replace(append, records=records[:limit]))
                break
            appends.popleft()
            limit -= len(records)
            taken.append(self._forget(cid, append))
        return taken

    def take_all(self) -> list[Append]:
        taken = [self._forget(cid, a) for cid, a in self._appends]
        self._appends.clear()
        return taken

    def _forget(self, cid: str, append: Append) -> Append:
        left = self._clients[cid] - 1
        if left:
            self._clients[cid] = left
        else:
            del self._clients[cid]
        self.records -= len(append.records)
        return append
