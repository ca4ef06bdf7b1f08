"""supervisors: an Erlang/OTP-style actor runtime on pykka.

A generic library: imports pykka and the standard library, never
``actorbroker`` (import-linter checks it). See docs/supervisors.md.

* Actors: :class:`LoopActor` (on an asyncio loop, no thread; async handlers)
  and :class:`ThreadActor` (pykka's ThreadingActor, for blocking work); both
  supervisable; :class:`LoopFuture` is awaitable.
* Links and monitors: :func:`link`, :func:`monitor`, :class:`Down`,
  :class:`Exited`, :func:`exit_future`, :func:`kill`, :func:`crash`; telling an
  actor that may have stopped: :func:`tell_if_alive`, :func:`send_after`; for operators,
  :func:`mailbox_depth` and :func:`actor_of`; exit reasons
  :class:`Normal`, :class:`Shutdown`, :class:`Killed`, :class:`Crash`,
  :class:`NoProc`.
* Supervision: :class:`ChildSpec`, :class:`Supervisor`,
  :class:`DynamicSupervisor`, :class:`ShardedSupervisor`, strategies and
  intensity, requests (:func:`start_child`, ...), :class:`Application`.
"""

from supervisors.application import Application, main
from supervisors.dynamic import DynamicSupervisor
from supervisors.errors import (
    BlockingOnLoopError,
    ChildNotFoundError,
    ChildRunningError,
    CrashRequestedError,
    DuplicateChildError,
    IllegalTransitionError,
    NoEventLoopError,
    RestartIntensityError,
    StartChildError,
    SupervisorError,
)
from supervisors.future import LoopFuture
from supervisors.lifecycle import ChildState
from supervisors.links import (
    Down,
    Exited,
    Linkable,
    Monitor,
    Teller,
    actor_of,
    crash,
    demonitor,
    exit_future,
    kill,
    link,
    mailbox_depth,
    monitor,
    shutdown,
    tell_if_alive,
    unlink,
)
from supervisors.loop_actor import LoopActor, LoopActorRef, use_loop
from supervisors.reasons import (
    KILLED,
    NOPROC,
    NORMAL,
    SHUTDOWN,
    Crash,
    ExitReason,
    Killed,
    NoProc,
    Normal,
    Shutdown,
    is_abnormal,
)
from supervisors.requests import (
    ChildCounts,
    ChildInfo,
    count_children,
    delete_child,
    restart_child,
    start_child,
    terminate_child,
    which_children,
)
from supervisors.sharded import (
    ShardedSupervisor,
    ask_shard,
    shard_index,
    start_sharded_child,
    terminate_sharded_child,
)
from supervisors.spec import BRUTAL_KILL, INFINITY, ChildKind, ChildSpec, Restart
from supervisors.strategy import Intensity, Strategy
from supervisors.supervisor import Supervisor, supervisor_spec
from supervisors.thread_actor import ThreadActor
from supervisors.timers import send_after

__all__ = [
    "BRUTAL_KILL",
    "INFINITY",
    "KILLED",
    "NOPROC",
    "NORMAL",
    "SHUTDOWN",
    "Application",
    "BlockingOnLoopError",
    "ChildCounts",
    "ChildInfo",
    "ChildKind",
    "ChildNotFoundError",
    "ChildRunningError",
    "ChildSpec",
    "ChildState",
    "Crash",
    "CrashRequestedError",
    "Down",
    "DuplicateChildError",
    "DynamicSupervisor",
    "ExitReason",
    "Exited",
    "IllegalTransitionError",
    "Intensity",
    "Killed",
    "Linkable",
    "LoopActor",
    "LoopActorRef",
    "LoopFuture",
    "Monitor",
    "NoEventLoopError",
    "NoProc",
    "Normal",
    "Restart",
    "RestartIntensityError",
    "ShardedSupervisor",
    "Shutdown",
    "StartChildError",
    "Strategy",
    "Supervisor",
    "SupervisorError",
    "Teller",
    "ThreadActor",
    "actor_of",
    "ask_shard",
    "count_children",
    "crash",
    "delete_child",
    "demonitor",
    "exit_future",
    "is_abnormal",
    "kill",
    "link",
    "mailbox_depth",
    "main",
    "monitor",
    "restart_child",
    "send_after",
    "shard_index",
    "shutdown",
    "start_child",
    "start_sharded_child",
    "supervisor_spec",
    "tell_if_alive",
    "terminate_child",
    "terminate_sharded_child",
    "unlink",
    "use_loop",
    "which_children",
]
