"""Transport layer: the tunables of one connection. Stdlib and codec only.

:class:`ConnectionSettings` gathers what a connection needs from the
``[limits]`` section (anything with ``max_packet_size`` and
``connect_timeout``, e.g. :class:`actorbroker.config.LimitsConfig`) plus the
transport's own knobs, which have sound defaults and no config option yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from actorbroker.codec import MAX_PACKET_SIZE

__all__ = ["ConnectionSettings", "LimitsLike", "ListenerLike"]


class LimitsLike(Protocol):
    """The part of ``LimitsConfig`` the transport reads."""

    @property
    def max_packet_size(self) -> int: ...

    @property
    def max_connect_size(self) -> int: ...

    @property
    def connect_timeout(self) -> float: ...

    @property
    def backpressure_timeout(self) -> float: ...


class ListenerLike(Protocol):
    """The part of ``ListenerConfig`` the transport reads."""

    @property
    def bind(self) -> str: ...

    @property
    def port(self) -> int: ...

    @property
    def max_connections(self) -> int: ...

    @property
    def max_connections_per_ip(self) -> int: ...

    @property
    def max_connect_rate_per_ip(self) -> float: ...

    @property
    def type(self) -> str: ...

    @property
    def path(self) -> str: ...

    # The TLS options (tls, wss), as :class:`~.tls.TlsOptions` reads them.
    @property
    def certfile(self) -> str: ...

    @property
    def keyfile(self) -> str: ...

    @property
    def cafile(self) -> str: ...

    @property
    def require_certificate(self) -> bool: ...

    @property
    def use_identity_as_username(self) -> bool: ...

    @property
    def crlfile(self) -> str: ...

    @property
    def tls_version(self) -> str: ...

    @property
    def ciphers(self) -> str: ...


@dataclass(frozen=True, slots=True)
class ConnectionSettings:
    """Limits and buffer sizes of every connection of a listener.

    * ``max_packet_size``: largest packet accepted from the client (the
      decoder refuses bigger ones: v5 0x95).
    * ``max_connect_size``: the same for CONNECT and AUTH, what a client
      sends before it is authenticated (refused as early).
    * ``connect_timeout``: seconds a socket has to deliver its CONNECT, and
      the longest one packet may take to arrive once begun.
    * ``high_water``: output bytes buffered beyond which ``congested`` is
      True (also the socket transport's pause_writing mark).
    * ``max_output``: a ``send`` while more than this is buffered closes the
      connection; one large packet on a quiet connection always passes.
    * ``max_batches``: Inbound messages outstanding (their read credit not
      back) before reading pauses.
    * ``credit_timeout``: seconds after which a read credit is back whatever
      still holds it (a subscriber's session that never took its delivery).
    * ``close_timeout``: seconds a closing socket may take to flush before
      it is aborted (a peer that never reads must not pin it open).
    * ``trace``: client id patterns whose packets are logged (``[log] trace``,
      :mod:`.trace`); matched once per connection, at its CONNECT.
    """

    max_packet_size: int = MAX_PACKET_SIZE
    max_connect_size: int = 64 * 1024
    connect_timeout: float = 10.0
    high_water: int = 256 * 1024
    max_output: int = 4 * 1024 * 1024
    max_batches: int = 4
    credit_timeout: float = 4.0
    close_timeout: float = 5.0
    trace: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if min(self.max_packet_size, self.max_connect_size) < 2:
            raise ValueError("max_packet_size and max_connect_size must be at least 2")
        if self.connect_timeout <= 0 or self.close_timeout <= 0 or self.credit_timeout <= 0:
            raise ValueError("connect_timeout, close_timeout and credit_timeout must be positive")
        if self.high_water < 1 or self.max_output < self.high_water:
            raise ValueError("need 1 <= high_water <= max_output")
        if self.max_batches < 1:
            raise ValueError(f"max_batches must be at least 1, not {self.max_batches}")

    @classmethod
    def from_limits(cls, limits: LimitsLike, **overrides: Any) -> ConnectionSettings:
        """Settings from a ``LimitsConfig``; keyword arguments replace single fields."""
        values: dict[str, Any] = {
            "max_packet_size": limits.max_packet_size,
            "max_connect_size": limits.max_connect_size,
            "connect_timeout": limits.connect_timeout,
            # A stuck subscriber's session gives its credits back after backpressure_timeout
            # (1.25 x at most); this is the safety net for a credit lost with a crashed
            # actor's inbox, or held by a session working through a long queue.
            "credit_timeout": 4 * limits.backpressure_timeout,
        }
        values.update(overrides)
        return cls(**values)
