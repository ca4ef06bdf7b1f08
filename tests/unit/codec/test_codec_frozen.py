"""quick_init: the replaced ``__init__`` builds exactly what the dataclass's own would."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from dataclasses import dataclass, field
from typing import Any

import pytest

import actorbroker.app  # noqa: F401 - imports every module that declares messages
from actorbroker.codec.frozen import QUICK, quick_init

CLASSES = sorted(QUICK, key=lambda cls: f"{cls.__module__}.{cls.__qualname__}")


@quick_init
@dataclass(frozen=True, slots=True)
class Base:
    a: int
    b: str = "b"


@quick_init
@dataclass(frozen=True, slots=True)
class Child(Base):
    c: tuple[int, ...] = ()
    d: int = field(default=4, kw_only=True)
    e: int = field(default=5, init=False, compare=False)


def _sentinels(init: Any) -> tuple[list[Any], dict[str, Any]]:
    """Arguments for ``init``: a distinct object for each parameter."""
    params = list(inspect.signature(init).parameters.values())[1:]
    args = [object() for p in params if p.kind is not p.KEYWORD_ONLY]
    kwargs = {p.name: object() for p in params if p.kind is p.KEYWORD_ONLY}
    return args, kwargs


def _slots(obj: Any) -> list[Any]:
    return [getattr(obj, f.name, "<unset>") for f in dataclasses.fields(obj)]


def test_the_hot_modules_use_it() -> None:
    names = {cls.__name__ for cls in QUICK}
    assert {"Publish", "PubAck", "Route", "Send", "AppMessage", "Deliver"} <= names


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__qualname__)
def test_same_signature_and_same_fields_as_the_dataclass_init(cls: type[Any]) -> None:
    original = QUICK[cls]
    assert inspect.signature(cls.__init__) == inspect.signature(original)
    args, kwargs = _sentinels(original)  # the same distinct objects through both
    theirs = object.__new__(cls)
    original(theirs, *args, **kwargs)
    ours = cls(*args, **kwargs)
    assert _slots(ours) == _slots(theirs)
    # Defaults, where every parameter has one, come out the same too.
    params = list(inspect.signature(original).parameters.values())[1:]
    if all(p.default is not p.empty for p in params):
        plain = object.__new__(cls)
        original(plain)
        assert _slots(cls()) == _slots(plain)


@pytest.mark.parametrize("cls", [c for c in CLASSES if dataclasses.fields(c)],
                         ids=lambda c: c.__qualname__)
def test_instances_stay_immutable(cls: type[Any]) -> None:
    args, kwargs = _sentinels(cls.__init__)
    obj = cls(*args, **kwargs)
    for each in dataclasses.fields(obj):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, each.name, 1)


def test_inherited_fields_keyword_only_and_pickling() -> None:
    child = Child(1, "x", (2,), d=3)
    assert (child.a, child.b, child.c, child.d, child.e) == (1, "x", (2,), 3, 5)
    assert Child(1) == Child(1, "b", (), d=4)
    assert hash(Child(1)) == hash(Child(1, "b"))
    with pytest.raises(TypeError):
        Child(1, "x", (2,), 3)  # type: ignore[misc]  # d is keyword-only
    assert pickle.loads(pickle.dumps(child)) == child


def test_refuses_what_it_would_build_differently() -> None:
    @dataclass(frozen=True, slots=True)
    class WithPostInit:
        a: int

        def __post_init__(self) -> None:
            pass

    @dataclass(frozen=True, slots=True)
    class WithFactory:
        a: list[int] = field(default_factory=list)

    @dataclass(slots=True)
    class Mutable:
        a: int

    @dataclass(frozen=True)
    class Unslotted:
        a: int

    for cls in (WithPostInit, WithFactory, Mutable, Unslotted):
        with pytest.raises(TypeError):
            quick_init(cls)
