"""Actors layer: the ``auth files`` reload of a running node. Stdlib, supervisors, auth.

:func:`reload_auth_files` reads the password, SCRAM and ACL files again
(``auth.Security.reload``: all or nothing, AuthError keeps the old ones in
force) and, with an ACL, tells every session actor ``Reauthorize``: each
re-checks its client's subscriptions against the new rules (revoking what
they no longer grant) and checks its next PUBLISH and SUBSCRIBE by them. A
hibernated session (an ``Asleep`` entry, no actor) is checked when
its client connects again. The broker runs it on SIGHUP and when the files
change (``actorbroker/reload.py``).
"""

from __future__ import annotations

from supervisors import Teller, tell_if_alive

from ..messages import Reauthorize
from ..names import Asleep, Waking
from ..node import Node

__all__ = ["reload_auth_files"]


def reload_auth_files(node: Node) -> str:
    """Reload the node's user and ACL files (loop thread); what was loaded, for the log."""
    security = node.settings.security
    assert security is not None
    loaded = security.reload()
    if security.acl_file:
        # Teller: the table also holds hibernated sessions' entries (Asleep, Waking).
        refs: list[Teller] = list(node.names.sessions.values())
        for ref in refs:
            if not isinstance(ref, Asleep | Waking):
                # One that stopped meanwhile: its successor takes the ACL at its attach.
                tell_if_alive(ref, Reauthorize())
    return "; ".join(loaded)
