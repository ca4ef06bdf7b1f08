"""Actors layer: what a session actor is made of, beyond its shell (actors/session*.py). Imports as :mod:`actorbroker.actors` does.

* :mod:`.host`: the protocol of what the components below may use of the
  actor (``SessionHost``);
* :mod:`.output`: deliveries and writes to the client (``Output``), the
  fan-out hot path;
* :mod:`.retransmit`: MQTT 3.x resends while connected (``Retransmitter``);
* :mod:`.journal`: what a session writes to the commit log and the output
  it holds until the log has it (:class:`~.journal.log.LogJournal`), or
  nothing at all without storage (:class:`~.journal.memory.MemoryJournal`).
"""
