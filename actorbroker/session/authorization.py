"""Session layer: what the core asks of an ACL, and the ``$SYS`` rule. Stdlib only.

The core consults a :class:`Grants` (``auth.ClientAcl`` is one: the ACL
file's rules for one client id and user name) when the broker has an ACL,
and nothing otherwise: without an ACL the only cost on the publish path is
one attribute test. Clients never publish into ``$SYS``, ACL or not.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["Grants", "is_sys"]


class Grants(Protocol):
    """One client's rights, as the session core asks for them."""

    def may_publish(self, topic: str) -> bool:
        """True if the client may publish to topic name ``topic``."""

    def may_subscribe(self, topic_filter: str) -> bool:
        """True if the client may subscribe to ``topic_filter``."""

    def may_read(self, topic: str) -> bool:
        """True if the client may receive a message of topic name ``topic``."""


def is_sys(topic: str) -> bool:
    """True for ``$SYS`` and the topics under it, which only the broker publishes to."""
    return topic.startswith("$SYS") and (len(topic) == 4 or topic[4] == "/")
