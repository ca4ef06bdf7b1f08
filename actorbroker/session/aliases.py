"""Session layer: MQTT 5 Topic Aliases of one network connection. Stdlib and codec only.

Topic Aliases (section 3.3.2.3.4) replace a topic name by a two byte number
on one connection, in one direction. They belong to the connection, not to
the session: a new connection starts with none in either direction
([MQTT-3.3.2-7]).

* :class:`InboundAliases` reads what the client sends: an alias with a topic
  name sets the mapping, an alias with an empty topic name uses it. An alias
  of 0 or above the Topic Alias Maximum the broker announced is 0x94, Topic
  Alias invalid ([MQTT-3.3.2-8], [MQTT-3.3.2-9]); an empty topic name with
  an alias never set is a protocol error (section 3.3.2.3.4).
* :class:`OutboundAliases` assigns aliases to the topics the broker sends,
  first come first served, never above the client's Topic Alias Maximum
  ([MQTT-3.3.2-11]): the first PUBLISH of a topic carries the name and the
  new alias, later ones an empty name and the alias. When every alias is
  taken, further topics go out with their name only.
"""

from __future__ import annotations

from actorbroker.codec import ProtocolError, Publish, ReasonCode

from .message import with_properties

__all__ = ["InboundAliases", "OutboundAliases"]


class InboundAliases:
    """Client-to-broker aliases of one connection."""

    __slots__ = ("maximum", "_topics")

    def __init__(self, maximum: int) -> None:
        self.maximum = maximum
        self._topics: dict[int, str] = {}

    def resolve(self, topic: str, alias: int | None) -> str:
        """The topic name a PUBLISH stands for; set the mapping when it carries both.

        Raises ProtocolError (0x94 for an alias out of range, 0x82 for an
        empty topic name with an alias never set).
        """
        if alias is None:
            return topic
        if alias == 0 or alias > self.maximum:
            raise ProtocolError(
                f"[MQTT-3.3.2-9] Topic Alias {alias} is not in 1..{self.maximum},"
                " the Topic Alias Maximum announced in CONNACK",
                ReasonCode.TOPIC_ALIAS_INVALID,
            )
        if topic:
            self._topics[alias] = topic
            return topic
        known = self._topics.get(alias)
        if known is None:
            raise ProtocolError(
                f"(section 3.3.2.3.4) empty topic name with Topic Alias {alias}, which was never set"
            )
        return known

    def __len__(self) -> int:
        return len(self._topics)


class OutboundAliases:
    """Broker-to-client aliases of one connection."""

    __slots__ = ("maximum", "_by_topic")

    def __init__(self, maximum: int) -> None:
        self.maximum = maximum
        self._by_topic: dict[str, int] = {}

    def apply(self, publish: Publish) -> Publish:
        """``publish`` as it goes out: aliased if the topic has (or gets) an alias."""
        topic = publish.topic
        alias = self._by_topic.get(topic)
        if alias is None:
            if len(self._by_topic) >= self.maximum:
                return publish
            alias = self._by_topic[topic] = len(self._by_topic) + 1
        else:
            topic = ""  # known: the alias alone
        return Publish(topic, publish.payload, publish.qos, publish.retain, publish.dup,
                       publish.packet_id, with_properties(publish.properties, topic_alias=alias))

    def __len__(self) -> int:
        return len(self._by_topic)
