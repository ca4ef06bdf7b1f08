"""O(1) storage for pykka's ActorRegistry (runtime layer; pykka + stdlib).

pykka keeps registered refs in a plain list, so ``unregister`` is a linear
scan: stopping 100k actors newest-first costs ~10^10 comparisons. This module
swaps that list for :class:`RefTable`, an insertion-ordered dict that supports
the exact operations ``pykka._registry`` performs on it (``append``,
``remove``, ``in``, ``[:]``, iteration, ``len``). Registration order, and
therefore ``stop_all``'s reverse order, is unchanged.

The swap happens once, when ``supervisors`` is imported; refs registered
before that are carried over. tests/supervisors/test_pykka_pin.py checks that
pykka still uses only these operations.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, overload

from pykka import ActorRef, ActorRegistry

__all__ = ["RefTable", "install"]


class RefTable:
    """The list-like subset pykka's registry uses, backed by a dict."""

    __slots__ = ("_refs",)

    def __init__(self, refs: list[ActorRef[Any]] | None = None) -> None:
        self._refs: dict[ActorRef[Any], None] = dict.fromkeys(refs or ())

    def append(self, ref: ActorRef[Any]) -> None:
        self._refs[ref] = None

    def remove(self, ref: ActorRef[Any]) -> None:
        try:
            del self._refs[ref]
        except KeyError:
            raise ValueError(f"{ref!r} is not registered") from None

    def __contains__(self, ref: object) -> bool:
        return ref in self._refs

    @overload
    def __getitem__(self, index: int) -> ActorRef[Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[ActorRef[Any]]: ...

    def __getitem__(self, index: int | slice) -> ActorRef[Any] | list[ActorRef[Any]]:
        return list(self._refs)[index]

    def __iter__(self) -> Iterator[ActorRef[Any]]:
        return iter(list(self._refs))

    def __len__(self) -> int:
        return len(self._refs)

    def __repr__(self) -> str:
        return f"RefTable({list(self._refs)!r})"


def install() -> RefTable:
    """Replace ActorRegistry's list by a RefTable (idempotent, thread-safe)."""
    with ActorRegistry._actor_refs_lock:
        current: Any = ActorRegistry._actor_refs
        if isinstance(current, RefTable):
            return current
        table = RefTable(list(current))
        setattr(ActorRegistry, "_actor_refs", table)  # noqa: B010 - typed as list
        return table
