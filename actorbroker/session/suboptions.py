"""Session layer: MQTT 5 subscription options applied to one delivery. Stdlib and codec only.

A client may hold several subscriptions whose filters match one topic. The
broker sends it **one copy** of each message (the spec allows one per
subscription or one per client, section 3.3.4; this broker sends one per
client, as it does for MQTT 3.1.1), and that copy carries what the matching
subscriptions ask for:

* No Local ([MQTT-3.8.3-3]): a subscription with it never gets messages the
  same client id published; when every matching subscription has it, the
  client gets no copy at all;
* the QoS is the highest granted by the subscriptions that remain;
* the Subscription Identifier of each of them that has one, in ascending
  order ([MQTT-3.3.4-3], [MQTT-3.3.4-4], [MQTT-3.3.4-5]);
* RETAIN as published when one of them has Retain As Published
  ([MQTT-3.3.1-12]); otherwise RETAIN 0 on live forwarding ([MQTT-3.3.1-13]).

Subscriptions without any option (the MQTT 3 kind) carry no
:class:`SubOptions` at all; only the topic actor's per-client list of
matches (:data:`Match`) goes through :func:`select`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from actorbroker.codec import Subscription
from actorbroker.codec.frozen import quick_init

__all__ = ["Match", "Selected", "SubOptions", "select"]


@quick_init
@dataclass(frozen=True, slots=True)
class SubOptions:
    """The options of one subscription that matter when forwarding."""

    no_local: bool = False
    retain_as_published: bool = False
    subscription_id: int | None = None

    @classmethod
    def of(cls, subscription: Subscription, subscription_id: int | None) -> SubOptions | None:
        """The options of ``subscription``, None when it has none (the common case)."""
        if not (subscription.no_local or subscription.retain_as_published or subscription_id):
            return None
        return cls(subscription.no_local, subscription.retain_as_published, subscription_id)


#: One subscription of a client matching a topic: (granted QoS, its options or None).
Match = tuple[int, "SubOptions | None"]


@quick_init
@dataclass(frozen=True, slots=True)
class Selected:
    """What the copy for one client carries."""

    qos: int
    subscription_ids: tuple[int, ...]
    retain_as_published: bool


def select(matches: Sequence[Match], publisher: str | None, client_id: str) -> Selected | None:
    """The copy ``client_id`` gets of a message from ``publisher``, or None (see the module doc)."""
    own = publisher is not None and publisher == client_id
    qos = -1
    ids: list[int] = []
    as_published = False
    for granted, options in matches:
        if options is not None:
            if own and options.no_local:
                continue
            if options.subscription_id:
                ids.append(options.subscription_id)
            as_published = as_published or options.retain_as_published
        if granted > qos:
            qos = granted
    if qos < 0:
        return None
    return Selected(qos, tuple(sorted(set(ids))), as_published)
