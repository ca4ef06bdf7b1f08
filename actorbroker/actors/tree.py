"""Actors layer: the node's supervision tree, declared from the configuration. Stdlib, pykka, supervisors, config.

:func:`build_node` computes the frozen :class:`~.node.Node` once;
:func:`root_children` declares the tree that :class:`actorbroker.app.Broker`
starts under its root supervisor (one_for_all)::

    core (rest_for_one)
      storage    StorageActor (a thread actor): opens and folds the log first
      registry   RegistryActor: subscriptions, retained index, topic actors
      topics     ShardedSupervisor of TopicActors (temporary; the registry starts them)
      sessions   ShardedSupervisor of SessionActors (transient; the gateway starts them)
      keeper     KeeperActor: hibernated sessions' placeholders, expiry, ticks
      sys        SysActor: $SYS topics
    listeners (one_for_one, last)
      listener-N, http   given by the caller (they need its sockets and handles)

With ``[storage] durability`` memory, or without a data directory (a broker
embedded in code that was given none), there is no storage actor and no
keeper: sessions live in memory only. A storage crash restarts everything
after it (rest_for_one): sessions and the registry reload their state from
the log. Stopping the root stops children in reverse order: listeners first
(stop accepting, close every connection, so sessions see ConnectionLost and
publish Wills while the core still runs), then the core.

The singletons are found by name (:class:`~.names.Singleton`), never through
a ref kept at start: :func:`registered` names each one in the node's table as
its supervisor starts it, and again on every restart.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from pykka import ActorRef

from actorbroker.config import Config
from actorbroker.session.backoff import BackoffPolicy
from supervisors import ChildKind, ChildSpec, Intensity, ShardedSupervisor, Strategy, supervisor_spec

from .connect.owners import Owners
from .names import Names, Singleton
from .node import Node, NodeSettings, StatsSource
from .sessions.journal.settings import DurabilitySettings
from .storage.actor import StorageActor, StorageSettings
from .storage.keeper import KeeperActor
from .storage.recovery import internal_backoff
from .topics.registry import RegistryActor
from .topics.sys_topics import SysActor

__all__ = ["CORE_INTENSITY", "SESSION_SHARD_INTENSITY", "STORAGE_START_TIMEOUT", "build_node",
           "core_children", "registered", "root_children"]

#: Opening and folding a large log takes a while (about 5 s per million records).
STORAGE_START_TIMEOUT = 600.0
#: A session crash restarts that session; only a storm of them escalates.
SESSION_SHARD_INTENSITY = Intensity(max_restarts=100, period=10.0)
CORE_INTENSITY = Intensity(max_restarts=3, period=10.0)


def _has_log(config: Config) -> bool:
    """Whether the node keeps a commit log (a storage actor and a keeper)."""
    return config.storage.durability != "memory" and config.node.data_dir is not None


def build_node(config: Config, settings: NodeSettings, *, stats: StatsSource,
               owners: Owners) -> Node:
    """The node the tree of ``config`` runs: how sessions journal, whether 3.x resends."""
    retry = config.retry
    retransmit = (BackoffPolicy(retry.base, retry.factor, max(retry.base, retry.cap), retry.jitter)
                  if retry.mqtt3_in_session else None)
    durability = DurabilitySettings(
        retry=internal_backoff(config), max_queued_messages=0,  # offsets: bounded by bytes
        max_queued_bytes=config.storage.durable_queue_bytes,
        hibernate=not config.limits.queue_qos0_messages,
        log_qos0=config.storage.log_qos0) if _has_log(config) else None
    return Node(settings, stats=stats, owners=owners, durability=durability,
                retransmit=retransmit)


def registered(names: Names, name: Singleton,
               start: Callable[[], ActorRef[Any]]) -> Callable[[], ActorRef[Any]]:
    """``start``, naming what it started ``name`` (a ChildSpec's start; each restart renames)."""
    def start_registered() -> ActorRef[Any]:
        ref = start()
        names.register(name, ref)
        return ref
    return start_registered


def core_children(config: Config, node: Node) -> list[ChildSpec]:
    """The core supervisor's children, in start order (see the module doc)."""
    settings, names = node.settings, node.names
    durable = _has_log(config)
    storage = [ChildSpec(id="storage", shutdown=60.0, start_timeout=STORAGE_START_TIMEOUT,
                         start=registered(names, Singleton.STORAGE, partial(
                             StorageActor.start, StorageSettings.from_config(config), node)))
               ] if durable else []
    keeper = [ChildSpec(id="keeper", start=registered(names, Singleton.KEEPER,
                                                      partial(KeeperActor.start, node)))
              ] if durable else []
    return [
        *storage,
        ChildSpec(id="registry",
                  start=registered(names, Singleton.REGISTRY, partial(RegistryActor.start, node))),
        ChildSpec(id="topics", kind=ChildKind.SUPERVISOR, start=registered(
            names, Singleton.TOPICS,
            partial(ShardedSupervisor.start, settings.topic_shards, name="topics"))),
        ChildSpec(id="sessions", kind=ChildKind.SUPERVISOR, start=registered(
            names, Singleton.SESSIONS,
            partial(ShardedSupervisor.start, settings.session_shards,
                    shard_intensity=SESSION_SHARD_INTENSITY, name="sessions"))),
        *keeper,
        ChildSpec(id="sys", start=partial(SysActor.start, node)),
    ]


def root_children(config: Config, node: Node, listeners: Sequence[ChildSpec]) -> list[ChildSpec]:
    """The root supervisor's children: the core, then ``listeners`` (started last)."""
    # The core waits for the storage actor to fold the log (STORAGE_START_TIMEOUT).
    core = dataclasses.replace(
        supervisor_spec("core", core_children(config, node), strategy=Strategy.REST_FOR_ONE,
                        intensity=CORE_INTENSITY), start_timeout=STORAGE_START_TIMEOUT)
    return [core, supervisor_spec("listeners", listeners, strategy=Strategy.ONE_FOR_ONE)]
