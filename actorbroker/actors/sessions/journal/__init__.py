"""Actors layer: a session's journal, what it writes to the commit log and the output held until the log has it. Imports as :mod:`actorbroker.actors` does.

* :mod:`.log`: :class:`~.log.LogJournal`, with storage on (fsync, os): the
  records of what the session saw and did, and its effects held in a
  :class:`~.hold.HoldQueue` (:mod:`.hold`) until they are stored;
* :mod:`.records`: the records a core call's effects make;
* :mod:`.resumed`: a durable session's queue as log offsets;
* :mod:`.wills`: what is journaled about Wills, and a Will taken back from the log.
"""
