"""Codec layer: cheap construction of frozen slotted dataclasses. Imports the stdlib only.

The packets, session effects, actor messages and application messages are
frozen slotted dataclasses (docs/style.md), and the hot paths make several per
message. The ``__init__`` that ``dataclass(frozen=True)`` writes stores each
field through ``object.__setattr__``, looked up by name per field; that costs
about three times a plain slot store (325 ns against 112 ns for two fields,
``bench.run`` ``pairs-q1`` spent 9.7% of the broker's samples there).

:func:`quick_init` replaces that ``__init__`` with one of the same signature
that stores through each slot's descriptor (181 ns for two fields). Nothing
else changes: instances stay immutable at run time (the dataclass's
``__setattr__`` still raises ``FrozenInstanceError``), equal, hashable and
picklable as before, and the type checker still sees the ``@dataclass``.
:func:`mutable_twin` is the cheaper still way for a parser or a copy that
fills many fields at once.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, TypeVar

__all__ = ["QUICK", "mutable_twin", "quick_init"]

_T = TypeVar("_T")

#: Every class given a quick ``__init__``, with the dataclass's own one (for the tests).
QUICK: dict[type[Any], Any] = {}


def quick_init(cls: type[_T]) -> type[_T]:
    """Give the frozen slotted dataclass ``cls`` an ``__init__`` storing through its slots.

    Apply it above ``@dataclass(frozen=True, slots=True)``. Only plain fields
    are supported, ``init=False`` ones with a default included; a class with
    ``__post_init__`` or a ``default_factory`` is refused here, at import,
    rather than built differently from what the dataclass would build.
    """
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"quick_init: {cls.__name__} is not a frozen slotted dataclass")
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if hasattr(cls, "__post_init__") or any(
        f.default_factory is not dataclasses.MISSING for f in fields
    ):
        raise TypeError(f"quick_init: {cls.__name__} has fields it does not support")
    original = cls.__init__
    signature = inspect.signature(original)
    namespace: dict[str, Any] = {}
    params_src: list[str] = []
    star = False
    for param in list(signature.parameters.values())[1:]:
        if param.kind is param.KEYWORD_ONLY and not star:
            params_src.append("*")
            star = True
        text = param.name
        if param.default is not param.empty:
            namespace[f"_d_{param.name}"] = param.default
            text += f"=_d_{param.name}"
        params_src.append(text)
    body = []
    for field in fields:
        # The member descriptor of the slot, wherever in the MRO it is defined.
        namespace[f"_s_{field.name}"] = inspect.getattr_static(cls, field.name).__set__
        if field.init:
            body.append(f"    _s_{field.name}(self, {field.name})\n")
        elif field.default is not dataclasses.MISSING:  # as the dataclass: set, not passed
            namespace[f"_d_{field.name}"] = field.default
            body.append(f"    _s_{field.name}(self, _d_{field.name})\n")
    source = "def __init__(self, " + ", ".join(params_src) + "):\n" + ("".join(body) or "    pass\n")
    exec(source, namespace)  # noqa: S102 - built from the dataclass's own field names
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = original.__doc__
    init.__annotations__ = dict(original.__annotations__)
    cls.__init__ = init  # type: ignore[method-assign]
    QUICK[cls] = original
    return cls


def mutable_twin(cls: type[Any]) -> Any:
    """A mutable dataclass with the same slot layout as the frozen ``cls``.

    The hot paths that fill a whole object at once (a parser, a copy with one
    field changed) build the twin (plain slot stores, defaults included) and
    retype it with ``obj.__class__ = cls``: the result is an ordinary,
    immutable ``cls`` instance, built faster still than by :func:`quick_init`.
    """
    twin = dataclasses.make_dataclass(
        f"_{cls.__name__}Builder",
        [(f.name, f.type, dataclasses.field(default=f.default))
         if f.default is not dataclasses.MISSING else (f.name, f.type)
         for f in dataclasses.fields(cls)],
        slots=True,
    )
    assert twin.__slots__ == cls.__slots__  # type: ignore[attr-defined]
    return twin
