"""Actors layer: the children the commit log adds to the core supervisor. Stdlib, pykka, supervisors, config.

With ``[storage] durability`` fsync or os, the core supervisor (rest_for_one)
runs::

    storage    StorageActor (a thread actor): opens and folds the log first
    registry   ... its subscriptions and retained messages loaded from storage
    topics, sessions
    keeper     KeeperActor: hibernated sessions' placeholders, expiry, ticks
    sys

A storage crash restarts everything after it (rest_for_one): sessions and
the registry reload their state from the log. With durability memory, or
without a data directory (a broker embedded in code that was given none),
there is no storage actor and no keeper: sessions live in memory only.
"""

from __future__ import annotations

from typing import Any

from pykka import ActorRef

from actorbroker.config import Config
from supervisors import ChildSpec

from actorbroker.session.backoff import BackoffPolicy

from .sessions.journal.settings import DurabilitySettings
from .node import Node
from .storage.actor import StorageActor, StorageSettings
from .storage.keeper import KeeperActor
from .storage.recovery import internal_backoff

__all__ = ["durable_children"]

#: Opening and folding a large log takes a while (about 5 s per million records).
STORAGE_START_TIMEOUT = 600.0


def durable_children(config: Config, node: Node, *,
                     storage: StorageSettings | None = None) -> tuple[list[ChildSpec],
                                                                     list[ChildSpec]]:
    """(children before the registry, children after the sessions); both empty in memory mode."""
    retry = config.retry
    node.retransmit = BackoffPolicy(retry.base, retry.factor, max(retry.base, retry.cap),
                                    retry.jitter) if retry.mqtt3_in_session else None
    if storage is None and (config.storage.durability == "memory" or config.node.data_dir is None):
        node.durability = None
        return [], []
    settings = storage or StorageSettings.from_config(config)
    limits = config.limits
    node.durability = DurabilitySettings(
        retry=internal_backoff(config), max_queued_messages=0,  # offsets: bounded by bytes
        max_queued_bytes=config.storage.durable_queue_bytes,
        hibernate=not limits.queue_qos0_messages, log_qos0=config.storage.log_qos0)
    refs = node.refs

    def start_storage() -> ActorRef[Any]:
        refs.storage = StorageActor.start(settings, node)
        return refs.storage

    def start_keeper() -> ActorRef[Any]:
        refs.keeper = KeeperActor.start(node)
        return refs.keeper

    return ([ChildSpec(id="storage", start=start_storage, shutdown=60.0,
                       start_timeout=STORAGE_START_TIMEOUT)],
            [ChildSpec(id="keeper", start=start_keeper)])
