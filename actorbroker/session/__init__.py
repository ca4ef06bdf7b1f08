"""Session layer: pure per-client rules: inflight, packet ids, queue policy, will, expiry.

Imports the standard library, :mod:`actorbroker.codec` and
:mod:`actorbroker.routing` only. No asyncio, threads or clocks: methods take
``now`` and return effects (:mod:`.effects`) for the SessionActor to carry out.

    from actorbroker.session import SessionCore, decide, Accepted

    decision = decide(connect, policy)           # Accepted(client_id, ...) or Refused
    core = SessionCore(decision.client_id)
    effects = core.attach(connect, now)          # [Send((ConnAck(...), ...)), ...]
    effects = core.handle_all(packets, now)      # Route, Send, RequestSubscribe, Close, ...
    effects = core.deliver(message, qos, now)    # Send, or queued, or Dropped
"""

from .authorization import Grants, is_sys
from .config import SessionConfig, coalesce
from .connect import (
    Accepted,
    ConnectDecision,
    ConnectPolicy,
    Refused,
    auth_method_served,
    check_connect,
    decide,
    keepalive_limit,
    moved,
    new_client_id,
    refuse,
)
from .core import SessionCore
from .effects import (
    EXPIRY_TIMER,
    CancelTimer,
    Close,
    DropReason,
    Dropped,
    Effect,
    EndSession,
    HandBackShared,
    PublishWill,
    Reauthenticate,
    RequestSubscribe,
    RequestUnsubscribe,
    RevokeSubscriptions,
    Route,
    Send,
    SetKeepAlive,
    StartTimer,
)
from .lifecycle import LifecycleError, SessionState
from .message import AppMessage, Delivery
from .packet_ids import PacketIdAllocator, PacketIdsExhaustedError
from .qos_inbound import InboundState
from .qos_outbound import OutboundState
from .queue import QueuePolicy
from .quota import PublishQuota, TokenBucket
from .subscriptions import SubscriptionLimits

__all__ = [
    "Grants",
    "is_sys",
    "EXPIRY_TIMER",
    "Accepted",
    "AppMessage",
    "CancelTimer",
    "Close",
    "ConnectDecision",
    "ConnectPolicy",
    "Delivery",
    "DropReason",
    "Dropped",
    "Effect",
    "EndSession",
    "HandBackShared",
    "InboundState",
    "LifecycleError",
    "OutboundState",
    "PacketIdAllocator",
    "PacketIdsExhaustedError",
    "PublishWill",
    "Reauthenticate",
    "PublishQuota",
    "QueuePolicy",
    "Refused",
    "RequestSubscribe",
    "RequestUnsubscribe",
    "RevokeSubscriptions",
    "Route",
    "SessionConfig",
    "SessionCore",
    "SessionState",
    "Send",
    "SetKeepAlive",
    "StartTimer",
    "SubscriptionLimits",
    "TokenBucket",
    "auth_method_served",
    "check_connect",
    "coalesce",
    "decide",
    "keepalive_limit",
    "moved",
    "new_client_id",
    "refuse",
]
