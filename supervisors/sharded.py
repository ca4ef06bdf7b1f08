"""ShardedSupervisor: N dynamic supervisors, children placed by key hash.

Runtime layer; imports pykka and the stdlib only. One DynamicSupervisor per
shard, under a one_for_one supervisor; a child with key K always goes to
shard ``crc32(K) % N`` (stable across processes, unlike ``hash()``), as
VerneMQ shards its session supervisors by client id. This spreads restart
intensity and keeps any one supervisor's inbox short.

Requests for a shard travel through the ShardedSupervisor, which forwards the
original reply future to the shard without waiting, so shards work in
parallel: ``await start_sharded_child(sharded, key, spec)``.
"""

from __future__ import annotations

import zlib
from collections.abc import Hashable
from dataclasses import dataclass
from functools import partial
from typing import Any, cast

from pykka import ActorDeadError, ActorRef, Future
from pykka._envelope import Envelope

from supervisors.dynamic import DynamicSupervisor
from supervisors.future import LoopFuture
from supervisors.lifecycle import ChildState
from supervisors.requests import StartChild, TerminateChild
from supervisors.spec import ChildKind, ChildSpec
from supervisors.strategy import Intensity
from supervisors.supervisor import Clock, Supervisor

__all__ = [
    "ShardedSupervisor",
    "ToShard",
    "ask_shard",
    "shard_index",
    "start_sharded_child",
    "terminate_sharded_child",
]

ShardKey = str | bytes | int


def shard_index(key: ShardKey, shards: int) -> int:
    """The shard of ``key``: crc32 of its bytes (str as UTF-8) modulo ``shards``."""
    if isinstance(key, str):
        data = key.encode()
    elif isinstance(key, bytes):
        data = key
    elif isinstance(key, int):
        data = str(key).encode()
    else:
        raise TypeError(f"shard keys are str, bytes or int, not {type(key).__name__}")
    return zlib.crc32(data) % shards


@dataclass(frozen=True, slots=True)
class ToShard:
    """Forward ``message`` to the shard of ``key``, replying to ``reply``."""

    key: ShardKey
    message: Any
    reply: Future[Any]


class ShardedSupervisor(Supervisor):
    """``shards`` DynamicSupervisors (ids 0..N-1) under one_for_one."""

    def __init__(
        self,
        shards: int,
        *,
        intensity: Intensity = Intensity(),
        shard_intensity: Intensity = Intensity(),
        max_children: int | None = None,
        name: str | None = None,
        clock: Clock | None = None,
    ) -> None:
        if shards < 1:
            raise ValueError("a sharded supervisor needs at least one shard")
        prefix = name or "sharded"
        specs = [
            ChildSpec(
                id=index,
                start=partial(
                    DynamicSupervisor.start,
                    intensity=shard_intensity,
                    max_children=max_children,
                    name=f"{prefix}/{index}",
                    clock=clock,
                ),
                kind=ChildKind.SUPERVISOR,
            )
            for index in range(shards)
        ]
        super().__init__(specs, intensity=intensity, name=name, clock=clock)
        self._shards = shards

    def _request(self, message: Any) -> Any:
        if isinstance(message, ToShard):
            self._route(message)
            return None
        return super()._request(message)

    def _route(self, route: ToShard) -> None:
        child = self._children[shard_index(route.key, self._shards)]
        ref = child.ref
        if child.state is not ChildState.RUNNING or ref is None or not ref.is_alive():
            error = ActorDeadError(f"{self.name}: shard for {route.key!r} is down")
            route.reply.set_exception((ActorDeadError, error, None))
            return
        ref.actor_inbox.put(Envelope(route.message, reply_to=route.reply))


def ask_shard(sharded: ActorRef[Any], key: ShardKey, message: Any) -> LoopFuture[Any]:
    """Ask the shard that owns ``key``; the reply comes straight from it."""
    reply: LoopFuture[Any] = LoopFuture()
    try:
        sharded.tell(ToShard(key, message, reply))
    except ActorDeadError:
        reply.set_exception()
    return reply


def start_sharded_child(
    sharded: ActorRef[Any], key: ShardKey, spec: ChildSpec
) -> LoopFuture[ActorRef[Any]]:
    """Start a child in the shard of ``key``; the future holds its ref."""
    return cast("LoopFuture[ActorRef[Any]]", ask_shard(sharded, key, StartChild(spec)))


def terminate_sharded_child(
    sharded: ActorRef[Any], key: ShardKey, ref: Hashable
) -> LoopFuture[None]:
    """Stop a child (by ref) in the shard of ``key``."""
    return cast("LoopFuture[None]", ask_shard(sharded, key, TerminateChild(ref)))
