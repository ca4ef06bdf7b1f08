"""Command line: ``actorbroker ctl``, the admin API from a terminal. Top layer: stdlib and the CLI only.

    actorbroker ctl --url http://127.0.0.1:18083 [--token-file F] COMMAND
        clients [--prefix P] [--state online|offline]
        client ID        one client's session (subscriptions, queue, Will)
        kick ID          close its connection
        sessions [--prefix P]
        retained [--filter F]
        tree             the supervision tree with mailboxes and restarts
        top [--interval S] [--iterations N]   the busiest clients and topics, redrawn in place

It speaks HTTP with urllib (no dependency): a plain client of the API of
docs/operations.md. Exit codes: 0 done, 1 the broker answered with an
error (its message is printed), 2 bad usage, 3 the broker cannot be reached.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, TextIO

__all__ = ["add_parser", "run"]

_CLEAR = "\x1b[H\x1b[2J"  # cursor home, clear screen: top redraws in place


class CtlError(Exception):
    """The call failed: ``code`` is the exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def add_parser(sub: Any) -> None:
    """The ``ctl`` subcommand and its commands."""
    ctl = sub.add_parser("ctl", help="talk to a running broker's admin API",
                         description="Call the admin API of a running broker "
                                     "(docs/operations.md).")
    ctl.add_argument("--url", default="http://127.0.0.1:18083",
                     help="the broker's HTTP listener (default http://127.0.0.1:18083)")
    ctl.add_argument("--token-file", metavar="FILE", help="file holding the bearer token")
    ctl.add_argument("--timeout", type=float, default=10.0, help=argparse.SUPPRESS)
    commands = ctl.add_subparsers(dest="ctl_command", metavar="COMMAND", required=True)
    clients = commands.add_parser("clients", help="list clients")
    clients.add_argument("--prefix", default="")
    clients.add_argument("--state", choices=("online", "offline"))
    commands.add_parser("client", help="one client's session").add_argument("id")
    commands.add_parser("kick", help="close a client's connection").add_argument("id")
    sessions = commands.add_parser("sessions", help="list sessions")
    sessions.add_argument("--prefix", default="")
    retained = commands.add_parser("retained", help="list retained messages")
    retained.add_argument("--filter", default="#")
    commands.add_parser("tree", help="the supervision tree")
    top = commands.add_parser("top", help="the busiest clients and topics, redrawn in place")
    top.add_argument("--interval", type=float, default=1.0)
    top.add_argument("--iterations", type=int, default=0, help="stop after N (0: never)")


class Api:
    """GET/POST JSON against the broker."""

    def __init__(self, url: str, token: str | None, timeout: float) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def call(self, method: str, path: str, query: dict[str, str] | None = None) -> Any:
        url = self.url + path
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v})
        request = urllib.request.Request(url, method=method)
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            try:
                detail = json.loads(exc.read()).get("error", "")
            except ValueError:
                detail = ""
            raise CtlError(f"{exc.code} {exc.reason}: {detail}".rstrip(": "), 1) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise CtlError(f"cannot reach {self.url}: {reason}", 3) from None


def _quote(part: str) -> str:
    return urllib.parse.quote(part, safe="")


def _tree_lines(node: dict[str, Any], depth: int = 0) -> list[str]:
    alive = "" if node["alive"] else "  DEAD"
    more = ""
    if node["kind"] == "supervisor" and node.get("children_total", 0) > len(node["children"]):
        more = f"  ({node['children_total']} children, {len(node['children'])} shown)"
    lines = [f"{'  ' * depth}{node['name']:<{max(1, 28 - 2 * depth)}} {node['actor']:<18} "
             f"mailbox {node['mailbox']:<6} restarts {node['restarts']}{alive}{more}"]
    for child in node["children"]:
        lines += _tree_lines(child, depth + 1)
    return lines


def _top_screen(stats: dict[str, Any]) -> list[str]:
    rates = stats["rates"]
    lines = [
        f"actorbroker {stats['version']} on {stats['node']}   up {int(stats['uptime'])} s   "
        f"clients {stats['connections']['clients']}   sessions {stats['sessions']['total']}",
        f"msgs/s in {rates['publish_received']:.0f}  out {rates['publish_sent']:.0f}   "
        f"bytes/s in {rates['bytes_in']:.0f}  out {rates['bytes_out']:.0f}   "
        f"queued {stats['queues']['messages']}  in flight {stats['queues']['inflight']}   "
        f"fsync p99 {stats['fsync']['p99'] * 1000:.2f} ms",
        "",
        f"{'CLIENT':<32} {'PKT/S IN':>10} {'PKT/S OUT':>10} {'B/S IN':>12} {'B/S OUT':>12}",
    ]
    for row in stats["top"]:
        lines.append(f"{row['client_id'][:32]:<32} {row['packets_in']:>10.1f} "
                     f"{row['packets_out']:>10.1f} {row['bytes_in']:>12.0f} "
                     f"{row['bytes_out']:>12.0f}")
    if not stats["top"]:
        lines.append("(no client sent or received anything in the last second)")
    lines += ["", f"{'TOPIC':<60} {'MSGS/S':>10}"]
    for row in stats["top_topics"]:
        lines.append(f"{row['topic'][:60]:<60} {row['messages_per_s']:>10.1f}")
    if not stats["top_topics"]:
        lines.append("(no topic busy enough for a topic actor in the last second)")
    return lines


def _command(api: Api, args: argparse.Namespace, out: TextIO) -> None:
    command = args.ctl_command
    if command == "clients":
        found = api.call("GET", "/api/v1/clients", {"prefix": args.prefix,
                                                    "state": args.state or ""})
        for client in found["clients"]:
            print(f"{client['client_id']:<40} {client['state']:<8} {client.get('peer', '')}",
                  file=out)
        print(f"{found['total']} client(s)", file=out)
    elif command == "client":
        print(json.dumps(api.call("GET", f"/api/v1/clients/{_quote(args.id)}"), indent=2),
              file=out)
    elif command == "kick":
        api.call("POST", f"/api/v1/clients/{_quote(args.id)}/kick")
        print(f"kicked {args.id}", file=out)
    elif command == "sessions":
        found = api.call("GET", "/api/v1/sessions", {"prefix": args.prefix})
        for session in found["sessions"]:
            print(f"{session['client_id']:<40} {session['state']:<8} "
                  f"queued {session.get('queued', '-')}", file=out)
        print(f"{found['total']} session(s)", file=out)
    elif command == "retained":
        found = api.call("GET", "/api/v1/retained", {"filter": args.filter})
        for item in found["retained"]:
            print(f"{item['topic']:<48} qos {item['qos']}  {item['payload_bytes']} bytes", file=out)
        print(f"{found['total']} retained message(s)", file=out)
    elif command == "tree":
        print("\n".join(_tree_lines(api.call("GET", "/api/v1/tree"))), file=out)
    elif command == "top":
        done = 0
        while True:
            screen = _top_screen(api.call("GET", "/api/v1/stats"))
            out.write(_CLEAR + "\n".join(screen) + "\n")
            out.flush()
            done += 1
            if args.iterations and done >= args.iterations:
                return
            time.sleep(args.interval)


def run(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    """Run one ``ctl`` command; the exit code (see the module doc)."""
    token = None
    if args.token_file:
        try:
            with open(args.token_file, encoding="utf-8") as file:
                token = file.readline().strip()
        except OSError as exc:
            print(f"cannot read the token file: {exc}", file=sys.stderr)
            return 2
    try:
        _command(Api(args.url, token, args.timeout), args, out)
    except CtlError as exc:
        print(exc, file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        return 0
    return 0
