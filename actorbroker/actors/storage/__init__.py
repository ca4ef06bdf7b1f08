"""Actors layer: the storage actor, owner of the commit log, and the keeper of offline sessions. Imports as :mod:`actorbroker.actors` does.

* :mod:`.actor`: :class:`~.actor.StorageActor`, the log's only writer,
  off the event loop; its start-up and housekeeping (:mod:`.recovery`,
  :mod:`.damage` for a log that lost records), its reads (:mod:`.reads`),
  its sync thread (:mod:`.sync`), a failed sync's lost offsets
  (:mod:`.lost`) and its deferred history (:mod:`.history`);
* :mod:`.keeper`: :class:`~.keeper.KeeperActor`, the offline durable
  sessions that have no actor, and their Wills;
* :mod:`.requests`: the messages to and from the storage actor and the keeper.

The commit log itself is :mod:`actorbroker.persistence`; the state folded from
it, :mod:`actorbroker.durable`.
"""
