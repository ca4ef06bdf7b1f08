"""Session layer: the limits and capabilities a session core is configured with. Stdlib and codec only.

One :class:`SessionConfig` per listener (or per broker) is shared by every
session core; :class:`~actorbroker.session.queue.QueuePolicy` holds the
window and queue limits, :func:`coalesce` merges adjacent sends.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from actorbroker.codec import Packet

from .capabilities import Mqtt5Policy
from .effects import Effect, Send
from .queue import QueuePolicy
from .quota import PublishQuota
from .subscriptions import SubscriptionLimits

__all__ = ["SessionConfig", "coalesce"]


@dataclass(frozen=True, slots=True)
class SessionConfig:
    """Per-session limits and broker capabilities.

    ``session_expiry``: seconds a detached persistent MQTT 3 session is kept
    (None: until the client cleans it, as MQTT 3.x says; Mosquitto's
    ``persistent_client_expiration``); an MQTT 5 session keeps what its
    client negotiated (``mqtt5``). The keepalive is enforced by the
    transport ([MQTT-3.1.2-24]), not here. ``publish_quota``: PUBLISH packets
    a client may send per second and in a burst (see :mod:`.quota`).
    ``subscription_limits``: how many filters, how long and how deep (see
    :class:`~.subscriptions.SubscriptionLimits`).
    """

    queue: QueuePolicy = field(default_factory=QueuePolicy)
    max_qos: int = 2
    retain_available: bool = True
    session_expiry: float | None = None
    mqtt5: Mqtt5Policy = field(default_factory=Mqtt5Policy)
    publish_quota: PublishQuota = field(default_factory=PublishQuota)
    subscription_limits: SubscriptionLimits = field(default_factory=SubscriptionLimits)

    def __post_init__(self) -> None:
        if self.max_qos not in (0, 1, 2):
            raise ValueError(f"max_qos must be 0, 1 or 2, not {self.max_qos!r}")
        if self.session_expiry is not None and self.session_expiry < 0:
            raise ValueError("session_expiry must be >= 0 or None")


def coalesce(effects: Iterable[Effect]) -> list[Effect]:
    """``effects`` with each run of adjacent ``Send`` merged into one (one write)."""
    merged: list[Effect] = []
    run: list[Packet] = []
    for effect in effects:
        if isinstance(effect, Send):
            run.extend(effect.packets)
            continue
        if run:
            merged.append(Send(tuple(run)))
            run = []
        merged.append(effect)
    if run:
        merged.append(Send(tuple(run)))
    return merged
