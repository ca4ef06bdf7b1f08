"""Actors layer: how sessions use the commit log, as the node holds it. Stdlib, session.

A leaf module: the node imports it (actors/node.py), the journal reads it
(:class:`~.log.LogJournal`, :class:`~.resumed.ResumedQueue`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from actorbroker.session.backoff import BackoffPolicy

__all__ = ["DurabilitySettings"]


@dataclass(frozen=True, slots=True)
class DurabilitySettings:
    """How sessions use the commit log (see :class:`~.log.LogJournal`)."""

    retry: BackoffPolicy = dataclasses.field(default_factory=lambda: BackoffPolicy(0.1, 2.0, 10.0))
    max_queued_messages: int = 1000
    max_queued_bytes: int = 0
    hibernate: bool = True
    log_qos0: bool = False  # [storage] log_qos0: QoS 0 PublishAccepted records, fire-and-forget
