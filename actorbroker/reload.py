"""Process layer: what a running broker reloads (SIGHUP, files changed). Stdlib only.

A :class:`Reloader` is a list of named hooks. The broker adds one per
thing that can change under a running process (``log level``: the
configuration file's ``[log] level``; ``auth files``: the password, SCRAM
and ACL files); a later part (TLS certificates) adds its own the same way::

    broker.reloads.add("certificates", reload_certificates)

:meth:`Reloader.run` calls every hook in order, on the loop thread. A hook
returns a line saying what it did (None: nothing to do) or raises to say why
it could not; it must then leave what was in force untouched (load first,
swap after). One failing hook does not stop the others, and nothing here
ever stops the broker: SIGHUP is ``systemctl reload``, never a shutdown.
Every outcome is logged at INFO (done), or ERROR (failed, old kept).

Some hooks also have a cheap ``changed()`` test (a file's modification time
and size); :meth:`Reloader.poll` runs only the hooks whose test says so,
which the broker does every few seconds so that an edited password or ACL
file takes effect without a signal.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Outcome", "Reloader"]

log = logging.getLogger("actorbroker.reload")


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one hook did: ``ok`` and its line (what changed, or why it failed)."""

    name: str
    ok: bool
    message: str


@dataclass(frozen=True, slots=True)
class _Hook:
    name: str
    reload: Callable[[], str | None]
    changed: Callable[[], bool] | None


class Reloader:
    """Named reload hooks, run in the order they were added (see the module doc)."""

    __slots__ = ("_hooks",)

    def __init__(self) -> None:
        self._hooks: list[_Hook] = []

    def add(self, name: str, reload: Callable[[], str | None],
            changed: Callable[[], bool] | None = None) -> None:
        """Add a hook; ``changed`` (optional) tells :meth:`poll` when to run it."""
        self._hooks.append(_Hook(name, reload, changed))

    @property
    def names(self) -> list[str]:
        """The hooks' names, in order."""
        return [hook.name for hook in self._hooks]

    def run(self, why: str) -> list[Outcome]:
        """Run every hook (``why``: "SIGHUP", ... for the log); never raises."""
        log.info("reloading (%s): %s", why, ", ".join(self.names) or "nothing to reload")
        return [self._run(hook, why) for hook in self._hooks]

    def poll(self) -> list[Outcome]:
        """Run the hooks whose ``changed()`` is true; never raises."""
        outcomes = []
        for hook in self._hooks:
            try:
                changed = hook.changed is not None and hook.changed()
            except Exception as exc:  # a test that fails must not stop the poller
                log.error("reload check of %s failed: %s", hook.name, exc)
                continue
            if changed:
                outcomes.append(self._run(hook, "file changed"))
        return outcomes

    def _run(self, hook: _Hook, why: str) -> Outcome:
        try:
            message = hook.reload()
        except Exception as exc:  # whatever it is, the broker goes on with what it had
            log.error("reload of %s failed (%s), the previous one stays in force: %s",
                      hook.name, why, exc)
            return Outcome(hook.name, False, str(exc))
        text = message or "unchanged"
        log.info("reloaded %s (%s): %s", hook.name, why, text)
        return Outcome(hook.name, True, text)
