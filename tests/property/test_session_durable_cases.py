"""Cases the durable session machine found, replayed step by step as regression tests.

Each runs the machine's own rules (test_session_durable_machine.py) in the
order the search found. The two Clean Start cases were bugs of the actors
layer, each failing before its fix:

* a chunk of the resumed queue still being fetched when a Clean Start
  discarded the session was fed to the new session on arrival
  (``ResumedQueue.discard`` left ``_fetching`` set; now it clears it);
* a ``Deliver`` for the discarded subscriptions was taken by the new session
  while the ``RequestUnsubscribe(None)`` that renews the epoch waited in the
  gate (the epoch was renewed only when the effect was carried out; now
  ``LogJournal.intercept`` renews it when it sees the effect).

The deep search found the first as "QoS 1 out of order": messages queued
for the old session reached the clean one behind a newer message.
"""

from __future__ import annotations

from test_session_durable_machine import DurableSessionMachine


def machine() -> DurableSessionMachine:
    m = DurableSessionMachine()
    m.start(window=1, queue_limit=0, v5=True)
    return m


def test_a_woken_session_delivers_its_queue_in_order() -> None:
    m = machine()
    m.lose_connection()
    m.busy_rounds(2)
    assert m.live() is None  # hibernated: its queue is in the log only
    m.publish([1, 2, 1, 2], True)
    m.connect(False, True, 1)  # woken: the queue comes back as offsets, fetched in chunks
    m.settle_everything()
    assert m.app == [1, 2, 3, 4]
    m.teardown()


def test_a_clean_start_drops_the_chunk_on_its_way() -> None:
    m = machine()
    m.lose_connection()
    m.busy_rounds(2)
    m.publish([1, 1], True)
    m.connect(False, True, 3)  # woken: a Fetch of the spool is on its way
    m.lose_connection()
    m.connect(True, True, 3)  # Clean Start: the old session's queue is discarded
    m.settle_everything()
    assert m.app == [], "the discarded session's messages reached the clean one"
    m.teardown()


def test_a_clean_start_drops_deliveries_of_the_old_subscriptions() -> None:
    m = machine()
    m.publish([1], False)  # written: routed at once, its Deliver on its way to the session
    m.lose_connection()
    m.connect(True, True, 3)  # Clean Start on the same actor, its records not stored yet
    m.handle(m.boxes["topic"].popleft())  # the Deliver comes before the storage's answer
    m.settle_everything()
    assert m.app == [], "a message of the discarded subscription reached the clean session"
    m.teardown()
