"""Ops layer: the live supervision tree, as Erlang's observer shows it. Stdlib, pykka and supervisors only.

:func:`walk` asks each supervisor ``which_children`` and ``count_children``
(``ask(block=False)``, awaited: never blocking the loop; siblings are asked
at once) and reads each actor's mailbox depth on the loop thread. A node is
``{name, path, kind, actor, mailbox, restarts, alive, children}``; a
supervisor also gets ``restarts_total`` (children it restarted, ever),
``children_total`` and ``busy`` (it did not answer within ``ASK_TIMEOUT``:
it is restarting children, and answers requests only afterwards). A sharded supervisor of sessions can hold thousands of
children: at most ``limit`` of each supervisor's children are listed, the
busiest mailboxes first (``children_total`` says how many there are).

Paths name a node from the root: ``core/registry``,
``core/sessions/3/client-7``; :func:`find` looks one up for the API's kill.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from pykka import ActorDeadError, ActorRef

from supervisors import ChildKind, ChildState, count_children, mailbox_depth, which_children

__all__ = ["TreeNode", "find", "flatten", "walk"]

#: Children listed per supervisor unless the caller asks otherwise.
DEFAULT_LIMIT = 100
#: A supervisor busy restarting children answers requests only afterwards: not waited for.
ASK_TIMEOUT = 2.0


@dataclass(slots=True)
class TreeNode:
    """One actor of the tree (see the module doc); ``ref`` is None when not running."""

    name: str
    path: str
    kind: str                      # "supervisor" or "worker"
    actor: str                     # its class name
    ref: ActorRef[Any] | None
    mailbox: int = 0
    restarts: int = 0              # times its supervisor restarted it
    restarts_total: int = 0        # a supervisor: children it restarted, ever
    children_total: int = 0
    busy: bool = False             # a supervisor that did not answer in time (children unknown)
    children: list[TreeNode] = field(default_factory=list)

    @property
    def alive(self) -> bool:
        return self.ref is not None and self.ref.is_alive()

    def as_json(self) -> dict[str, Any]:
        """The API's form of this node and its subtree."""
        out: dict[str, Any] = {
            "name": self.name, "path": self.path, "kind": self.kind, "actor": self.actor,
            "mailbox": self.mailbox, "restarts": self.restarts, "alive": self.alive,
            "children": [child.as_json() for child in self.children],
        }
        if self.kind == "supervisor":
            out["restarts_total"] = self.restarts_total
            out["children_total"] = self.children_total
            out["busy"] = self.busy
        return out


async def walk(root: ActorRef[Any], *, limit: int = DEFAULT_LIMIT) -> TreeNode:
    """The tree under ``root`` (its children at most ``limit`` per supervisor)."""
    node = TreeNode("root", "", "supervisor", _class_name(root), root,
                    mailbox=mailbox_depth(root))
    await _fill(node, root, limit)
    return node


async def _fill(node: TreeNode, ref: ActorRef[Any], limit: int) -> None:
    try:
        infos = await asyncio.wait_for(which_children(ref), ASK_TIMEOUT)
        counts = await asyncio.wait_for(count_children(ref), ASK_TIMEOUT)
    except ActorDeadError:
        return  # it died while we asked: shown without children
    except asyncio.TimeoutError:
        node.busy = True  # restarting its children (the core folding a long log): no answer yet
        return
    node.restarts_total = counts.restarts
    node.children_total = len(infos)
    children = []
    for info in infos:
        child_ref = info.ref if info.state is ChildState.RUNNING else None
        name = str(info.id) if not isinstance(info.id, ActorRef) else info.id.actor_urn[-8:]
        children.append(TreeNode(
            name, f"{node.path}/{name}" if node.path else name,
            "supervisor" if info.kind is ChildKind.SUPERVISOR else "worker",
            _class_name(child_ref) if child_ref is not None else "",
            child_ref, mailbox=mailbox_depth(child_ref) if child_ref is not None else 0,
            restarts=info.restarts,
        ))
    if len(children) > limit:
        children.sort(key=lambda c: -c.mailbox)  # the busiest are the ones worth seeing
        del children[limit:]
    node.children = children
    await asyncio.gather(*(
        _fill(child, child.ref, limit) for child in children
        if child.kind == "supervisor" and child.ref is not None))


def _class_name(ref: ActorRef[Any]) -> str:
    return ref.actor_class.__name__


def flatten(node: TreeNode) -> list[TreeNode]:
    """Every node of the subtree, parents before children."""
    out = [node]
    for child in node.children:
        out.extend(flatten(child))
    return out


def find(tree: TreeNode, name: str) -> list[TreeNode]:
    """Nodes whose path is ``name``, else those whose name is (maybe several)."""
    nodes = flatten(tree)
    exact = [n for n in nodes if n.path == name]
    return exact or [n for n in nodes if n.name == name]
