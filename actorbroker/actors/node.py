"""Actors layer: what every actor of one node shares: settings, names, metrics. Stdlib, pykka, config, session.

A :class:`Node` is built once, from the configuration, by
:func:`actorbroker.actors.tree.build_node`, and handed to every actor's
constructor. It is frozen: nothing rewrites it while the node runs. It holds
no actor state of its own: the name table (:class:`~.names.Names`, which also
names the node's singletons, so that a restarted one is found by name), the
counters (:class:`~actorbroker.metrics.BrokerMetrics`), the transport's
counters (read by ``$SYS``) and how sessions use the commit log.

:class:`NodeSettings` turns a :class:`~actorbroker.config.Config` into what
the cores want: the session core's :class:`~actorbroker.session.SessionConfig`,
the CONNECT policy, the retained limits, the ``$SYS`` interval.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from collections.abc import Iterator
from typing import Any, Protocol

from pykka import ActorRef

from actorbroker.auth import Authenticators, ClientIdPatterns, Security
from actorbroker.config import Config
from actorbroker.metrics import BrokerMetrics
from actorbroker.routing import SharedStrategy
from actorbroker.session import (
    AppMessage, ConnectPolicy, PublishQuota, QueuePolicy, SessionConfig, SubscriptionLimits,
)
from actorbroker.session.capabilities import Mqtt5Policy

from actorbroker.session.backoff import BackoffPolicy

from .connect.owners import Owners
from .sessions.journal.settings import DurabilitySettings
from .names import Names

__all__ = ["Node", "NodeSettings", "StatsSource"]


class StatsSource(Protocol):
    """The transport's counters as ``$SYS`` reads them (``TransportStats`` fits)."""

    def snapshot(self) -> dict[str, int]: ...


class _NoStats:
    def snapshot(self) -> dict[str, int]:
        return {}


@dataclass(frozen=True, slots=True)
class NodeSettings:
    """The limits and knobs the actors apply (see :meth:`from_config`)."""

    session: SessionConfig = field(default_factory=SessionConfig)
    #: The CONNECT rules that need no state (session/connect.py), the
    #: redirection of a node that moved for good among them.
    connect: ConnectPolicy = field(default_factory=ConnectPolicy)
    max_retained: int = 0            # 0: unlimited
    sys_interval: float = 10.0       # 0: no $SYS
    topic_idle: float = 30.0         # seconds before an unused topic actor stops
    #: A topic routed again within this many seconds is hot and gets a topic actor;
    #: a cold one's publishes the registry delivers itself (0: every topic gets one).
    topic_hot_window: float = 1.0
    session_shards: int = 8
    topic_shards: int = 8
    node_name: str = "actorbroker"
    shared_strategy: SharedStrategy = SharedStrategy.ROUND_ROBIN
    #: Authenticators by method name (MQTT 5 enhanced authentication) and the
    #: user name / password check; see actorbroker.auth.
    auth: Authenticators | None = None
    allow_anonymous: bool = True
    #: The user files and the ACL as loaded now (actorbroker.auth.Security; reloadable).
    security: Security | None = None
    use_username_as_clientid: bool = False
    #: Client ids each user may take (empty: any) and users who may take any session.
    client_id_patterns: ClientIdPatterns = ClientIdPatterns(())
    takeover_users: frozenset[str] = frozenset()
    #: Seconds a refused login waits for its CONNACK.
    login_failure_delay: float = 1.0
    #: Seconds a connected subscriber may hold its publishers back (actors/backpressure.py).
    backpressure_timeout: float = 1.0
    #: Test-only: session and topic actors crash on CrashForTest (actors/faults.py).
    fault_injection: bool = False

    @property
    def server_reference(self) -> str:
        """MQTT 5 redirection: where clients should go ("" none)."""
        return self.connect.server_reference

    @property
    def server_moved(self) -> bool:
        """Whether the server moved for good (0x9D, new clients refused) or only for now
        (0x9C at shutdown)."""
        return self.connect.server_moved

    @classmethod
    def from_config(cls, config: Config, **overrides: Any) -> NodeSettings:
        """The settings a :class:`Config` describes; keywords replace single fields."""
        limits = config.limits
        queue = QueuePolicy(
            max_inflight=limits.max_inflight_messages,
            max_queued_messages=limits.max_queued_messages,
            max_queued_bytes=limits.max_queued_bytes,
            queue_qos0=limits.queue_qos0_messages,
        )
        v5 = config.mqtt5
        mqtt5 = Mqtt5Policy(
            max_session_expiry=v5.max_session_expiry_interval or None,
            receive_maximum=v5.receive_maximum,
            topic_alias_maximum=v5.topic_alias_maximum,
            outbound_topic_aliases=v5.outbound_topic_aliases,
            max_packet_size=limits.max_packet_size,
            max_keepalive=limits.max_keepalive,
            wildcard_available=v5.wildcard_subscriptions,
            subscription_ids_available=v5.subscription_identifiers,
            shared_available=v5.shared_subscriptions,
            response_information_prefix=v5.response_information_prefix,
        )
        # AuthError (the broker does not start) if a file cannot be used.
        security = Security(password_file=config.auth.password_file,
                            scram_file=config.auth.scram_credentials_file,
                            acl_file=config.auth.acl_file, allow_anonymous=config.auth.anonymous)
        strategies = {"round_robin": SharedStrategy.ROUND_ROBIN, "random": SharedStrategy.RANDOM,
                      "hash_clientid": SharedStrategy.HASH}
        values: dict[str, Any] = {
            "session": SessionConfig(
                queue=queue, max_qos=limits.max_qos, retain_available=config.retained.enabled,
                mqtt5=mqtt5,
                publish_quota=PublishQuota(limits.max_publish_rate, limits.max_publish_burst),
                subscription_limits=SubscriptionLimits(limits.max_subscriptions,
                                                       limits.max_topic_length,
                                                       limits.max_topic_levels),
            ),
            "connect": ConnectPolicy(
                protocol_levels=frozenset({3, 4, 5}),
                max_client_id_length=limits.max_client_id_length,
                max_qos=limits.max_qos,
                retain_available=config.retained.enabled,
                max_keepalive=limits.max_keepalive,
                server_moved=bool(v5.server_reference) and v5.redirect == "server_moved",
                server_reference=v5.server_reference,
            ),
            "shared_strategy": strategies[v5.shared_subscription_strategy],
            "allow_anonymous": config.auth.anonymous,
            "security": security,
            "auth": security.authenticators(),
            "use_username_as_clientid": config.auth.use_username_as_clientid,
            "client_id_patterns": ClientIdPatterns(config.auth.client_id_patterns),
            "takeover_users": frozenset(config.auth.takeover_users),
            "login_failure_delay": config.auth.login_failure_delay,
            "backpressure_timeout": limits.backpressure_timeout,
            "max_retained": config.retained.max_retained_messages,
            "sys_interval": config.sys.interval,
            "node_name": config.node.name,
        }
        values.update(overrides)
        return cls(**values)


@dataclass(frozen=True, slots=True)
class Node:
    """Everything the actors of one broker node share (loop thread only; see the module doc)."""

    settings: NodeSettings = field(default_factory=NodeSettings)
    names: Names = field(default_factory=Names)
    #: Which user each session belongs to (actors/connect/owners.py).
    owners: Owners = field(default_factory=Owners)
    metrics: BrokerMetrics = field(default_factory=BrokerMetrics)
    stats: StatsSource = field(default_factory=_NoStats)
    #: How sessions use the commit log (actors.durability); None without storage.
    durability: DurabilitySettings | None = None
    #: Backoff of in-session resends to MQTT 3.x clients ([retry]); None: off.
    retransmit: BackoffPolicy | None = None
    started_at: float = field(default_factory=time.monotonic)
    _epochs: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def next_epoch(self) -> int:
        """A session epoch never handed out before on this node (see actors.messages)."""
        return next(self._epochs)

    def registry(self) -> ActorRef[Any]:
        """The registry's current ref (RuntimeError before it started): ``names.registry()``."""
        return self.names.registry()

    def own_message(self, topic: str, payload: bytes, *, retain: bool, now: float) -> AppMessage:
        """A message the broker publishes itself (``$SYS``): no publisher."""
        return AppMessage(topic, payload, 0, retain, publisher=None, received_at=now)
