"""Actors layer: who may connect, as whom, with which client id and Will. Stdlib, codec, session, auth.

Rows 6 to 11 of the CONNECT rules (the table in ``session/connect.py``),
the ones that need the node's state: the gateway asks :meth:`Login.admit`
for every CONNECT that passed the stateless ones (``session.decide``). Each
refusal is a ``session.Refused`` built by ``session.refuse``. In order:

1. **Password** (rows 6 and 7; a user file is configured and the CONNECT has a user
   name: :meth:`Login.password_needed`): checked against the user store
   (``auth.Security``) off the loop (``password_checks``), the result given
   to :meth:`Login.admit` as ``checked``. An address that failed too often
   is refused without a check (:meth:`Login.throttled`, ``auth.LoginThrottle``).
   A failure is refused with 0x04 (MQTT 5: 0x86, bad user name or
   password) *after* ``[auth] login_failure_delay`` (``Refused.delay``:
   the gateway schedules the CONNACK, the loop goes on) and logged with the
   user name and address, never the password. An MQTT 5 CONNECT naming an
   Authentication Method skips this: its exchange decides (``actors.connect.enhanced_auth``).
2. **Anonymous** (row 8): a client that did not authenticate is refused with 0x05
   (MQTT 5: 0x87) unless ``allow_anonymous``.
3. ``use_username_as_clientid`` (row 9): the client id becomes the user name (0x05
   without one). ``client_id_patterns`` (row 10): the client id must match one of
   them (``auth.ClientIdPatterns``; 0x05, MQTT 5: 0x87).
4. **Will**: a Will topic in ``$SYS``, or one the ACL does not let the
   client write, is dropped (logged): the client connects, its Will is
   never published, as Mosquitto 2 does (it accepts the CONNECT and checks
   the Will when publishing it; the test against Mosquitto compares both).
5. **Ownership** (row 11): the client id's session belongs to another user
   (``owners.Owners``): 0x05 (MQTT 5: 0x87), unless the client's user is
   one of ``takeover_users``, who use the session and leave it its owner's.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass

from actorbroker.auth import LoginThrottle
from actorbroker.codec import Connect, ConnectReturnCode
from actorbroker.session import Refused, is_sys, refuse

from ..node import NodeSettings
from .owners import Owners

__all__ = ["Admitted", "Login"]

log = logging.getLogger("actorbroker.auth")

_RC = ConnectReturnCode


@dataclass(frozen=True, slots=True)
class Admitted:
    """A client let in: its CONNECT (without a refused Will), client id and claim number
    (0: an enhanced authentication claims the session once it succeeded)."""

    connect: Connect
    client_id: str
    claim: int


class Login:
    """The CONNECT policy of one node (see the module doc); loop thread only."""

    __slots__ = ("_settings", "_owners", "_clock", "throttle")

    def __init__(self, settings: NodeSettings, owners: Owners, clock: Callable[[], float]) -> None:
        self._settings = settings
        self._owners = owners
        self._clock = clock
        self.throttle = LoginThrottle()

    def admit(self, host: str, connect: Connect, client_id: str, *,
              verified: bool = False, checked: bool | None = None) -> Admitted | Refused:
        """Steps 1 to 5 for a CONNECT from ``host`` that passed the protocol checks
        (``verified``: its user name is a client certificate's, which the TLS listener
        verified: no password to check; ``checked``: the result of its password check,
        None if :meth:`password_needed` said none was)."""
        refused = None if verified else self.authenticate(host, connect, checked)
        if refused is not None:
            return refused
        named = self.client_id(connect, client_id)
        if isinstance(named, Refused):
            return named
        refusal = self.will_refusal(connect, named)
        if refusal is not None:
            log.info("client %r from %s: Will dropped: %s", named[:64], host, refusal)
            connect = dataclasses.replace(connect, will=None)
        if connect.protocol_level == 5 and connect.properties.authentication_method:
            return Admitted(connect, named, 0)
        claim = self.claim(named, connect)
        if isinstance(claim, Refused):
            return claim
        return Admitted(connect, named, claim)

    def password_needed(self, connect: Connect) -> bool:
        """Whether step 1 checks a password for ``connect`` (an enhanced authentication
        decides in its own exchange)."""
        security = self._settings.security
        return (security is not None and security.has_users and connect.username is not None
                and not (connect.protocol_level == 5
                         and connect.properties.authentication_method))

    def throttled(self, host: str, connect: Connect) -> Refused | None:
        """The refusal of a login from an address that failed too often, before any check."""
        if not self.throttle.blocked(host, self._clock()):
            return None  # not counted as a failure: a retry must not extend the block
        return refuse(connect, _RC.BAD_USER_NAME_OR_PASSWORD,
                      f"login of user {(connect.username or '')[:64]!r} refused: too many "
                      f"failed logins from {host}", delay=self._settings.login_failure_delay)

    def authenticate(self, host: str, connect: Connect, checked: bool | None) -> Refused | None:
        """Steps 1 and 2: None if the client may log in."""
        settings = self._settings
        if self.password_needed(connect):
            assert connect.username is not None and checked is not None
            if checked:
                self.throttle.succeeded(host)
                return None
            self.throttle.failed(host, self._clock())
            user = connect.username[:64]  # a name of up to 64 KiB must not fill the log
            log.warning("failed login for user %r from %s", user, host)
            return refuse(connect, _RC.BAD_USER_NAME_OR_PASSWORD,
                          f"bad user name or password for user {user!r}",
                          delay=settings.login_failure_delay)
        if connect.protocol_level == 5 and connect.properties.authentication_method:
            return None
        if settings.allow_anonymous:
            return None
        return refuse(connect, _RC.NOT_AUTHORIZED,
                      "anonymous clients are not allowed ([auth] allow_anonymous)")

    def client_id(self, connect: Connect, client_id: str) -> str | Refused:
        """Step 3: the client id the session takes."""
        settings = self._settings
        if settings.use_username_as_clientid:
            if connect.username is None:
                return refuse(connect, _RC.NOT_AUTHORIZED,
                              "use_username_as_clientid: a user name is needed")
            client_id = connect.username
        patterns = settings.client_id_patterns
        if patterns and connect.client_id and not patterns.allows(client_id, connect.username):
            user = "anonymous" if connect.username is None else repr(connect.username[:64])
            return refuse(connect, _RC.NOT_AUTHORIZED,
                          f"client id {client_id[:64]!r} is not one user {user} may use "
                          f"(client_id_patterns: {patterns})")
        return client_id

    def will_refusal(self, connect: Connect, client_id: str) -> str | None:
        """Step 4: why the CONNECT's Will may not be published (None: it may, or none)."""
        will = connect.will
        if will is None:
            return None
        if is_sys(will.topic):
            return f"Will topic {will.topic[:80]!r}: only the broker publishes to $SYS"
        security = self._settings.security
        acl = None if security is None else security.acl
        if acl is not None and not acl.for_client(connect.username, client_id).may_publish(
                will.topic):
            return f"Will topic {will.topic[:80]!r} not writable for this client (acl_file)"
        return None

    def claim(self, client_id: str, connect: Connect) -> int | Refused:
        """Step 5: the claim number of the session for the CONNECT's user, or the refusal."""
        user = connect.username or ""
        claim = self._owners.claim(client_id, user,
                                   takeover=user in self._settings.takeover_users)
        if claim is None:
            return refuse(connect, _RC.NOT_AUTHORIZED, f"client id {client_id[:64]!r} belongs"
                                                       " to another user's session")
        return claim

    def taken_from(self, client_id: str, connect: Connect) -> str | None:
        """After a claim: the owner of the session a takeover user connected to (None: the
        client's own session). Its records keep naming that owner, so that a restart gives
        the session back to it, not to the operator who looked in."""
        owner = self._owners.owner(client_id)
        user = connect.username or ""
        return owner if owner is not None and self._owners.checked and owner != user else None
