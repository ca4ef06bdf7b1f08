"""Routing layer: topic validation, the filter trie, shared-subscription choice, retained index.

Imports the standard library only (never the codec, actors or transport). Pure
code: plain data structures owned by one actor each (RegistryActor holds a
:class:`FilterTrie`, TopicActors and the retained store use
:class:`RetainedIndex`); no threads, clocks or I/O.
"""

from actorbroker.routing.retained import RetainedIndex
from actorbroker.routing.shared import SharedGroup, SharedStrategy
from actorbroker.routing.topics import (
    SharedFilter,
    TopicError,
    has_wildcards,
    is_dollar_topic,
    is_valid_topic_filter,
    is_valid_topic_name,
    join_levels,
    matches,
    parse_shared,
    split_levels,
    validate_subscription_filter,
    validate_topic_filter,
    validate_topic_name,
)
from actorbroker.routing.trie import FilterTrie

__all__ = [
    "FilterTrie",
    "RetainedIndex",
    "SharedFilter",
    "SharedGroup",
    "SharedStrategy",
    "TopicError",
    "has_wildcards",
    "is_dollar_topic",
    "is_valid_topic_filter",
    "is_valid_topic_name",
    "join_levels",
    "matches",
    "parse_shared",
    "split_levels",
    "validate_subscription_filter",
    "validate_topic_filter",
    "validate_topic_name",
]
