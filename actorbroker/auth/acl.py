"""Auth layer: Mosquitto's ACL file and what it grants one client. Stdlib and errors only.

The file, as Mosquitto reads it::

    # comments start with '#'
    topic read public/#          <- before any 'user' line: anonymous clients
    user alice
    topic readwrite alice/#      <- alice's
    topic deny alice/secret
    pattern write devices/%c/#   <- every client (%c client id, %u user name)

``topic`` and ``pattern`` take ``read``, ``write``, ``readwrite`` (also the
default when omitted) or ``deny``; the filter is the rest of the line. Rules
are checked as Mosquitto 2 checks them: the client's user section first
(its ``deny`` rules before the others), then the patterns (``deny`` first);
the first rule whose filter matches decides: a deny refuses, a rule with the
access asked for grants, a rule without it is skipped. Nothing matching is a
refusal. A filter not starting with ``$`` never matches a ``$`` topic. With
patterns in the file, a client whose id or user name contains ``+`` or ``#``
is refused everything (it could widen its own patterns); a pattern with
``%u`` does not apply to a client without a user name.

Subscriptions (where Mosquitto 2 grants every SUBSCRIBE and checks READ per
delivered message, this broker decides once per filter, so that deliveries
cost nothing): a filter is granted when the first rule, in the order above,
that decides it is a read rule whose filter *covers* it (every topic the
subscription can match, the rule matches too); a deny rule decides as soon
as its filter *overlaps* the subscription's (some topic matches both). For a
filter without wildcards that is exactly Mosquitto's READ check; a wildcard
filter only partly readable is refused here where Mosquitto would deliver
the readable part. Retained messages sent on subscribe are then readable by
construction.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from actorbroker.errors import AuthError

__all__ = ["READ", "WRITE", "AclFile", "ClientAcl", "covers", "matches", "overlaps"]

READ = 1
WRITE = 2
_DENY = 0
_ACCESS = {"read": READ, "write": WRITE, "readwrite": READ | WRITE, "deny": _DENY}


def matches(rule: str, topic: str) -> bool:
    """True if filter ``rule`` matches topic name ``topic`` (section 4.7, and the ``$`` rule)."""
    if topic.startswith("$") and not rule.startswith("$"):
        return False
    return _covers(rule.split("/"), topic.split("/"))


def covers(rule: str, sub: str) -> bool:
    """True if every topic filter ``sub`` matches is matched by filter ``rule``."""
    if sub.startswith("$") and not rule.startswith("$"):
        return False
    return _covers(rule.split("/"), sub.split("/"))


def _covers(rule: list[str], sub: list[str]) -> bool:
    for index, level in enumerate(rule):
        if level == "#":
            return True  # the rest, the parent level included
        if index == len(sub):
            return False
        if level == "+":
            if sub[index] == "#":
                # A first-level '#' matches one level or more, as '+/#' does; deeper, '#'
                # also matches its parent level, which '+' cannot.
                return index == 0 and rule[1:] == ["#"]
        elif level != sub[index]:
            return False
    return len(sub) == len(rule)


def overlaps(rule: str, sub: str) -> bool:
    """True if some topic is matched by both filters."""
    if sub.startswith("$") and not rule.startswith("$"):
        return False  # a rule without '$' applies to no '$' topic
    if rule.startswith("$") and sub[:1] in ("+", "#"):
        return False  # a wildcard first level matches no '$' topic ([MQTT-4.7.2-1])
    a, b = rule.split("/"), sub.split("/")
    for index in range(max(len(a), len(b))):
        x = a[index] if index < len(a) else None
        y = b[index] if index < len(b) else None
        if x == "#" or y == "#":
            return True
        if x is None or y is None:
            return False
        if x != y and x != "+" and y != "+":
            return False
    return True


@dataclass(frozen=True, slots=True)
class _Rule:
    access: int
    filter: str
    line: int


class AclFile:
    """The parsed file: rules per user name (None: anonymous) and the patterns."""

    __slots__ = ("path", "users", "patterns")

    def __init__(self, users: dict[str | None, list[_Rule]], patterns: list[_Rule],
                 path: str = "") -> None:
        self.path = path
        # Deny rules first within each list, as Mosquitto orders them when loading.
        self.users = {user: _denies_first(rules) for user, rules in users.items()}
        self.patterns = _denies_first(patterns)

    @classmethod
    def parse(cls, text: str, path: str = "<acl>") -> AclFile:
        """The rules of ``text``; AuthError naming the line of the first bad one."""
        users: dict[str | None, list[_Rule]] = {}
        patterns: list[_Rule] = []
        user: str | None = None
        for number, raw in enumerate(text.splitlines(), 1):
            line = raw.rstrip()
            if line.startswith("#"):
                continue
            word, _, rest = line.lstrip(" ").partition(" ")
            rest = rest.lstrip(" ")
            if word in ("topic", "pattern"):
                access_word, _, topic = rest.partition(" ")
                topic = topic.lstrip(" ")
                if not topic:  # "topic FILTER": read and write
                    access_word, topic = "readwrite", access_word
                if not topic:
                    raise AuthError(f"{path}:{number}: empty topic")
                if access_word not in _ACCESS:
                    raise AuthError(f"{path}:{number}: invalid access {access_word!r} "
                                    "(read, write, readwrite or deny)")
                rule = _Rule(_ACCESS[access_word], topic, number)
                if word == "topic":
                    users.setdefault(user, []).append(rule)
                else:
                    patterns.append(rule)
            elif word == "user":
                if not rest:
                    raise AuthError(f"{path}:{number}: 'user' without a user name")
                user = rest
            elif word:
                raise AuthError(f"{path}:{number}: unknown keyword {word!r} "
                                "(topic, pattern or user)")
        return cls(users, patterns, path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> AclFile:
        """Read and parse ``path`` (AuthError if it cannot be read or is bad)."""
        name = os.fspath(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise AuthError(f"cannot read the ACL file {name!r}: {exc}") from exc
        return cls.parse(text, name)

    def for_client(self, username: str | None, client_id: str) -> ClientAcl:
        """What the file grants the client ``client_id`` logged in as ``username``."""
        rules = list(self.users.get(username, ()))
        if self.patterns:
            if any(c in s for s in (username or "", client_id) for c in "+#"):
                return ClientAcl(())  # Mosquitto: a dangerous id or name gets nothing
            rules += [_Rule(p.access, _substitute(p.filter, client_id, username), p.line)
                      for p in self.patterns if username is not None or "%u" not in p.filter]
        return ClientAcl(tuple(rules))


def _denies_first(rules: list[_Rule]) -> list[_Rule]:
    return [r for r in rules if r.access == _DENY] + [r for r in rules if r.access != _DENY]


def _substitute(pattern: str, client_id: str, username: str | None) -> str:
    out: list[str] = []
    index = 0
    while index < len(pattern):
        pair = pattern[index:index + 2]
        if pair == "%c":
            out.append(client_id)
        elif pair == "%u" and username is not None:
            out.append(username)
        else:
            out.append(pattern[index])
            index += 1
            continue
        index += 2
    return "".join(out)


class ClientAcl:
    """One client's rules, in checking order (see the module doc). Immutable."""

    __slots__ = ("_rules",)

    def __init__(self, rules: tuple[_Rule, ...]) -> None:
        self._rules = rules

    def may_publish(self, topic: str) -> bool:
        """True if the client may publish to topic name ``topic`` (WRITE)."""
        for rule in self._rules:
            if matches(rule.filter, topic):
                if rule.access == _DENY:
                    return False
                if rule.access & WRITE:
                    return True
        return False

    def may_read(self, topic: str) -> bool:
        """True if the client may receive messages of topic name ``topic`` (READ)."""
        for rule in self._rules:
            if matches(rule.filter, topic):
                if rule.access == _DENY:
                    return False
                if rule.access & READ:
                    return True
        return False

    def may_subscribe(self, topic_filter: str) -> bool:
        """True if the client may subscribe to ``topic_filter`` (see the module doc)."""
        for rule in self._rules:
            if rule.access == _DENY:
                if overlaps(rule.filter, topic_filter):
                    return False
            elif rule.access & READ and covers(rule.filter, topic_filter):
                return True
        return False
