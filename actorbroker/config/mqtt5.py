"""Configuration layer: the [mqtt5] and [auth] sections. Imports the stdlib and actorbroker.errors only.

Declared here rather than in :mod:`.schema` to keep that module small;
:mod:`.schema` lists them in ``SECTIONS`` and ``Config`` like the others.
Defaults follow Mosquitto 2 where it has the option (receive maximum 20 as
its max_inflight_messages, topic alias maximum 10 as its max_topic_alias)
and EMQX otherwise (round robin shared subscriptions, every MQTT 5 feature
available).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .checks import check_section, strings
from .options import option

__all__ = ["AuthConfig", "Mqtt5Config"]


@dataclass(frozen=True, slots=True)
class Mqtt5Config:
    """MQTT 5 features and the limits MQTT 5 clients are told in CONNACK. The
    limits shared with MQTT 3 (max_qos, max_keepalive, max_packet_size) are in
    [limits], retain_available is [retained] enabled."""

    max_session_expiry_interval: int = option(
        0,
        minimum=0,
        maximum=0xFFFFFFFF,
        zero="no maximum: the client's value stands, 4294967295 (never) included",
        unit="seconds",
        help="""Longest Session Expiry Interval kept: a client asking for more
        is told this one in CONNACK, and its session and queued messages are
        discarded that long after it disconnects (EMQX's
        session_expiry_interval caps the same way).""",
    )
    receive_maximum: int = option(
        20,
        minimum=1,
        maximum=65535,
        help="""QoS 1 and 2 messages a client may have sent and not yet had
        acknowledged, told in CONNACK (Receive Maximum). A client that sends
        more is disconnected with 0x93, Receive Maximum exceeded.""",
    )
    topic_alias_maximum: int = option(
        10,
        minimum=0,
        maximum=65535,
        zero="clients may not use topic aliases",
        help="""Highest Topic Alias a client may use when publishing, told in
        CONNACK; a higher one disconnects it with 0x94, Topic Alias invalid
        (Mosquitto's max_topic_alias).""",
    )
    outbound_topic_aliases: int = option(
        10,
        minimum=0,
        maximum=65535,
        zero="the broker assigns none",
        help="""Most Topic Aliases the broker assigns on one connection for the
        topics it sends to a client, never more than the Topic Alias Maximum
        the client announced. The first message of a topic carries its name
        and the alias, later ones the alias only.""",
    )
    wildcard_subscriptions: bool = option(
        True,
        help="""Whether filters with + or # are accepted. When false, MQTT 5
        clients are told in CONNACK and such filters are refused in SUBACK
        (0xA2, MQTT 3: 0x80).""",
    )
    subscription_identifiers: bool = option(
        True,
        help="""Whether SUBSCRIBE may carry a Subscription Identifier, which then
        comes back with every message the subscription delivers. When false,
        clients are told in CONNACK and such SUBSCRIBEs refused (SUBACK 0xA1).""",
    )
    shared_subscriptions: bool = option(
        True,
        help="""Whether MQTT 5 clients may subscribe to $share/{group}/{filter}
        (each message to one member of the group). When false, clients are told
        in CONNACK and such filters refused in SUBACK (0x9E). MQTT 3 clients'
        $share/... filters are plain filters.""",
    )
    shared_subscription_strategy: str = option(
        "round_robin",
        choices=("round_robin", "random", "hash_clientid"),
        help="""How a shared subscription picks the member for each message,
        among the members that are connected (else among those with a session
        kept offline): in turn, at random, or by a hash of the publisher's
        client id (its messages then always go to the same member while it
        stays), as EMQX's shared_subscription_strategy.""",
    )
    response_information_prefix: str = option(
        "",
        values="a topic prefix, or empty",
        help="""When not empty, a client that asks for Response Information in
        CONNECT gets this prefix followed by its client id, a topic base it may
        use for responses (request/response, section 4.10). Empty: none given.""",
    )
    server_reference: str = option(
        "",
        values="host[:port] (any text the clients understand), or empty",
        help="""Where MQTT 5 clients should connect instead, sent as Server
        Reference with the redirect reason code. Empty: no redirection, and
        redirect is ignored.""",
    )
    redirect: str = option(
        "use_another_server",
        choices=("use_another_server", "server_moved"),
        help="""Which redirection server_reference means. "use_another_server":
        when the broker shuts down, connected MQTT 5 clients get DISCONNECT 0x9C
        with the reference instead of 0x8B. "server_moved": the broker refuses
        new MQTT 5 clients with CONNACK 0x9D and the reference (MQTT 3 clients
        with 0x03, server unavailable), and disconnects them with 0x9D when it
        shuts down.""",
    )

    def __post_init__(self) -> None:
        check_section(self, "mqtt5")


def client_id_patterns(value: list[Any]) -> str | None:
    """Non-empty strings whose only % is the %u of the user name."""
    why = strings(value, "client id patterns")
    if why:
        return why
    for item in value:
        if "%" in item.replace("%u", ""):
            return f"pattern {item!r}: %u (the user name) is the only % sequence"
    return None


def user_names(value: list[Any]) -> str | None:
    """Non-empty strings."""
    return strings(value, "user names")


@dataclass(frozen=True, slots=True)
class AuthConfig:
    """Authentication and authorization: Mosquitto's password and ACL files, MQTT 5
    enhanced authentication with SCRAM, whether clients that do not authenticate
    are let in. The files are read again on SIGHUP and when they change (see
    docs/security.md)."""

    password_file: str = option(
        "",
        values="a path, or empty",
        help="""Mosquitto password file: one user:hash line per user, as
        mosquitto_passwd writes it ($7$ PBKDF2-SHA512, $6$ SHA-512 and
        $argon2id$ hashes; plain-text passwords are refused). actorbroker passwd
        FILE USER adds users in the $7$ format. Clients of every version log in
        with a user name and password checked against it; MQTT 5 clients may
        also use SCRAM-SHA-512 with the users of its $7$ lines. Setting it
        makes allow_anonymous false unless that is set to true.""",
    )
    acl_file: str = option(
        "",
        values="a path, or empty",
        help="""Mosquitto ACL file (topic/pattern/user lines, %c and %u in
        patterns, the anonymous section first). Applied to SUBSCRIBE (refused
        with 0x80, MQTT 5 0x87), PUBLISH and Wills (MQTT 5 PUBACK/PUBREC 0x87;
        MQTT 3 acknowledged and dropped), and to existing subscriptions when it
        is reloaded. Empty: every client may publish and subscribe anywhere
        (but into $SYS).""",
    )
    scram_credentials_file: str = option(
        "",
        values="a path, or empty",
        help="""File of SCRAM credentials (salted, never plain text; actorbroker
        passwd --format scram FILE USER). Its users may authenticate with
        SCRAM-SHA-256 and SCRAM-SHA-512 (AUTH exchange, re-authentication
        included) and with a user name and password; a user also in
        password_file is checked against password_file. With neither file,
        a client asking for enhanced authentication gets 0x8C, bad
        authentication method.""",
    )
    allow_anonymous: bool | None = option(
        None,
        kind=bool,
        default_doc="true without password_file, false with it (as Mosquitto 2)",
        help="""Whether clients that do not authenticate are accepted. When false,
        only clients that pass SCRAM or whose user name and password match get
        in; others are refused with 0x87 (MQTT 3: 0x05).""",
    )
    use_username_as_clientid: bool = option(
        False,
        help="""Take each client's user name as its client id (Mosquitto's option
        of that name): a client cannot then pick another user's session. A
        client without a user name is refused with 0x87 (MQTT 3: 0x05).""",
    )
    client_id_patterns: list[str] = option(
        kind=list,
        default_factory=list,
        values="an array of client id patterns",
        extra=client_id_patterns,
        help="""Client ids a client may use, %u standing for its user name, * for
        any characters, ? for one: ["%u", "%u-*"] lets alice connect as alice
        or alice-kitchen and nothing else (EMQX's client id patterns, Mosquitto's
        clientid_prefixes). Others are refused with 0x87 (MQTT 3: 0x05); a
        client without a user name matches only patterns without %u; a client
        id the broker assigns is not checked. Empty: any client id.""",
    )
    takeover_users: list[str] = option(
        kind=list,
        default_factory=list,
        values="an array of user names",
        extra=user_names,
        help="""Users who may connect with a client id whose session belongs to
        another user (a session belongs to the user who made it; others are
        refused with 0x87, MQTT 3: 0x05): operators and bridges that drain or
        inspect devices' sessions. The session stays its owner's. Kept out of
        acl_file so that the file stays one Mosquitto reads.""",
    )
    login_failure_delay: float = option(
        1.0,
        minimum=0.0,
        maximum=30.0,
        unit="seconds",
        help="""How long a refused login waits before its CONNACK goes out (the
        broker goes on serving meanwhile). Failed logins per source address are
        also throttled: from the fifth failure on, the address is refused for 1 s,
        doubled per failure up to 60 s, without its password being checked.""",
    )

    def __post_init__(self) -> None:
        check_section(self, "auth")

    @property
    def anonymous(self) -> bool:
        """allow_anonymous as in force: false by default once a password file is set."""
        if self.allow_anonymous is not None:
            return self.allow_anonymous
        return not self.password_file
