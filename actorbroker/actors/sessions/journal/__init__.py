"""Actors layer: a session's journal, what it writes to the commit log and the output held until the log has it. Imports as :mod:`actorbroker.actors` does.

One interface (:class:`~.interface.Journal`), two implementations, chosen
once when the session actor starts (:func:`~.interface.journal_for`), never
re-checked per effect:

* :mod:`.log`: :class:`~.log.LogJournal`, with storage on (fsync, os): the
  records of what the session saw and did, and its effects held in a
  :class:`~.hold.HoldQueue` (:mod:`.hold`) until they are stored;
  :mod:`.records` (the records a core call's effects make), :mod:`.resumed`
  (a durable session's queue as log offsets) and :mod:`.wills` (what is
  journaled about Wills, and a Will taken back from the log) serve it;
* :mod:`.memory`: :class:`~.memory.MemoryJournal`, without storage: nothing
  written, nothing held;
* :mod:`.settings`: :class:`~.settings.DurabilitySettings`, how sessions use
  the log (a leaf: the node imports it).

This package imports nothing itself, so that the node can import the
settings without the journal's own imports (the topics and storage actors).
"""
