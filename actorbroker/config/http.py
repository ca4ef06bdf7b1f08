"""Configuration layer: the [http] section (metrics, admin API). Imports the stdlib and actorbroker.errors only.

Declared here rather than in :mod:`.schema` to keep that module small. The
listener serves ``/metrics`` (Prometheus), ``/api/v1/...`` (the admin API)
and, later, the dashboard; docs/operations.md describes them. The admin API
can kick clients and delete sessions, so a listener reachable from other
hosts must have a token file: :meth:`HttpConfig.problems` refuses it
otherwise, and the loader reports that like any other configuration error.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from actorbroker.errors import ConfigError, InvalidConfigError

from .checks import address, check_section
from .options import option

__all__ = ["DEFAULT_HTTP_PORT", "HttpConfig", "is_loopback"]

#: EMQX's dashboard port: free on most hosts, unlike 8080.
DEFAULT_HTTP_PORT = 18083


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or "localhost") is reachable from this host only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # another host name: it may resolve anywhere


@dataclass(frozen=True, slots=True)
class HttpConfig:
    """The operations HTTP listener: /metrics in the Prometheus text format, the
    admin API under /api/v1/ (JSON) and the dashboard. Off unless enabled here
    or by serve --http-port N; make run turns it on at 127.0.0.1."""

    enabled: bool = option(
        False,
        help="""Whether the broker serves HTTP. actorbroker serve --http-port N
        turns it on at port N.""",
    )
    bind: str = option(
        "127.0.0.1",
        values="an IP address or a host name",
        extra=address,
        help="""Address to listen on. Any address but the loopback (127.0.0.1,
        ::1, localhost) needs token_file: the admin API can kick clients and
        delete sessions, and the broker refuses to start without it.""",
    )
    port: int = option(
        DEFAULT_HTTP_PORT,
        minimum=0,
        maximum=65535,
        zero="a free port chosen by the system, for tests",
        help="""TCP port (18083, as EMQX's dashboard, by default).""",
    )
    token_file: str = option(
        "",
        values="a path, or empty",
        help="""File whose first line is the bearer token the admin API asks for
        (Authorization: Bearer TOKEN), 16 characters at least; /metrics stays
        open to scrapers. Empty:
        no token, allowed only on the loopback, where every local user may
        then call the API.""",
    )

    def __post_init__(self) -> None:
        check_section(self, "http")
        found = self.problems()
        if found:
            raise InvalidConfigError([ConfigError(message, key=f"http.{name}")
                                      for name, message in found])

    def problems(self) -> list[tuple[str, str]]:
        """(option, why) for each combination of options the broker refuses."""
        if self.enabled and not self.token_file and not is_loopback(self.bind):
            return [("bind", f'[http] bind = "{self.bind}" is reachable from other hosts: '
                             "set [http] token_file too (the admin API can kick clients "
                             "and delete sessions)")]
        return []
