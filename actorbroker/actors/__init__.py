"""Actors layer: the broker's actors on the loop runtime of ``supervisors``.

Imports the session, routing and codec cores, :mod:`actorbroker.metrics`,
:mod:`actorbroker.ports`, :mod:`actorbroker.config` and ``supervisors``;
never the transport (import-linter checks it): connections are used through
the ``Connection`` protocol of :mod:`actorbroker.ports` only, and :mod:`actorbroker.app`
wires the two together.

* :class:`SessionActor` (one per client id, outlives its connections),
  :class:`TopicActor` (one per concrete topic), :class:`RegistryActor`
  (subscriptions, retained messages, topic actors), :class:`SysActor`
  (``$SYS``), :class:`ListenerActor` (one listener);
* :class:`SessionGateway` turns a CONNECT into a session port;
* :class:`Names` is the node's name table, :class:`Node` what all share.

Grouped by job: :mod:`.connect` (from a CONNECT to a session, listeners),
:mod:`.topics` (registry, topic actors, shared groups, ``$SYS``),
:mod:`.storage` (the storage actor and the keeper), :mod:`.tree` (what the
commit log adds to the tree); the session actor's modules, the name table,
the node and the messages between actors are at the top.

How a message travels: docs/architecture.md.
"""

from .connect.gateway import ConnectionPort, SessionGateway
from .connect.listener import ListenerActor, ListenerHandle
from .names import Names
from .node import Node, NodeSettings
from .session import SessionActor
from .topics.registry import RegistryActor
from .topics.sys_topics import SysActor, sys_values
from .topics.topic import TopicActor

__all__ = [
    "ConnectionPort",
    "ListenerActor",
    "ListenerHandle",
    "Names",
    "Node",
    "NodeSettings",
    "RegistryActor",
    "SessionActor",
    "SessionGateway",
    "SysActor",
    "TopicActor",
    "sys_values",
]
