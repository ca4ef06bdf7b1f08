"""Codec layer: topic name and topic filter rules (section 4.7, 4.8.2). Stdlib and codec only.

The decoder applies these to every PUBLISH topic, Will topic and SUBSCRIBE /
UNSUBSCRIBE filter; the broker's routing layer reuses them for the filters
and topics it builds itself. Strings reaching here from the decoder are
already well-formed UTF-8 without U+0000; the checks are repeated for
callers that build strings themselves.
"""

from __future__ import annotations

from .errors import ProtocolError
from .reason_codes import ReasonCode

__all__ = ["SHARED_PREFIX", "validate_topic_filter", "validate_topic_name"]

#: Prefix of an MQTT 5 shared subscription: ``$share/{ShareName}/{filter}``.
SHARED_PREFIX = "$share/"

_NAME_INVALID = ReasonCode.TOPIC_NAME_INVALID
_FILTER_INVALID = ReasonCode.TOPIC_FILTER_INVALID


def _check_common(text: str, what: str, code: ReasonCode) -> None:
    if not text:
        raise ProtocolError(f"[MQTT-4.7.3-1] {what} must be at least one character long", code)
    if "\x00" in text:
        raise ProtocolError(f"[MQTT-4.7.3-2] {what} contains U+0000", code)
    if len(text) > 0x3FFF and len(text.encode("utf-8", "surrogatepass")) > 0xFFFF:
        raise ProtocolError(f"[MQTT-4.7.3-3] {what} encodes to more than 65535 bytes", code)


def validate_topic_name(name: str) -> None:
    """Raise :class:`ProtocolError` (reason 0x90) unless ``name`` is a valid Topic Name.

    A Topic Name is non-empty and holds no wildcard. (An MQTT 5 PUBLISH may
    carry an empty topic with a Topic Alias; the decoder handles that case
    before calling this.)
    """
    _check_common(name, "topic name", _NAME_INVALID)
    if "+" in name or "#" in name:
        raise ProtocolError(
            "[MQTT-4.7.0-1] [MQTT-3.3.2-2] (3.1.1: [MQTT-4.7.1-1]) topic name"
            f" {name!r} contains a wildcard character",
            _NAME_INVALID,
        )


def validate_topic_filter(topic_filter: str, *, shared: bool = True) -> None:
    """Raise :class:`ProtocolError` (reason 0x8F) unless ``topic_filter`` is valid.

    ``#`` must be the whole last level and ``+`` a whole level. With
    ``shared`` (MQTT 5), a filter starting with ``$share/`` must be
    ``$share/{ShareName}/{filter}`` with a non-empty ShareName free of
    ``/``, ``+`` and ``#``; without it (MQTT 3.x) such a filter is an
    ordinary one.
    """
    _check_common(topic_filter, "topic filter", _FILTER_INVALID)
    rest = topic_filter
    if shared and topic_filter.startswith(SHARED_PREFIX):
        share_name, slash, rest = topic_filter[len(SHARED_PREFIX):].partition("/")
        if not share_name or not slash or not rest:
            raise ProtocolError(
                "[MQTT-4.8.2-1] shared subscription must be $share/{ShareName}/{filter}"
                f" with a non-empty ShareName and filter, got {topic_filter!r}",
                _FILTER_INVALID,
            )
        if "+" in share_name or "#" in share_name:
            raise ProtocolError(
                f"[MQTT-4.8.2-2] ShareName {share_name!r} contains a wildcard",
                _FILTER_INVALID,
            )
    if "+" not in rest and "#" not in rest:
        return
    levels = rest.split("/")
    last = len(levels) - 1
    for i, level in enumerate(levels):
        if "#" in level and (level != "#" or i != last):
            raise ProtocolError(
                "[MQTT-4.7.1-1] (3.1.1: [MQTT-4.7.1-2]) '#' must be the last"
                f" character and a whole level, in {topic_filter!r}",
                _FILTER_INVALID,
            )
        if "+" in level and level != "+":
            raise ProtocolError(
                "[MQTT-4.7.1-2] (3.1.1: [MQTT-4.7.1-3]) '+' must occupy a whole"
                f" level, in {topic_filter!r}",
                _FILTER_INVALID,
            )
