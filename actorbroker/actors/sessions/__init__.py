"""Actors layer: what a session actor is made of, beyond its shell (actors/session*.py). Imports as :mod:`actorbroker.actors` does.

* :mod:`.journal`: what a session writes to the commit log and the output
  it holds until the log has it (:class:`~.journal.log.LogJournal`), or
  nothing at all without storage (:class:`~.journal.memory.MemoryJournal`).
"""
