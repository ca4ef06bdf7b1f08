"""Auth layer: the pluggable authenticator interface and the AUTH exchange table. Stdlib, codec and errors only.

MQTT 5 enhanced authentication (section 4.12) is a challenge/response
between client and server, named by an Authentication Method:

    client: CONNECT (method, data)       server: AUTH 0x18 (method, data)  ...
    client: AUTH 0x18 (method, data)     server: CONNACK 0x00 (method, final data)
                                         or a refusing CONNACK (0x87, 0x8C, ...)

and again after CONNACK for re-authentication, started by the client with
AUTH 0x19 and ended by the server with AUTH 0x00 (or DISCONNECT).

A method plugs in as an :class:`Authenticator`: ``begin(client_id)`` starts
one :class:`Mechanism`, whose ``step(data)`` turns each piece of client data
into an :data:`Outcome`: :class:`Continue` (send this data in AUTH 0x18 and
wait), :class:`Success` (done; data for the CONNACK or the final AUTH) or
:class:`Failure` (the reason code to refuse or disconnect with).
:class:`Exchange` drives a mechanism through the table below and turns a
mechanism's mistake or a step after the end into a Failure; the
:class:`Authenticators` registry maps method names to authenticators and
checks user names and passwords (for clients that send those instead).

    STARTED --continue--> CONTINUING --continue--> CONTINUING
    STARTED, CONTINUING --succeed--> SUCCEEDED
    STARTED, CONTINUING --fail--> FAILED

SUCCEEDED and FAILED are final; re-authentication starts a new Exchange.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType
from typing import Final, Protocol

from actorbroker.codec import ReasonCode

__all__ = [
    "CHART_NAME",
    "CHART_TITLE",
    "INITIAL",
    "TRANSITIONS",
    "AuthState",
    "Authenticator",
    "Authenticators",
    "Continue",
    "Exchange",
    "Failure",
    "Mechanism",
    "Outcome",
    "PasswordChecker",
    "Success",
]


class AuthState(Enum):
    """Where one authentication exchange stands."""

    STARTED = "started"
    CONTINUING = "continuing"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


CONTINUE: Final = "continue"
SUCCEED: Final = "succeed"
FAIL: Final = "fail"
CHART_NAME: Final = "auth_exchange"
CHART_TITLE: Final = "MQTT 5 enhanced authentication exchange (actorbroker.auth.exchange)"
INITIAL: Final = AuthState.STARTED

_S = AuthState
TRANSITIONS: Final[Mapping[tuple[AuthState, str], AuthState]] = MappingProxyType({
    (_S.STARTED, CONTINUE): _S.CONTINUING,
    (_S.STARTED, SUCCEED): _S.SUCCEEDED,
    (_S.STARTED, FAIL): _S.FAILED,
    (_S.CONTINUING, CONTINUE): _S.CONTINUING,
    (_S.CONTINUING, SUCCEED): _S.SUCCEEDED,
    (_S.CONTINUING, FAIL): _S.FAILED,
})


def advance(state: AuthState, event: str) -> AuthState | None:
    """The state after ``event``, None if ``state`` does not accept it."""
    return TRANSITIONS.get((state, event))


@dataclass(frozen=True, slots=True)
class Continue:
    """Send ``data`` to the client in AUTH 0x18 and wait for its answer."""

    data: bytes


@dataclass(frozen=True, slots=True)
class Success:
    """Authenticated as ``username``; ``data`` goes in the CONNACK (or the final AUTH)."""

    data: bytes | None = None
    username: str | None = None


@dataclass(frozen=True, slots=True)
class Failure:
    """Refuse (CONNACK) or disconnect (DISCONNECT) with ``reason_code``; ``reason`` for the log."""

    reason_code: int
    reason: str


Outcome = Continue | Success | Failure


class Mechanism(Protocol):
    """One run of an authentication method, fed the client's data piece by piece."""

    def step(self, data: bytes | None) -> Outcome:
        """The outcome of the client's next piece of Authentication Data (None: none sent)."""


class Authenticator(Protocol):
    """An authentication method (e.g. SCRAM-SHA-256): makes one Mechanism per exchange."""

    @property
    def method(self) -> str:
        """The Authentication Method name clients use."""

    def begin(self, client_id: str) -> Mechanism:
        """A new exchange for ``client_id``."""


class PasswordChecker(Protocol):
    """Checks a CONNECT's user name and password."""

    def check_password(self, username: str, password: bytes) -> bool:
        """True if ``password`` is ``username``'s."""


class Exchange:
    """One authentication exchange, driven through the table (see the module doc)."""

    __slots__ = ("method", "state", "username", "_mechanism")

    def __init__(self, authenticator: Authenticator, client_id: str) -> None:
        self.method = authenticator.method
        self.state = INITIAL
        self.username: str | None = None
        self._mechanism = authenticator.begin(client_id)

    @property
    def done(self) -> bool:
        """True once it succeeded or failed."""
        return self.state in (_S.SUCCEEDED, _S.FAILED)

    def step(self, data: bytes | None) -> Outcome:
        """Feed the client's next Authentication Data; never raises for the client's sake."""
        if self.done:
            self.state = _S.FAILED
            return Failure(ReasonCode.PROTOCOL_ERROR, "(section 4.12) AUTH after the exchange ended")
        try:
            outcome = self._mechanism.step(data)
        except Exception as exc:  # a mechanism bug must not take the connection's owner down
            outcome = Failure(ReasonCode.UNSPECIFIED_ERROR, f"{self.method} failed: {exc!r}")
        event = {Continue: CONTINUE, Success: SUCCEED, Failure: FAIL}[type(outcome)]
        state = advance(self.state, event)
        assert state is not None  # every non-final state accepts every event
        self.state = state
        if isinstance(outcome, Success):
            self.username = outcome.username
        return outcome


class Authenticators:
    """The node's authentication methods by name, and its user name / password check."""

    __slots__ = ("_methods", "_passwords")

    def __init__(self, authenticators: Iterable[Authenticator] = (),
                 passwords: PasswordChecker | None = None) -> None:
        self._methods = {a.method: a for a in authenticators}
        self._passwords = passwords

    def get(self, method: str) -> Authenticator | None:
        """The authenticator of ``method``, None if the broker has none."""
        return self._methods.get(method)

    @property
    def methods(self) -> tuple[str, ...]:
        """The method names served."""
        return tuple(self._methods)

    def check_password(self, username: str | None, password: bytes | None) -> bool:
        """True if the user name and password match the credentials (False without any)."""
        if self._passwords is None or username is None or password is None:
            return False
        return self._passwords.check_password(username, password)
