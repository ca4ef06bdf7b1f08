"""Command line: ``actorbroker serve | check-config FILE | passwd FILE USER | pipeline JOB | ctl ... | --version``.

``serve`` reloads on SIGHUP (actorbroker/reload.py): ``[log] level`` and
``levels`` from its ``--config`` file, the password and ACL files; SIGUSR1
logs the supervision tree (actorbroker/ops/dump.py).

Top layer: may import everything in the package. Kept thin; each subcommand
delegates to the module that does the work (configuration: actorbroker.config;
the broker: actorbroker.app; credentials: actorbroker.auth; Spark jobs:
actorbroker.pipeline.commands, which loads pyspark only when a job runs;
the admin API client: actorbroker.ctl).
``serve`` runs
until SIGTERM or SIGINT, which
stop it gracefully (listeners first, then the supervision tree). It takes
Mosquitto's ``-c FILE`` and ``-p N`` too, keeps its state in ./data unless
told otherwise, and logs to stderr with UTC timestamps, as text or JSON
lines (``[log] format``, actorbroker/logsetup.py).
Exit codes: 0 done, 1 invalid configuration or the broker failed (e.g. its
port is in use: one line says why, see actorbroker.startup), 2 bad usage
(argparse).
"""

from __future__ import annotations

import argparse
import getpass
import logging
import os
import sys
from collections.abc import Iterable
from typing import TextIO

from actorbroker import __version__
from actorbroker import ctl
from actorbroker.config import SERVE_DATA_DIR, Config, check, describe, load
from actorbroker.errors import ConfigError, InvalidConfigError
from actorbroker.logsetup import configure as configure_logging
from actorbroker.pipeline.commands import add_parser as add_pipeline_parser
from actorbroker.pipeline.commands import run as run_pipeline


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="actorbroker",
        description="An MQTT 3.1/3.1.1/5.0 broker on supervised pykka actors.",
    )
    parser.add_argument("--version", action="version", version=f"actorbroker {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = sub.add_parser(
        "serve", help="run the broker",
        description="Run the broker. Flags override the configuration file "
                    "(docs/configuration.md).",
    )
    # -c and -p: Mosquitto's flags, for the hands that type them.
    serve.add_argument("-c", "--config", metavar="FILE", help="TOML configuration file")
    # None means "not given": the file's value (or the default) stands.
    serve.add_argument("--bind", metavar="ADDR",
                       help="address of the first listener (default 127.0.0.1)")
    serve.add_argument("-p", "--port", type=int, metavar="N",
                       help="port of the first listener (default 1883)")
    serve.add_argument("--data-dir", metavar="DIR",
                       help=f"data directory (default {SERVE_DATA_DIR})")
    serve.add_argument("--log-level", metavar="LEVEL",
                       help="debug, info, warning or error (default info)")
    serve.add_argument("--http-port", type=int, metavar="N",
                       help="serve /metrics and the admin API on this port ([http] bind, "
                            "127.0.0.1 by default)")
    check_config = sub.add_parser(
        "check-config", help="report every error of a configuration file",
        description="Print 'ok' and exit 0 when FILE is valid; otherwise print "
                    "each error as FILE:LINE: message and exit 1.",
    )
    check_config.add_argument("file", metavar="FILE")
    passwd = sub.add_parser(
        "passwd", help="add a user to a password file (Mosquitto's format)",
        description="Add USER to (or replace it in) the password file FILE, created if "
                    "missing, mode 0600: Mosquitto's format ($7$, PBKDF2-SHA512, as "
                    "mosquitto_passwd writes; [auth] password_file), or the SCRAM "
                    "credentials format ([auth] scram_credentials_file) with --format scram "
                    "or when FILE already is one. The password is read from standard input "
                    "when it is not a terminal, else prompted for twice. Only salted hashes "
                    "are stored.",
    )
    passwd.add_argument("file", metavar="FILE")
    passwd.add_argument("user", metavar="USER")
    passwd.add_argument("--format", choices=("mosquitto", "scram"), default=None,
                        help="file format (default: FILE's own, mosquitto for a new file)")
    passwd.add_argument("--iterations", type=int, default=None, metavar="N",
                        help="PBKDF2 iterations (default 1000 for mosquitto, as Mosquitto 2.1, "
                             "with a 12-byte salt that 2.0 reads too; 4096 for scram, "
                             "RFC 7677's minimum)")
    passwd.add_argument("--delete", action="store_true", help="remove USER instead")
    add_pipeline_parser(sub)  # stdlib only: --help never starts Java
    ctl.add_parser(sub)
    return parser


def _print_errors(errors: Iterable[ConfigError], stream: TextIO) -> None:
    for error in errors:
        print(error, file=stream)


def _serve(args: argparse.Namespace) -> int:
    try:
        config = load(args.config) if args.config else Config()
        config = config.with_overrides(
            bind=args.bind, port=args.port, data_dir=args.data_dir, log_level=args.log_level,
            http_port=args.http_port,
        )
    except ConfigError as exc:
        _print_errors(exc.errors if isinstance(exc, InvalidConfigError) else [exc], sys.stderr)
        return 1
    if config.node.data_dir is None:  # a server keeps its state unless told otherwise
        config = config.with_overrides(data_dir=SERVE_DATA_DIR)
    configure_logging(config.log.level, config.log.format, config.log.levels)
    log = logging.getLogger("actorbroker")
    log.info("actorbroker %s starting", __version__)
    for line in describe(config):
        log.info("  %s", line)
    from actorbroker.app import serve  # the broker proper: loaded only to serve

    # SIGHUP takes the file's [log] level and levels again; --log-level keeps the level.
    return serve(config, args.config, keep_level=args.log_level is not None)


def _check_config(args: argparse.Namespace) -> int:
    errors = check(args.file)
    if errors:
        _print_errors(errors, sys.stdout)
        return 1
    # The transport (ssl, uvloop, websockets) is loaded only for a valid file.
    from actorbroker.auth import Security
    from actorbroker.errors import AuthError
    from actorbroker.startup import tls_file_problems

    config = load(args.file)
    problems = tls_file_problems(config)
    auth = config.auth  # the files it names are read as serve would read them
    try:
        Security(password_file=auth.password_file, scram_file=auth.scram_credentials_file,
                 acl_file=auth.acl_file)
    except AuthError as exc:
        problems.append(f"[auth] {exc}")
    for problem in problems:
        print(f"{args.file}: {problem}")
    if problems:
        return 1
    print("ok")
    return 0


def _is_scram_file(path: str) -> bool:
    """True if ``path`` exists and its first entry is a SCRAM secret."""
    try:
        with open(path, encoding="utf-8") as lines:
            for line in lines:
                if line.strip() and not line.startswith("#"):
                    return ":SCRAM-SHA-" in line
    except (OSError, UnicodeDecodeError):
        return False
    return False


def _passwd(args: argparse.Namespace) -> int:
    from actorbroker.auth import PBKDF2_ITERATIONS, Credentials, PasswordFile
    from actorbroker.errors import AuthError

    scram = args.format == "scram" or (args.format is None and _is_scram_file(args.file))
    floor = 4096 if scram else 1
    iterations = args.iterations or (4096 if scram else PBKDF2_ITERATIONS)
    exists = os.path.exists(args.file)
    credentials: Credentials | PasswordFile
    try:
        if scram:
            credentials = Credentials.load(args.file) if exists else Credentials()
        else:
            credentials = PasswordFile.load(args.file) if exists else PasswordFile()
    except AuthError as exc:
        print(exc, file=sys.stderr)
        return 1
    if args.delete:
        if not credentials.remove(args.user):
            print(f"no user {args.user!r} in {args.file}", file=sys.stderr)
            return 1
    else:
        if iterations < floor:
            print(f"--iterations must be at least {floor}"
                  + (" (RFC 7677)" if scram else ""), file=sys.stderr)
            return 2
        if sys.stdin.isatty():
            password = getpass.getpass(f"password for {args.user}: ")
            if getpass.getpass("again: ") != password:
                print("the passwords differ", file=sys.stderr)
                return 1
        else:
            password = sys.stdin.readline().rstrip("\r\n")
        if not password:
            print("empty password refused", file=sys.stderr)
            return 1
        try:
            if isinstance(credentials, Credentials):
                credentials.add(args.user, password, iterations=iterations)
            else:
                credentials.set(args.user, password, iterations=iterations)
        except ValueError as exc:
            print(exc, file=sys.stderr)
            return 1
    credentials.save(args.file)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "check-config":
        return _check_config(args)
    if args.command == "pipeline":
        code: int = run_pipeline(args)  # pyspark is loaded only here
        return code
    if args.command == "passwd":
        return _passwd(args)
    if args.command == "ctl":
        return ctl.run(args)
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
