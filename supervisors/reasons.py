"""Exit reasons: why an actor stopped (stdlib only; no pykka, no asyncio).

Erlang names where they fit. A supervisor restarts a ``transient`` child only
for an *abnormal* reason (anything but :class:`Normal` and :class:`Shutdown`);
a ``permanent`` child always; a ``temporary`` child never.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

__all__ = [
    "KILLED",
    "NOPROC",
    "NORMAL",
    "SHUTDOWN",
    "Crash",
    "ExitReason",
    "Killed",
    "NoProc",
    "Normal",
    "Shutdown",
    "is_abnormal",
]


@dataclass(frozen=True, slots=True)
class Normal:
    """The actor stopped in an orderly way (``ref.stop()``, ``self.stop()``)."""

    def __str__(self) -> str:
        return "normal"


@dataclass(frozen=True, slots=True)
class Shutdown:
    """The actor was stopped by its supervisor or by the application."""

    def __str__(self) -> str:
        return "shutdown"


@dataclass(frozen=True, slots=True)
class Killed:
    """The actor was force-stopped (shutdown timeout, ``kill()``, a linked kill)."""

    def __str__(self) -> str:
        return "killed"


@dataclass(frozen=True, slots=True)
class NoProc:
    """The actor was already gone when it was monitored or linked."""

    def __str__(self) -> str:
        return "noproc"


@dataclass(frozen=True, slots=True)
class Crash:
    """The actor died of an unhandled exception (in a handler, a hook, on_start)."""

    exception: BaseException

    def __str__(self) -> str:
        return f"crash: {self.exception!r}"


ExitReason: TypeAlias = Normal | Shutdown | Killed | NoProc | Crash

NORMAL = Normal()
SHUTDOWN = Shutdown()
KILLED = Killed()
NOPROC = NoProc()


def is_abnormal(reason: ExitReason) -> bool:
    """True for reasons that make a ``transient`` child restart."""
    return not isinstance(reason, (Normal, Shutdown))
