"""Top layer: the broker application: supervision tree, embedding API, ``serve``. May import everything.

The tree (docs/architecture.md, "The tree"; a crash in one session costs that
client a reconnect) is declared in :mod:`actorbroker.actors.tree`: a core
(storage, registry, topics, sessions, keeper, sys) and the listeners, last
(listener-N per ``[[listeners]]`` entry, http for ``[http]``).

Embedding (on a running loop, uvloop in production)::

    broker = Broker(config)
    await broker.start()          # listeners bound: broker.port is the real port
    ...
    await broker.stop()

Without ``[node] data_dir`` an embedded broker keeps everything in memory
and writes no file (``serve`` defaults it to ./data). Before any actor,
:func:`actorbroker.startup.preflight` checks the data directory and binds
the listeners, so that a start that fails says why in one line and leaves
nothing on disk.

From synchronous code (tests, scripts), a uvloop loop in a background thread::

    with Broker.run_in_thread(config) as running:
        client.connect(running.host, running.port)

``serve(config)`` runs the broker until SIGTERM/SIGINT (the ``actorbroker
serve`` command).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future as ConcurrentFuture
from contextlib import contextmanager
from functools import partial
from typing import Any, TypeVar

from pykka import ActorDeadError, ActorRef

from actorbroker.actors import (
    ListenerActor,
    ListenerHandle,
    Node,
    NodeSettings,
    SessionGateway,
)
from actorbroker import collector
from actorbroker.actors.tree import build_node, root_children
from actorbroker.codec import Properties, ReasonCode
from actorbroker.actors.connect.owners import Owners
from actorbroker.actors.connect.password_checks import PasswordChecks
from actorbroker.actors.connect.acl_reload import reload_auth_files
from actorbroker.config import Config, ListenerConfig, load
from actorbroker.errors import AuthError, ConfigError
from actorbroker.logbudget import LineBudget
from actorbroker.logsetup import apply_levels
from actorbroker.reload import Reloader
from actorbroker.startup import BrokerStartError, Preflight, held_tracebacks, preflight, root_cause
from actorbroker.ops import HttpListener, ListenerView, OpsContext, Sampler, dump, open_http
from actorbroker.transport import (
    ConnectionSettings,
    OverloadGuard,
    StatsTotal,
    TransportStats,
    new_event_loop,
    run,
    start_listener,
)
from supervisors.runqueue import run_queue_for
from supervisors import (
    ChildSpec,
    ExitReason,
    Strategy,
    Supervisor,
    exit_future,
    is_abnormal,
    shutdown,
    which_children,
)

__all__ = ["Broker", "BrokerStartError", "RunningBroker", "serve"]

log = logging.getLogger("actorbroker")
T = TypeVar("T")

#: BrokerMetrics fields that are not plain counters (RunningBroker.metrics leaves them out).
_NOT_COUNTERS = ("drop_log", "dropped", "sync_latency", "loop_lag", "received_qos", "sent_qos")
#: Seconds between looks at the password and ACL files' modification times.
FILE_POLL = 3.0


class Broker:
    """One broker node: its supervision tree and listeners (see the module doc)."""

    def __init__(self, config: Config | None = None, *, settings: NodeSettings | None = None
                 ) -> None:
        self.config = config or Config()
        self.settings = settings or NodeSettings.from_config(self.config)
        self.node: Node | None = None
        #: Where the listeners hand CONNECTs to (once started).
        self.gateway: SessionGateway | None = None
        self._root: ActorRef[Any] | None = None
        self._exit: Any = None
        self._bound: list[ListenerHandle | None] = [None] * len(self.config.listeners)
        #: One set of counters per listener (per-listener figures); ``stats`` sums them.
        self.listener_stats = [TransportStats() for _ in self.config.listeners]
        self.stats = StatsTotal(self.listener_stats)
        self._http: ListenerHandle | None = None
        self._log_budget: LineBudget | None = None
        self._guard: OverloadGuard | None = None
        self._password_checks: PasswordChecks | None = None
        #: What SIGHUP (and a changed file) reloads: see actorbroker/reload.py.
        self.reloads = Reloader()
        self._poller: asyncio.TimerHandle | None = None

    # -- where it listens ------------------------------------------------------

    @property
    def ports(self) -> list[int]:
        """The bound port of each listener (the real one when configured as 0)."""
        return [h.port for h in self._bound if h is not None]

    @property
    def port(self) -> int:
        """The first listener's port."""
        ports = self.ports
        if not ports:
            raise RuntimeError("the broker has no listener running")
        return ports[0]

    @property
    def host(self) -> str:
        """The first listener's bind address."""
        return self.config.listeners[0].bind if self.config.listeners else "127.0.0.1"

    @property
    def http_port(self) -> int | None:
        """The bound port of the HTTP listener ([http]), None when it is not serving."""
        return self._http.port if self._http is not None else None

    @property
    def root(self) -> ActorRef[Any] | None:
        """The root supervisor, once started."""
        return self._root

    # -- life ------------------------------------------------------------------

    async def start(self) -> None:
        """Start the tree on the running loop; return once every listener is bound.

        Raises :class:`BrokerStartError` when a part fails to start.
        """
        if self._root is not None:
            raise RuntimeError("the broker was started already")
        prepared = await preflight(self.config)  # nothing on disk or in the tree yet
        self._log_budget = LineBudget.install()  # a flood of clients must not flood the log
        limits = self.config.limits
        self._guard = OverloadGuard(asyncio.get_running_loop(), limits.max_memory,
                                    limits.max_loop_lag)
        self._guard.start()
        if self.config.node.data_dir is None:
            log.info("no data directory: sessions and messages are kept in memory only "
                     "([node] data_dir keeps them)")
        security = self.settings.security
        # Session owners count user names only when they are checked (actors/connect/owners.py).
        node = self.node = build_node(
            self.config, self.settings, stats=self.stats,
            owners=Owners(checked=security is not None and security.has_users))
        loop = asyncio.get_running_loop()
        checks = self._password_checks = PasswordChecks(loop)
        gateway = self.gateway = SessionGateway(node, loop.call_later, checks)
        listeners = [
            ChildSpec(id=f"listener-{index}",
                      start=partial(ListenerActor.start,
                                    partial(self._open, listener, gateway, prepared, index),
                                    partial(self._on_bound, index)),
                      shutdown=15.0, start_timeout=15.0)
            for index, listener in enumerate(self.config.listeners)
        ]
        if self.config.http.enabled:
            listeners.append(self._http_spec(node))
        self._root = Supervisor.start(root_children(self.config, node, listeners),
                                      strategy=Strategy.ONE_FOR_ALL, name="root")
        self._exit = exit_future(self._root)
        try:
            await which_children(self._root)  # answered once every child has started
        except ActorDeadError:
            reason = await self._exit
            self._guard.stop()
            checks.close()
            prepared.failed()
            raise BrokerStartError(f"the broker failed to start: {root_cause(reason)}") from None
        log.info("actorbroker started: listening on %s",
                 ", ".join(f"{c.bind}:{p}" for c, p in zip(self.config.listeners, self.ports)))
        if any(c.type in ("tls", "wss") for c in self.config.listeners):
            # Each TLS listener also polls its own files; SIGHUP reloads them at once.
            self.reloads.add("certificates", self._reload_certificates)
        if security is not None and security.has_files:
            self.reloads.add("auth files", partial(reload_auth_files, node), security.changed)
            self._poll(asyncio.get_running_loop())

    def _poll(self, loop: asyncio.AbstractEventLoop) -> None:
        """Reload what changed on disk, every ``FILE_POLL`` seconds while running."""
        self.reloads.poll()
        self._poller = loop.call_later(FILE_POLL, self._poll, loop)

    def reload(self, why: str = "request") -> None:
        """Run every reload hook now (loop thread; SIGHUP calls it). Never raises."""
        self.reloads.run(why)

    async def _open(self, listener: ListenerConfig, gateway: SessionGateway,
                    prepared: Preflight, index: int) -> ListenerHandle:
        settings = ConnectionSettings.from_limits(self.config.limits,
                                                  trace=tuple(self.config.log.trace))
        handle: ListenerHandle = await start_listener(listener, self.config.limits, gateway,
                                                      self.listener_stats[index],
                                                      settings=settings,
                                                      sockets=prepared.take(index),
                                                      guard=self._guard,
                                                      defer=run_queue_for(
                                                          asyncio.get_running_loop()).defer)
        reference = self.settings.server_reference
        if reference:  # MQTT 5: tell clients where to go when this node shuts down
            code = (ReasonCode.SERVER_MOVED if self.settings.server_moved
                    else ReasonCode.USE_ANOTHER_SERVER)
            handle.farewell = (code, Properties(server_reference=reference))  # type: ignore[attr-defined]
        return handle

    def _on_bound(self, index: int, handle: ListenerHandle | None) -> None:
        self._bound[index] = handle

    def _reload_certificates(self) -> str:
        """The reload hook of the TLS listeners' files (each logs what it did)."""
        if not self.reload_certificates():
            raise RuntimeError("a listener kept its previous certificate (see above)")
        return "every tls/wss listener reloaded its files"

    def reload_certificates(self) -> bool:
        """Reload the TLS files (certfile, keyfile, cafile, crlfile) of every tls/wss listener.

        The hook for SIGHUP; call it on the broker's loop thread. Open
        connections keep their TLS sessions; new handshakes use the new
        files. A listener whose files do not load keeps its previous ones and
        logs why. Returns whether every listener loaded its files (True with
        no TLS listener). Changed files are also picked up by each listener's
        own poll, every few seconds.
        """
        results = [handle.reload_certificates() for handle in self._bound if handle is not None]
        return all(results)  # every listener reloads, even after one failed

    def _http_spec(self, node: Node) -> ChildSpec:
        """The HTTP listener (metrics, admin API), last under the listeners supervisor."""
        sampler = Sampler(
            node, connections=lambda: (c for h in self._bound if h is not None
                                       for c in list(h.connections.values())))  # type: ignore[attr-defined]
        context = OpsContext(node, self.config, lambda: self._root, self._listener_views,
                             sampler)

        async def open_ops() -> HttpListener:
            handle = await open_http(context, self.config.http)
            sampler.start()
            return handle

        def on_bound(handle: ListenerHandle | None) -> None:
            self._http = handle
            if handle is None:
                sampler.stop()

        return ChildSpec(id="http", start=partial(ListenerActor.start, open_ops, on_bound),
                         shutdown=15.0, start_timeout=15.0)

    def _listener_views(self) -> list[ListenerView]:
        return [ListenerView(f"{c.bind}:{h.port}" if h is not None else f"{c.bind}:{c.port}",
                             stats, h.connections if h is not None else {})  # type: ignore[attr-defined]
                for c, h, stats in zip(self.config.listeners, self._bound, self.listener_stats)]

    async def stop(self) -> None:
        """Stop listeners (closing every connection), then the core; idempotent."""
        root = self._root
        if root is None:
            return
        if self._poller is not None:
            self._poller.cancel()
            self._poller = None
        shutdown(root)
        reason = await self._exit
        if self._guard is not None:
            self._guard.stop()
        if self._password_checks is not None:
            self._password_checks.close()
        if self.node is not None:
            self.node.metrics.drop_log.flush()
        if self._log_budget is not None:
            self._log_budget.flush()
        log.info("actorbroker stopped (%s)", reason)

    async def wait(self) -> ExitReason:
        """Wait until the tree has exited (after :meth:`stop`, or a fatal failure)."""
        if self._exit is None:
            raise RuntimeError("the broker was not started")
        reason: ExitReason = await self._exit
        return reason

    # -- from synchronous code -------------------------------------------------

    @classmethod
    @contextmanager
    def run_in_thread(cls, config: Config | None = None, *, settings: NodeSettings | None = None,
                      timeout: float = 15.0) -> Iterator[RunningBroker]:
        """Run a broker on a uvloop loop in a background thread for the ``with`` block."""
        loop = new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="actorbroker-loop", daemon=True)
        thread.start()
        broker = cls(config, settings=settings)
        running = RunningBroker(broker, loop)
        try:
            running.run(broker.start(), timeout)
            yield running
        finally:
            try:
                running.run(broker.stop(), timeout)
            finally:
                try:
                    running.run(_cancel_tasks(), timeout)
                finally:
                    loop.call_soon_threadsafe(loop.stop)
                    thread.join(timeout)
                    loop.close()


async def _cancel_tasks() -> None:
    current = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks() if t is not current]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


class RunningBroker:
    """A broker running in a background thread (see :meth:`Broker.run_in_thread`)."""

    def __init__(self, broker: Broker, loop: asyncio.AbstractEventLoop) -> None:
        self.broker = broker
        self.loop = loop

    @property
    def host(self) -> str:
        return self.broker.host

    @property
    def port(self) -> int:
        return self.broker.port

    @property
    def config(self) -> Config:
        return self.broker.config

    @property
    def http_url(self) -> str:
        """``http://HOST:PORT`` of the HTTP listener (RuntimeError when it is off)."""
        port = self.broker.http_port
        if port is None:
            raise RuntimeError("the broker serves no HTTP ([http] enabled is false)")
        return f"http://{self.config.http.bind}:{port}"

    @property
    def node(self) -> Node:
        node = self.broker.node
        assert node is not None
        return node

    def run(self, coro: Any, timeout: float = 15.0) -> Any:
        """Run a coroutine on the broker's loop and return its result."""
        future: ConcurrentFuture[Any] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result(timeout)

    def call(self, func: Callable[..., T], *args: Any, timeout: float = 15.0) -> T:
        """Call ``func(*args)`` on the broker's loop thread (where node state lives)."""
        async def call() -> T:
            return func(*args)
        result: T = self.run(call(), timeout)
        return result

    def metrics(self) -> dict[str, Any]:
        """A snapshot of the node's counters, read on the loop thread."""
        def read() -> dict[str, Any]:
            metrics = self.node.metrics
            values: dict[str, Any] = {name: getattr(metrics, name) for name in metrics.__slots__
                                      if name not in _NOT_COUNTERS}
            values["dropped"] = dict(metrics.dropped)
            values["sessions"] = len(self.node.names.sessions)
            values.update(self.node.stats.snapshot())
            return values
        return self.call(read)

    def wait_until(self, predicate: Callable[[dict[str, Any]], Any], timeout: float = 5.0,
                   poll: float = 0.01) -> dict[str, Any]:
        """Wait until ``predicate(self.metrics())`` holds; return those metrics.

        Polls every ``poll`` seconds: the broker's counters change on its
        own thread and offer no event to wait on. Raises TimeoutError.
        """
        done = threading.Event()
        deadline = self.loop.time() + timeout
        while True:
            values = self.metrics()
            if predicate(values):
                return values
            if self.loop.time() > deadline:
                raise TimeoutError(f"broker metrics never satisfied the condition: {values}")
            done.wait(poll)


def serve(config: Config, config_file: str | None = None, *, keep_level: bool = False) -> int:
    """Run the broker until SIGTERM or SIGINT; 0 after an orderly stop, 1 on failure.

    SIGHUP reloads (:meth:`Broker.reload`): ``[log] level`` (unless
    ``keep_level``: given on the command line) and ``levels`` from
    ``config_file`` (when the broker was started with one), the password and
    ACL files.
    SIGUSR1 logs the supervision tree and the busiest mailboxes (actorbroker.ops.dump).
    """
    async def main() -> int:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        received: list[str] = []
        started: list[Broker] = []

        def on_signal(sig: signal.Signals) -> None:
            received.append(sig.name)
            stop.set()

        def on_hangup() -> None:
            if started:
                started[0].reload("SIGHUP")
            else:
                log.info("SIGHUP during the start: nothing reloaded")

        def on_usr1() -> None:
            root = started[0].root if started else None
            if root is None:
                log.info("SIGUSR1 during the start: no tree to dump yet")
                return
            # The walk awaits the supervisors' answers: a task, so that the handler returns.
            dumps.add(task := loop.create_task(dump(root, "SIGUSR1")))
            task.add_done_callback(dumped)

        def dumped(task: asyncio.Task[list[str]]) -> None:
            dumps.discard(task)
            if not task.cancelled() and task.exception() is not None:
                log.error("SIGUSR1: the tree could not be dumped: %r", task.exception())

        dumps: set[asyncio.Task[list[str]]] = set()  # held: the loop keeps weak refs only
        # Before starting: a signal that arrives during the start stops the broker after it.
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, on_signal, sig)
        loop.add_signal_handler(signal.SIGHUP, on_hangup)
        loop.add_signal_handler(signal.SIGUSR1, on_usr1)
        try:
            broker = Broker(config)  # AuthError: the credentials file cannot be used
            if config_file is not None:
                keep = config.log.level if keep_level else None
                broker.reloads.add("log level", partial(_reload_log_level, config_file, keep))
            with held_tracebacks(show=config.log.level == "debug"):
                await broker.start()
        except (BrokerStartError, AuthError) as exc:
            log.debug("the start failed", exc_info=True)
            log.error("%s", exc)
            return 1
        started.append(broker)
        collector.tune()  # a long-running process: see actorbroker/collector.py
        ended = asyncio.ensure_future(broker.wait())
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait([ended, stopping], return_when=asyncio.FIRST_COMPLETED)
        if not received:
            reason = ended.result()
            stopping.cancel()
            log.critical("actorbroker: the supervision tree exited (%s); stopping", reason)
            return 1 if is_abnormal(reason) else 0
        log.info("received %s: stopping (listeners first, then the tree)", received[0])
        await broker.stop()
        await ended
        return 0

    return run(main())


def _reload_log_level(config_file: str, keep: str | None) -> str:
    """``[log] level`` (or ``keep``) and ``levels`` of ``config_file`` in force
    (ConfigError: the file is not valid, and nothing changes)."""
    try:
        section = load(config_file).log
    except ConfigError as exc:
        raise ConfigError(f"{config_file}: {exc}") from None
    level = keep or section.level
    named = apply_levels(level, section.levels)
    own = "; " + ", ".join(f"{n} {section.levels[n]}" for n in named) if named else ""
    return f"log level {level}{own} (from {config_file})"
