"""Actors layer: the test-only fault hook that crashes a session or topic actor on request. Stdlib only.

Supervision is only believable if it is exercised: a test tells a running
:class:`~.session.SessionActor` or :class:`~.topics.topic.TopicActor`
:class:`CrashForTest` and the actor raises :class:`InjectedCrash` from its
message handler, exactly as a bug would, so that its supervisor (or, for a
topic actor, the registry's monitor) does what it does after a real crash.

The hook is off unless the node runs with ``NodeSettings(fault_injection=True)``
(there is no configuration file option: only code that builds the settings
itself, a test, can turn it on). With it off, the message is logged and
ignored. It is not reachable from the network: it is an actor message, and
no packet is ever turned into one. Tests send it on the broker's loop, e.g.
``running.call(lambda: node.names.sessions[cid].tell(CrashForTest()))``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

__all__ = ["CrashForTest", "InjectedCrash", "crash_for_test"]

log = logging.getLogger("actorbroker.faults")


@dataclass(frozen=True, slots=True)
class CrashForTest:
    """Crash now (tests only; ignored unless ``fault_injection`` is on)."""

    reason: str = "crash requested by a test"


class InjectedCrash(RuntimeError):
    """The exception a :class:`CrashForTest` raises in the actor that receives it."""


def crash_for_test(settings: Any, who: str, message: CrashForTest) -> None:
    """Raise :class:`InjectedCrash` if ``settings.fault_injection``; else log and return."""
    if getattr(settings, "fault_injection", False):
        raise InjectedCrash(f"{who}: {message.reason}")
    log.warning("%s: CrashForTest ignored (fault_injection is off)", who)
