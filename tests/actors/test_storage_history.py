"""The storage actor's deferred history (actors/storage/history.py), without the actor."""

from __future__ import annotations

from actorbroker.actors.storage.requests import Append
from actorbroker.actors.storage.history import History
from actorbroker.persistence.records import SessionConnected, Subscribed


def _subs(cid: str, n: int, reply_to: object = None) -> Append:
    return Append(tuple(Subscribed(cid, f"{cid}/{k}", 0, timestamp_us=1) for k in range(n)),
                  reply_to, 0)


def _filters(batch: list[Append]) -> list[str]:
    return [r.topic_filter for a in batch for r in a.records]


def test_only_one_clients_subscription_history_nobody_waits_for_is_deferred() -> None:
    history = History()
    waited = _subs("a", 2, reply_to=object())
    mixed = Append(_subs("a", 1).records + _subs("b", 1).records, None, 0)
    connected = Append((SessionConnected("a", timestamp_us=1),), None, 0)
    assert history.split([waited, mixed, connected, _subs("c", 3)]) == [waited, mixed, connected]
    assert history.records == 3 and bool(history)


def test_a_clients_own_history_goes_before_its_next_append_and_no_one_elses() -> None:
    history = History()
    assert history.split([_subs("a", 2), _subs("b", 2), _subs("a", 1)]) == []
    urgent_b = _subs("b", 1, reply_to=object())
    now = history.split([_subs("c", 1, reply_to=object()), urgent_b])
    assert _filters(now) == ["c/0", "b/0", "b/1", "b/0"]
    assert _filters(history.take_all()) == ["a/0", "a/1", "a/0"]
    assert not history and history.records == 0


def test_take_splits_a_large_append_and_keeps_the_order() -> None:
    history = History()
    history.split([_subs("a", 5), _subs("b", 2)])
    assert _filters(history.take(3)) == ["a/0", "a/1", "a/2"]
    assert history.records == 4
    assert _filters(history.take(3)) == ["a/3", "a/4", "b/0"]
    assert _filters(history.of({"a"})) == []  # a's history is all written
    assert _filters(history.take(3)) == ["b/1"]
    assert not history and history.records == 0
