"""``turnbudget serve-env``: every registered id as an OpenEnv server (openenv extra).

Runs `turnbudget.adapters.openenv.serve`: OpenEnv's HTTP and WebSocket
routes under uvicorn, one env per WebSocket session, at most
``--max-sessions`` at once. Prints the base URL once the port is bound (with
``--port 0``, the free port taken) and stops cleanly on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import ipaddress
import sys

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--env", default=None, metavar="ID",
        help="the id a reset plays when it names none (default: none; every reset names one)",
    )  # fmt: skip
    parser.add_argument(
        "--host", default="127.0.0.1",
        help="address to bind (default: 127.0.0.1; the server has no authentication)",
    )  # fmt: skip
    parser.add_argument("--port", type=int, default=8000, help="port (default: 8000; 0: any free)")
    parser.add_argument(
        "--max-sessions", type=int, default=8,
        help="concurrent WebSocket sessions at most (default: 8)",
    )  # fmt: skip
    parser.add_argument(
        "--session-timeout", type=float, default=None, metavar="SECONDS",
        help="close sessions idle this long (default: never; dropped connections are reclaimed)",
    )  # fmt: skip
    parser.add_argument(
        "--header-timeout", type=float, default=None, metavar="SECONDS",
        help="close an HTTP connection whose request (headers and body) is not all in by "
        "then (default: 15; a client that trickles it holds a socket no longer)",
    )  # fmt: skip
    parser.add_argument(
        "--max-connections", type=int, default=None, metavar="N",
        help="open HTTP connections at most; a new one past them is closed (default: 512)",
    )  # fmt: skip
    parser.add_argument(
        "--textworld-games", type=int, default=None, metavar="N",
        help="games of a generated TextWorld family a client may play: seeds 0..N-1 (default: "
        "10,000; each new one is generated once and kept on disk, about 0.4 MB)",
    )  # fmt: skip
    parser.add_argument(
        "--log-level", default="warning", choices=("critical", "error", "warning", "info", "debug"),
        help="uvicorn's log level (default: warning)",
    )  # fmt: skip


def _loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.port < 65536:
        print(
            f"turnbudget serve-env: error: Expect `--port` to be in 0..65535, got {args.port}",
            file=sys.stderr,
        )
        return 2
    if not args.host.strip():  # ('' binds every interface, unannounced; serve-local refuses it)
        print(
            "turnbudget serve-env: error: Expect `--host` to be an address to bind, "
            f"got {args.host!r}",
            file=sys.stderr,
        )
        return 2
    try:
        from turnbudget.adapters.openenv import serve
    except ImportError as exc:
        # (the adapter's own ImportError names the extra already: said twice)
        hint = "" if "[openenv]" in str(exc) else (
            "; it needs the openenv extra: pip install -e '.[openenv]' in the turnbudget checkout"
        )  # fmt: skip
        print(f"turnbudget serve-env: error: {exc}{hint}", file=sys.stderr)
        return 1

    from turnbudget.cli import error_line

    bound = False

    def ready(url: str) -> None:
        nonlocal bound
        bound = True
        ws_url = "ws" + url.removeprefix("http")
        print(f"serving turnbudget envs over OpenEnv at {url} (WebSocket {ws_url}/ws, "
              f"at most {args.max_sessions} sessions); Ctrl-C stops it")  # fmt: skip
        if not _loopback(args.host):
            print(f"  warning: {args.host} is not a loopback address and the server has no "
                  "authentication")  # fmt: skip
        sys.stdout.flush()

    try:
        bounds = {
            name: value
            for name, value in (("header_timeout", args.header_timeout),
                                ("max_connections", args.max_connections),
                                ("textworld_games", args.textworld_games))
            if value is not None
        }  # fmt: skip
        serve(
            args.env, host=args.host, port=args.port, max_sessions=args.max_sessions,
            session_timeout=args.session_timeout, log_level=args.log_level, ready=ready, **bounds,
        )  # fmt: skip
    except ValueError as exc:
        print(error_line("serve-env", exc), file=sys.stderr)
        return 2
    except OSError as exc:
        if bound:
            raise
        # (before the socket was bound: an unknown host, a port in use; the bare "Name or
        # service not known" named neither flag)
        reason = exc.strerror or str(exc) or type(exc).__name__
        message = f"Cannot bind --host {args.host!r} --port {args.port}: {reason}"
        print(error_line("serve-env", message), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    print("stopped")
    return 0
