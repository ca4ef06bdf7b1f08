"""Ops layer: the supervision tree and the busiest mailboxes, written to the log. Stdlib, pykka, codec, supervisors, ops.

SIGUSR1 (``actorbroker serve``) and ``POST /api/v1/dump`` both call
:func:`dump`: the same :func:`~actorbroker.ops.tree.walk` as the API's tree,
so the log shows what ``ctl tree`` would have shown at that moment, for the
operator who has a log but no HTTP listener. Each actor is one INFO line
(indented by depth, so that a grep keeps its path), then the ``TOP``
busiest mailboxes of the whole tree.
"""

from __future__ import annotations

import logging
from typing import Any

from pykka import ActorRef

from actorbroker.codec import shown

from .tree import TreeNode, flatten, walk

__all__ = ["TOP", "dump", "tree_lines"]

log = logging.getLogger("actorbroker.dump")

#: Busiest mailboxes listed after the tree.
TOP = 10
#: Longest path shown whole (a session's path holds its client id, up to 65535 bytes).
_LONGEST = 200


def tree_lines(tree: TreeNode) -> list[str]:
    """The tree as text: one line per actor, then the ``TOP`` busiest mailboxes."""
    lines: list[str] = []
    _describe(tree, 0, lines)
    nodes = flatten(tree)
    busiest = sorted((n for n in nodes if n.mailbox > 0), key=lambda n: -n.mailbox)[:TOP]
    lines.append(f"busiest mailboxes (top {TOP}): "
                 + (", ".join(f"{_path(n)}={n.mailbox}" for n in busiest)
                    or "all empty"))
    return lines


def _describe(node: TreeNode, depth: int, lines: list[str]) -> None:
    state = "alive" if node.alive else "not running"
    text = (f"{'  ' * depth}{_path(node)} {node.kind} {node.actor or '-'} {state} "
            f"mailbox={node.mailbox} restarts={node.restarts}")
    if node.kind == "supervisor":
        text += f" children={node.children_total} restarts_total={node.restarts_total}"
        if len(node.children) < node.children_total:
            text += f" (listed: the {len(node.children)} busiest)"
        if node.busy:
            text += " busy (restarting children: not listed)"
    lines.append(text)
    for child in node.children:
        _describe(child, depth + 1, lines)


def _path(node: TreeNode) -> str:
    """The node's path; escaped and cut when a client id in it would break the line."""
    path = node.path or "root"
    return path if path.isprintable() and len(path) <= _LONGEST else shown(path, _LONGEST)


async def dump(root: ActorRef[Any], why: str) -> list[str]:
    """Walk the tree under ``root`` and log it at INFO (``why``: "SIGUSR1", ...); the lines."""
    lines = tree_lines(await walk(root))
    log.info("supervision tree (%s), %d actor(s):", why, len(lines) - 1)
    for line in lines:
        log.info("  %s", line)
    return lines
