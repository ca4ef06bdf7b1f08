"""Fail loudly if pykka's internals that supervisors/ relies on change.

supervisors/ subclasses pykka.Actor and overrides private hooks, reads private
attributes and replaces the registry's list. setup.cfg pins pykka to 4.5.x;
before widening the pin, make every test here pass against the new version.
"""

from __future__ import annotations

import inspect
import re
from importlib.metadata import version
from typing import Any

import pykka
import pytest
from pykka import Actor, ActorRef, ActorRegistry, Future, ThreadingActor
from pykka import _actor, _registry
from pykka._envelope import Envelope
from pykka.messages import ProxyCall, ProxyGetAttr, ProxySetAttr, _ActorStop

from supervisors import loop_actor
from supervisors.registry import RefTable


def _params(func: Any) -> list[str]:
    return list(inspect.signature(func).parameters)


def _source(obj: Any) -> str:
    return inspect.getsource(obj)


def test_pykka_version_is_in_the_pinned_minor_range() -> None:
    major, minor, *_ = (int(part) for part in version("pykka").split(".")[:3])
    assert (major, minor) == (4, 5), (
        f"pykka {version('pykka')} is outside the pinned 4.5.x: re-check the"
        " private hooks supervisors/ overrides (this file lists them)"
    )


@pytest.mark.parametrize(
    ("name", "params", "static"),
    [
        ("_create_actor_inbox", [], True),
        ("_create_future", [], True),
        ("_start_actor_loop", ["self"], False),
        ("_stop", ["self"], False),
        ("_handle_receive", ["self", "message"], False),
        ("_handle_failure", ["self", "exception_type", "exception_value", "traceback"], False),
        ("_actor_loop", ["self"], False),
        ("_actor_loop_setup", ["self"], False),
        ("_actor_loop_running", ["self"], False),
        ("_actor_loop_teardown", ["self"], False),
        ("on_start", ["self"], False),
        ("on_stop", ["self"], False),
        ("on_failure", ["self", "exception_type", "exception_value", "traceback"], False),
    ],
)
def test_actor_hooks_keep_their_signatures(name: str, params: list[str], static: bool) -> None:
    raw = inspect.getattr_static(Actor, name)
    assert isinstance(raw, staticmethod) is static, name
    assert _params(getattr(Actor, name)) == params, name


def test_actor_init_sets_exactly_what_loop_actor_init_replicates() -> None:
    class Probe(ThreadingActor):
        pass

    probe = Probe()  # constructed, never started: no thread
    assert set(vars(probe)) == {"actor_urn", "actor_inbox", "actor_stopped", "_actor_ref"}
    init = _source(Actor.__init__)
    assert "self._create_actor_inbox()" in init and "ActorRef(self)" in init


def test_start_registers_then_starts_the_loop() -> None:
    start = _source(Actor.start)
    assert start.index("ActorRegistry.register(") < start.index("obj._start_actor_loop()")


def test_actor_stop_and_failure_do_what_the_overrides_assume() -> None:
    stop = _source(Actor._stop)
    for step in ("ActorRegistry.unregister", "actor_stopped.set()", "self.on_stop()"):
        assert step in stop
    failure = _source(Actor._handle_failure)
    assert "ActorRegistry.unregister" in failure and "actor_stopped.set()" in failure


def test_handle_receive_knows_the_message_types_loop_actor_dispatches() -> None:
    pattern = r"isinstance\(message, (?:messages\.)?(\w+)\)"
    checked = set(re.findall(pattern, _source(Actor._handle_receive)))
    assert checked == {"_ActorStop", "ProxyCall", "ProxyGetAttr", "ProxySetAttr"}
    pykka_types = {_ActorStop, ProxyCall, ProxyGetAttr, ProxySetAttr}
    assert pykka_types <= set(loop_actor._SYSTEM)


def test_messages_keep_their_fields() -> None:
    assert _ActorStop._fields == ()
    assert ProxyCall._fields == ("attr_path", "args", "kwargs")
    assert ProxyGetAttr._fields == ("attr_path",)
    assert ProxySetAttr._fields == ("attr_path", "value")
    from pykka._introspection import get_attr_directly

    assert _params(get_attr_directly) == ["root", "attr_path"]


def test_envelope_is_message_and_reply_to() -> None:
    assert Envelope.__slots__ == ["message", "reply_to"]
    assert _params(Envelope.__init__) == ["self", "message", "reply_to"]


def test_actor_ref_reads_the_attributes_loop_actor_sets() -> None:
    init = _source(ActorRef.__init__)
    for attr in ("actor.actor_urn", "actor.actor_inbox", "actor.actor_stopped"):
        assert attr in init
    assert "weakref.ref(actor)" in init
    assert "self._actor_weakref" in init
    assert "self.actor_class._create_future()" in _source(ActorRef.ask)
    assert "Envelope(message)" in _source(ActorRef.tell)
    assert "self.ask(_ActorStop(), block=False)" in _source(ActorRef.stop)
    assert _params(ActorRef.stop) == ["self", "block", "timeout"]
    assert _params(ActorRef.ask) == ["self", "message", "block", "timeout"]


def test_future_get_hook_internals() -> None:
    from pykka._future import _Unset

    future = pykka.ThreadingFuture()
    assert future._get_hook is None and isinstance(future._get_hook_result, _Unset)
    assert "self._get_hook(timeout)" in _source(Future.get)
    assert _params(Future.set_get_hook) == ["self", "func"]


def test_registry_uses_only_the_list_operations_ref_table_provides() -> None:
    source = _source(_registry.ActorRegistry)
    uses = re.findall(r"(.{0,12})cls\._actor_refs(\S{0,8})", source)
    allowed_after = {"", ":", "[:]", ".append(", ".remove(", "_lock:"}
    for before, after in uses:
        assert after in allowed_after or after.startswith("_lock"), (before, after)
    assert isinstance(ActorRegistry._actor_refs, RefTable)  # installed on import
    assert set(dir(RefTable)) >= {"append", "remove", "__contains__", "__getitem__", "__iter__"}


def test_threading_actor_internals_used_by_thread_actor() -> None:
    running = _source(_actor.Actor._actor_loop_running)
    assert "self.actor_inbox.get()" in running
    assert "_actor_loop_setup" in _source(Actor._actor_loop)
    assert "target=self._actor_loop" in _source(ThreadingActor._start_actor_loop)
    assert isinstance(inspect.getattr_static(ThreadingActor, "use_daemon_thread"), bool)
