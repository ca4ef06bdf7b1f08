"""Configuration layer: the sections and options of actorbroker.toml. Imports the stdlib and actorbroker.errors only.

One frozen dataclass per TOML section; each field's help text and constraints
are written here once, and docs/configuration.md and
docs/actorbroker.example.toml are generated from them
(``python -m actorbroker.config --write``). Defaults follow what Mosquitto and
EMQX users expect. Option names are stable: renaming one breaks users' files.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from actorbroker.errors import ConfigError, InvalidConfigError

from .checks import address, check_section, host_name, node_name, not_empty
from .http import HttpConfig
from .listeners import check_listener, websocket_path
from .log import LogConfig
from .mqtt5 import AuthConfig, Mqtt5Config
from .options import Option, option, option_of
from .storage import RetryConfig, StorageConfig

__all__ = [
    "OVERRIDES",
    "SECTIONS",
    "SERVE_DATA_DIR",
    "Config",
    "LimitsConfig",
    "HttpConfig",
    "ListenerConfig",
    "LogConfig",
    "NodeConfig",
    "RetainedConfig",
    "RetryConfig",
    "Section",
    "StorageConfig",
    "SysConfig",
]

#: The data directory of ``actorbroker serve`` when none is given.
SERVE_DATA_DIR = "./data"

#: The largest Remaining Length MQTT can encode (256 MiB - 1); the fixed header
#: adds at most 5 bytes to it.
PROTOCOL_MAX_PACKET_SIZE = 268_435_455


@dataclass(frozen=True, slots=True)
class NodeConfig:
    """This broker process: its name and where it keeps its state."""

    name: str = option(
        kind=str,
        default_factory=host_name,
        default_doc="the host name",
        values="letters, digits, '_', '.' and '-'",
        extra=node_name,
        help="""Name of this node. It appears in log lines and in the $SYS topics,
        and it will name the node in a cluster, where it must be unique.""",
    )
    data_dir: str | None = option(
        None,
        kind=str,
        values="a path",
        default_doc=f'"{SERVE_DATA_DIR}" for actorbroker serve; none in code (in memory)',
        extra=not_empty,
        help=f"""Directory of the commit log, the session store and the retained
        store; created when missing. A relative path is taken from the
        directory the broker is started in, as Mosquitto's
        persistence_location. actorbroker serve uses "{SERVE_DATA_DIR}" when none
        is given; a broker embedded in code (Broker(Config()), the mqtt_broker
        test fixture) given none keeps everything in memory and writes no file,
        as with [storage] durability = "memory".""",
    )

    def __post_init__(self) -> None:
        check_section(self, "node")


@dataclass(frozen=True, slots=True)
class ListenerConfig:
    """One MQTT listener per [[listeners]] table. Without any, the broker listens
    on TCP 127.0.0.1:1883 only, reachable from this host, as Mosquitto 2 does
    without a listener line. The --bind and --port flags replace the bind and
    port of the first listener."""

    type: str = option(
        "tcp",
        choices=("tcp", "tls", "ws", "wss"),
        help="""Transport. "tcp": plain MQTT. "tls": MQTT over TLS (certfile and
        keyfile needed). "ws": MQTT over WebSocket (subprotocol "mqtt", binary
        frames), for browsers. "wss": MQTT over WebSocket over TLS. A TLS
        ClientHello on a tcp or ws listener, and plain MQTT on a tls listener,
        are logged once and closed.""",
    )
    bind: str = option(
        "127.0.0.1",
        values="an IP address or a host name",
        extra=address,
        help="""Address to listen on: an IP address or a host name. "0.0.0.0"
        listens on every IPv4 interface, "::" on every IPv6 one.""",
    )
    port: int = option(
        1883,
        minimum=0,
        maximum=65535,
        zero="a free port chosen by the system, for tests",
        help="""TCP port. Ports below 1024 need privileges.""",
    )
    max_connections: int = option(
        10_000,
        minimum=0,
        zero="unlimited",
        help="""Most clients connected through this listener at once; sockets
        beyond it are closed as soon as they are accepted. Mosquitto writes
        unlimited as -1, here it is 0. The process's open file limit
        (ulimit -n) caps it too.""",
    )
    max_connections_per_ip: int = option(
        0,
        minimum=0,
        zero="unlimited",
        help="""Most connections from one source IP address at once through this
        listener; beyond it a new socket is closed as soon as it is accepted.
        Leave it unlimited when many clients share an address (NAT, a
        gateway).""",
    )
    max_connect_rate_per_ip: float = option(
        0.0,
        minimum=0,
        zero="unlimited",
        unit="connections per second",
        help="""New connections one source IP address may open per second
        through this listener, on average; as many as one second's worth may
        come at once. Sockets beyond it are closed as soon as they are
        accepted, before anything is read from them.""",
    )
    certfile: str = option(
        "",
        values="a path to a PEM file, or empty",
        help="""tls and wss: the server's certificate chain (PEM), the server's
        own certificate first. Reloaded when the file changes (polled every few
        seconds) and on SIGHUP, without dropping connections.""",
    )
    keyfile: str = option(
        "",
        values="a path to a PEM file, or empty",
        help="""tls and wss: the private key of certfile (PEM, not encrypted).""",
    )
    cafile: str = option(
        "",
        values="a path to a PEM file, or empty",
        help="""tls and wss: the certificate authorities that client certificates
        must chain to (PEM). Needed by require_certificate.""",
    )
    require_certificate: bool = option(
        False,
        help="""tls and wss: whether clients must present a certificate signed by
        cafile; the handshake fails without one. When false, clients are not
        asked for one, as in Mosquitto.""",
    )
    use_identity_as_username: bool = option(
        False,
        help="""tls and wss, with require_certificate: the client certificate's
        Common Name (or, without one, its first subjectAltName) becomes the
        client's user name, replacing the CONNECT's; the certificate
        authenticates the client, so no password is checked, as in
        Mosquitto.""",
    )
    crlfile: str = option(
        "",
        values="a path to a PEM file, or empty",
        help="""tls and wss, with require_certificate: a certificate revocation
        list (PEM) of the issuer of the client certificates; a revoked
        certificate fails the handshake.""",
    )
    tls_version: str = option(
        "tlsv1.2",
        choices=("tlsv1.2", "tlsv1.3"),
        help="""tls and wss: the oldest TLS version accepted.""",
    )
    ciphers: str = option(
        "",
        values="an OpenSSL cipher list, or empty",
        help="""tls and wss: the TLS 1.2 cipher suites offered, in OpenSSL's
        cipher list format (e.g. "ECDHE+AESGCM"); empty keeps Python's
        secure defaults. TLS 1.3 suites are not configurable.""",
    )
    path: str = option(
        "/mqtt",
        values='a path starting with "/", or empty',
        extra=websocket_path,
        help="""ws and wss: the HTTP path of the WebSocket endpoint ("/mqtt" is
        what paho and MQTT.js use); other paths are answered 404. Empty:
        any path.""",
    )

    def __post_init__(self) -> None:
        check_section(self, "listeners")
        check_listener(self)


@dataclass(frozen=True, slots=True)
class LimitsConfig:
    """Limits per client, the same on every listener."""

    max_packet_size: int = option(
        1024 * 1024,
        minimum=20,
        maximum=PROTOCOL_MAX_PACKET_SIZE,
        unit="bytes",
        help="""Largest packet accepted from a client, in bytes, headers included.
        A client that sends a larger one is disconnected (MQTT 5: reason 0x95,
        Packet too large) as soon as the packet's header announces the size,
        before its body is read; MQTT 5 clients are told the limit in CONNACK.
        The default is 1 MiB; up to 268435455 (256 MiB, the largest size MQTT
        can encode) may be set. Below 20 is refused, as in Mosquitto: it would
        refuse ordinary CONNECT packets.""",
    )
    max_connect_size: int = option(
        64 * 1024,
        minimum=20,
        maximum=PROTOCOL_MAX_PACKET_SIZE,
        unit="bytes",
        help="""Largest CONNECT or MQTT 5 AUTH packet accepted, in bytes: the
        packets a client sends before it is authenticated; the smaller of this
        and max_packet_size applies. A stranger cannot make the broker hold
        more than this per socket: a larger one is refused as soon as its
        header announces the size (MQTT 5: CONNACK 0x95, Packet too large),
        and the connection closed.""",
    )
    max_inflight_messages: int = option(
        20,
        minimum=1,
        maximum=65535,
        help="""Outgoing QoS 1 and 2 messages per client awaiting acknowledgement
        at once; the next ones wait in the client's queue. An MQTT 5 client's
        Receive Maximum lowers it further. 1 keeps delivery in order even
        across retries. Mosquitto's 0 (no maximum) is 65535 here: packet
        identifiers have 16 bits.""",
    )
    max_queued_messages: int = option(
        1000,
        minimum=0,
        zero="unlimited, not recommended",
        help="""Messages held per client beyond those in flight, while it is slow
        or offline with a persistent session. When the queue of an offline or
        stuck client is full (see backpressure_timeout), further messages for
        it are dropped, as in Mosquitto; a durable session's QoS 1/2 messages
        past it wait in the commit log instead, bounded by [storage]
        durable_queue_bytes.""",
    )
    max_queued_bytes: int = option(
        0,
        minimum=0,
        zero="unlimited",
        unit="bytes",
        help="""Payload bytes held per client in the same queue; whichever of this
        and max_queued_messages is reached first applies.""",
    )
    queue_qos0_messages: bool = option(
        False,
        help="""Whether QoS 0 messages are queued for an offline client with a
        persistent session too (within the same limits). The protocol leaves
        it to the broker; Mosquitto does not queue them by default either.""",
    )
    backpressure_timeout: float = option(
        1.0,
        above=0,
        unit="seconds",
        help="""How long a connected subscriber that takes nothing from its queue
        may hold back its publishers, whose sockets are read again only once
        their messages are queued below the subscribers' high-water mark (100
        messages, or half the queue limits if lower). Past it the subscriber
        is stuck: its queue limits drop what does not fit (queue_full).""",
    )
    connect_timeout: float = option(
        10.0,
        above=0,
        unit="seconds",
        help="""Seconds a new connection has to send its CONNECT packet; a socket
        that has not by then is closed. It also bounds how long any one packet
        may take to arrive once its first byte came, keep alive 0 included: a
        client that trickles a packet slower than that (a slowloris) is
        closed.""",
    )
    max_client_id_length: int = option(
        256,
        minimum=23,
        maximum=65535,
        rule="[MQTT-3.1.3-5]",
        help="""Longest client identifier accepted, in bytes of UTF-8; a longer
        one is refused (CONNACK 0x85, Client Identifier not valid; MQTT 3:
        0x02, identifier rejected). Every broker must accept 1 to 23
        characters [MQTT-3.1.3-5], so less than 23 is refused. MQTT 3.1
        clients are held to 23 by their own specification. The default, 256,
        fits UUIDs, host names and device paths; the protocol allows up to
        65535 (Mosquitto's limit), which this option may set. Log lines show at
        most 64 characters of an id, and a hash of the rest.""",
    )
    max_memory: int = option(
        0,
        minimum=0,
        zero="not watched",
        unit="bytes",
        help="""Overload protection: while the broker's resident memory is above
        this, new connections are refused at their CONNECT (MQTT 5: 0x89,
        Server busy; MQTT 3: 0x03, Server unavailable) and the broker logs
        why; clients already connected are served as before. Sampled four
        times a second.""",
    )
    max_loop_lag: float = option(
        0.0,
        minimum=0,
        zero="not watched",
        unit="seconds",
        help="""Overload protection: while the event loop runs this late (the
        time any callback waits behind the others, sampled four times a
        second), new connections are refused as with max_memory. 0.5 suits a
        broker whose clients expect answers within a second.""",
    )
    max_keepalive: int = option(
        65535,
        minimum=10,
        maximum=65535,
        unit="seconds",
        help="""Longest keep alive allowed, in seconds. An MQTT 5 client asking for
        more, or for 0 (none), is given this value as Server Keep Alive in
        CONNACK; an MQTT 3 client that asks for more cannot be told and is
        refused (CONNACK 0x02, identifier rejected), as in Mosquitto. Less
        than 10 is refused, as Mosquitto advises.""",
    )
    max_qos: int = option(
        2,
        choices=(0, 1, 2),
        help="""Highest QoS accepted. MQTT 5 clients are told in CONNACK (Maximum
        QoS) and disconnected with 0x9B (QoS not supported) if they publish
        above it; subscriptions of every client are granted at most this QoS,
        as Mosquitto's max_qos.""",
    )
    max_subscriptions: int = option(
        100_000,
        minimum=0,
        zero="unlimited",
        help="""Topic filters one client may hold (granted, or asked and not yet
        answered); a SUBSCRIBE beyond it is refused for the filters over the
        quota (MQTT 5: 0x97, Quota exceeded; MQTT 3.1.1: 0x80; MQTT 3.1, whose
        SUBACK cannot refuse: the connection is closed). Re-subscribing to a
        filter the client has does not count. Each filter costs the broker
        memory and a share of the subscription table's work.""",
    )
    max_topic_length: int = option(
        65535,
        minimum=1,
        maximum=65535,
        help="""Longest topic filter accepted in a SUBSCRIBE, and topic name in a
        PUBLISH, in characters. A longer filter is refused as an invalid filter
        (MQTT 5: 0x8F; MQTT 3.1.1: 0x80); a longer topic name is not routed
        (MQTT 5 QoS 1/2: PUBACK/PUBREC 0x90; otherwise acknowledged and
        dropped, as for a topic the ACL denies). 65535, the default, is what
        MQTT can encode.""",
    )
    max_topic_levels: int = option(
        128,
        minimum=0,
        zero="unlimited",
        help="""Most levels (parts between '/') of a topic filter accepted in a
        SUBSCRIBE, and of a topic name in a PUBLISH; a deeper one is refused
        as max_topic_length says (0x8F, 0x80; 0x90 for a PUBLISH). 128 is
        EMQX's default, and EMQX applies it to both too.""",
    )
    max_publish_rate: float = option(
        0.0,
        minimum=0,
        zero="unlimited",
        unit="messages per second",
        help="""PUBLISH packets each client may send per second, on average (a
        token bucket refilled at this rate), as EMQX's per-client message
        rate limit. A client that publishes faster than its quota allows is
        disconnected (MQTT 5: DISCONNECT 0x97, Quota exceeded; MQTT 3: the
        connection is closed); the PUBLISH over the quota is not routed, and
        the Will is published. Each connection starts with a full bucket.""",
    )
    max_publish_burst: float = option(
        0.0,
        minimum=0,
        zero="the rate, at least 1",
        unit="messages",
        help="""PUBLISH packets a client may send at once before max_publish_rate
        applies: the size of its token bucket. Unused when max_publish_rate
        is 0.""",
    )

    def __post_init__(self) -> None:
        check_section(self, "limits")


@dataclass(frozen=True, slots=True)
class SysConfig:
    """The $SYS/broker/... topics, where the broker publishes its statistics."""

    interval: float = option(
        10.0,
        minimum=0,
        zero="no $SYS topics",
        unit="seconds",
        help="""Seconds between two updates of the $SYS topics (clients, messages,
        bytes, uptime); 0 turns them off, as Mosquitto's sys_interval.""",
    )

    def __post_init__(self) -> None:
        check_section(self, "sys")


@dataclass(frozen=True, slots=True)
class RetainedConfig:
    """Retained messages."""

    enabled: bool = option(
        True,
        help="""Whether retained messages are kept. When false, MQTT 5 clients are
        told in CONNACK (Retain Available) and a client that publishes with
        RETAIN set is disconnected (MQTT 5: 0x9A, Retain not supported), as
        with Mosquitto's retain_available false.""",
    )
    max_retained_messages: int = option(
        0,
        minimum=0,
        zero="unlimited",
        help="""Most retained messages kept, over all topics. At the limit a
        retained message to a topic that has none is delivered but not kept;
        replacing or clearing an existing one still works.""",
    )

    def __post_init__(self) -> None:
        check_section(self, "retained")


@dataclass(frozen=True, slots=True)
class Section:
    """A TOML section: its name, its dataclass, and whether it is an [[array]]."""

    name: str
    cls: type[Any]
    is_array: bool = False

    def options(self) -> list[tuple[str, Option]]:
        """(name, Option) of every field, in declaration order."""
        return [(f.name, option_of(f)) for f in dataclasses.fields(self.cls)]

    @property
    def header(self) -> str:
        return f"[[{self.name}]]" if self.is_array else f"[{self.name}]"


#: Every section, in the order of the docs and of the example file.
SECTIONS: tuple[Section, ...] = (
    Section("node", NodeConfig),
    Section("log", LogConfig),
    Section("listeners", ListenerConfig, is_array=True),
    Section("limits", LimitsConfig),
    Section("sys", SysConfig),
    Section("retained", RetainedConfig),
    Section("storage", StorageConfig), Section("retry", RetryConfig),
    Section("mqtt5", Mqtt5Config), Section("auth", AuthConfig),
    Section("http", HttpConfig),
)

#: Command line flag -> (keyword of Config.with_overrides, option it replaces).
OVERRIDES: dict[str, tuple[str, str, str]] = {
    "--bind": ("bind", "listeners", "bind"),
    "--port": ("port", "listeners", "port"),
    "--data-dir": ("data_dir", "node", "data_dir"),
    "--log-level": ("log_level", "log", "level"),
    "--http-port": ("http_port", "http", "port"),
}


@dataclass(frozen=True, slots=True)
class Config:
    """The whole configuration: defaults, then the file, then command line flags.

    Build it with :func:`actorbroker.config.load` (a file) or
    :func:`actorbroker.config.loads` (text); ``Config()`` is the defaults.
    Sections built in code are checked as a file would be (an
    :class:`InvalidConfigError` without lines); ``listeners`` may be empty in
    code (a broker without listeners, for tests), never in a file.
    """

    node: NodeConfig = field(default_factory=NodeConfig)
    log: LogConfig = field(default_factory=LogConfig)
    listeners: tuple[ListenerConfig, ...] = (ListenerConfig(),)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    sys: SysConfig = field(default_factory=SysConfig)
    retained: RetainedConfig = field(default_factory=RetainedConfig)
    storage: StorageConfig = field(default_factory=StorageConfig)
    retry: RetryConfig = field(default_factory=RetryConfig)
    mqtt5: Mqtt5Config = field(default_factory=Mqtt5Config)
    auth: AuthConfig = field(default_factory=AuthConfig)
    http: HttpConfig = field(default_factory=HttpConfig)

    def with_overrides(
        self,
        *,
        bind: str | None = None,
        port: int | None = None,
        data_dir: str | None = None,
        log_level: str | None = None,
        http_port: int | None = None,
    ) -> Config:
        """A copy with the command line flags that were given (not None) applied.

        ``bind`` and ``port`` replace those of the first listener (and make one
        if a Config built in code has none); ``http_port`` turns [http] on at
        that port. Values are
        checked as in a file; every bad one is reported in one
        :class:`InvalidConfigError` whose source is ``"command line"``.
        """
        given = {"bind": bind, "port": port, "data_dir": data_dir, "log_level": log_level,
                 "http_port": http_port}
        errors: list[ConfigError] = []
        checked: dict[str, Any] = {}
        for flag, (keyword, section_name, name) in OVERRIDES.items():
            value = given[keyword]
            if value is None:
                continue
            section = next(s for s in SECTIONS if s.name == section_name)
            accepted, message = dict(section.options())[name].check(value, flag)
            if message is None:
                checked[keyword] = accepted
            else:
                errors.append(ConfigError(
                    message, source="command line", key=f"{section_name}.{name}",
                ))
        if errors:
            raise InvalidConfigError(errors, source="command line")
        listeners = self.listeners
        if "bind" in checked or "port" in checked:
            first = listeners[0] if listeners else ListenerConfig()
            first = dataclasses.replace(
                first, bind=checked.get("bind", first.bind), port=checked.get("port", first.port)
            )
            listeners = (first, *listeners[1:])
        return dataclasses.replace(
            self,
            listeners=listeners,
            node=dataclasses.replace(
                self.node, data_dir=checked.get("data_dir", self.node.data_dir)
            ),
            log=dataclasses.replace(self.log, level=checked.get("log_level", self.log.level)),
            http=self.http if "http_port" not in checked else dataclasses.replace(
                self.http, enabled=True, port=checked["http_port"]),
        )
