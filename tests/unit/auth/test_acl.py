"""Mosquitto ACL files: parsing, Mosquitto 2's checking order, subscriptions by coverage."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from actorbroker.auth import AclFile
from actorbroker.auth.acl import covers, matches, overlaps
from actorbroker.errors import AuthError

# The example of Mosquitto's mosquitto.conf(5) and aclfile.example.
EXAMPLE = """\
# This affects access control for clients with no username.
topic read $SYS/#

# This only affects clients with username "roger".
user roger
topic foo/bar

# This affects all clients.
pattern write $SYS/broker/connection/%c/state
pattern readwrite clients/%u/#
"""


def test_anonymous_section_comes_first() -> None:
    acl = AclFile.parse(EXAMPLE)
    anonymous = acl.for_client(None, "c1")
    assert anonymous.may_read("$SYS/broker/uptime")
    assert anonymous.may_subscribe("$SYS/#")
    assert not anonymous.may_publish("$SYS/broker/uptime")
    assert not anonymous.may_read("foo/bar")
    roger = acl.for_client("roger", "c2")
    assert roger.may_publish("foo/bar") and roger.may_read("foo/bar")
    assert not roger.may_read("$SYS/broker/uptime")  # not roger's: that was anonymous'


def test_patterns_substitute_client_id_and_user() -> None:
    acl = AclFile.parse(EXAMPLE)
    roger = acl.for_client("roger", "dev1")
    assert roger.may_publish("$SYS/broker/connection/dev1/state")
    assert not roger.may_publish("$SYS/broker/connection/dev2/state")
    assert roger.may_subscribe("clients/roger/#")
    assert not roger.may_subscribe("clients/#")
    anonymous = acl.for_client(None, "dev1")
    assert not anonymous.may_read("clients/roger/x")  # %u needs a user name


def test_a_wildcard_in_the_id_or_name_gets_nothing_with_patterns() -> None:
    acl = AclFile.parse(EXAMPLE)
    assert not acl.for_client("ro+ger", "c").may_publish("foo/bar")
    assert not acl.for_client("roger", "dev#").may_publish("$SYS/broker/connection/dev#/state")


def test_deny_goes_first_and_write_is_not_read() -> None:
    acl = AclFile.parse("topic readwrite a/#\ntopic deny a/secret\ntopic write w\n")
    client = acl.for_client(None, "c")
    assert client.may_read("a/x") and not client.may_read("a/secret")
    assert not client.may_publish("a/secret")
    assert client.may_subscribe("a/x/#") and not client.may_subscribe("a/#")
    assert not client.may_subscribe("a/+")  # overlaps the denied a/secret
    assert client.may_publish("w") and not client.may_subscribe("w")


def test_paho_subscribe_failure_acl() -> None:
    acl = AclFile.parse("topic readwrite #\ntopic deny test/nosubscribe\n")
    client = acl.for_client(None, "myclientid")
    assert not client.may_subscribe("test/nosubscribe")
    assert client.may_subscribe("TopicA") and client.may_subscribe("test/other")


@pytest.mark.parametrize("text, message", [
    ("topic sideways x\n", "1: invalid access 'sideways'"),
    ("user\n", "1: 'user' without a user name"),
    ("\n\ntopic\n", "3: empty topic"),
    ("grant all\n", "1: unknown keyword 'grant'"),
])
def test_bad_lines_name_the_line(text: str, message: str) -> None:
    with pytest.raises(AuthError, match=message):
        AclFile.parse(text, "acl")


LEVELS = st.sampled_from(["a", "b", "+", "#", "$x"])
FILTERS = st.lists(LEVELS, min_size=1, max_size=3).filter(
    lambda ls: "#" not in ls[:-1] and "$x" not in ls[1:]).map("/".join)
TOPICS = ["/".join(p) for n in (1, 2, 3, 4) for p in itertools.product(["a", "b", "$x", "c"],
                                                                      repeat=n)
          if "$x" not in p[1:]]


@example("+/#", "#")  # hypothesis found it: '+/#' covers '#' (one level or more, both)
@example("a/+/#", "a/#")  # ... but not 'a/#', which matches 'a' too
@given(FILTERS, FILTERS)
def test_covers_and_overlaps_agree_with_matching_every_topic(rule: str, sub: str) -> None:
    """Against brute force over every topic of up to four levels of a, b, c and $x."""
    in_sub = [t for t in TOPICS if matches(sub, t)]
    assert in_sub  # every filter drawn matches some topic of the universe
    assert covers(rule, sub) == all(matches(rule, t) for t in in_sub)
    assert overlaps(rule, sub) == any(matches(rule, t) for t in in_sub)
