"""``turnbudget serve-local``: a local OpenAI-compatible server with Gemma 3 270M (llm extra).

Starts ``llama_cpp.server`` on loopback, waits until ``/v1/models`` answers,
prints the ``--base-url`` and model to pass to ``turnbudget eval --agent
llm:MODEL``, and stops the server cleanly on Ctrl-C, SIGTERM or SIGHUP (a closed
terminal), also while it is starting.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

from turnbudget.cli.flags import file_path

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=8080, help="port (default: 8080; 0: any free)")
    parser.add_argument(
        "--host", default="127.0.0.1", help="loopback address to bind (default: 127.0.0.1)"
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="CPU threads for generation (default: 1)"
    )
    parser.add_argument("--n-ctx", type=int, default=4096, help="context tokens (default: 4096)")
    parser.add_argument(
        "--cache-mb",
        type=int,
        default=64,
        help="RAM cache of evaluated prompts in MiB, so episodes in flight each resume "
        "from their own prompt; 0 for none (default: 64)",
    )
    parser.add_argument(
        "--model-path",
        type=file_path,
        default=None,
        help=".gguf file (default: Gemma 3 270M, written once)",
    )
    parser.add_argument(
        "--chat-format",
        default="gemma",
        help="llama.cpp chat format of the model (default: gemma; "
        "chat_template.NAME: a template in the model file)",
    )
    parser.add_argument(
        "--log", type=file_path, default=None, help="server log file (default: temporary)"
    )
    parser.add_argument(
        "--startup-timeout", type=float, default=180.0, help="seconds to wait for the server"
    )


def run(args: argparse.Namespace) -> int:
    from turnbudget.agents.local_server import LocalServer
    from turnbudget.cli import describe_os_error

    if not 0 <= args.port < 65536:  # (0 is any free port here: the API's 1..65535 misled)
        print(
            f"turnbudget serve-local: error: Expect `--port` to be in 0..65535, got {args.port}",
            file=sys.stderr,
        )
        return 2
    try:
        server = LocalServer(
            args.port or None, host=args.host, model_path=args.model_path, n_threads=args.threads,
            n_ctx=args.n_ctx, cache_mb=args.cache_mb, startup_timeout=args.startup_timeout, log_path=args.log,
            chat_format=args.chat_format,
        )  # fmt: skip
    except ValueError as exc:
        print(_error(_as_flags(str(exc))), file=sys.stderr)
        return 2
    stop = threading.Event()
    starting = True

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()
        if starting:  # end the wait for the server (`start` stops what it started)
            raise KeyboardInterrupt

    # SIGHUP as SIGTERM: the server runs in its own session, so a closed terminal reaches
    # only this process, whose default end would leave the server running, orphaned.
    stops = [signal.SIGTERM, *([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])]
    previous = {signum: signal.signal(signum, on_signal) for signum in stops}
    try:
        server.start()
        starting = False
        print(f"serving {server.model} at {server.base_url} (pid {server.pid}); Ctrl-C stops it")
        print(
            f"  turnbudget eval --agent llm:{server.model} --base-url {server.base_url} "
            "--env turnbudget/Maze-Easy-v0"
        )
        sys.stdout.flush()
        while not stop.is_set() and server.running:
            stop.wait(0.5)
        if not stop.is_set():
            print(
                _error(f"the server exited; its log ends with:\n{server.log_tail()}"),
                file=sys.stderr,
            )
            return 1
    except KeyboardInterrupt:
        pass
    except FileNotFoundError as exc:  # (a --model-path or --log that is not there: bad input)
        print(_error(describe_os_error(exc)), file=sys.stderr)
        return 2
    except ValueError as exc:  # (a --model-path no GGUF file, a --log no process reads)
        print(_error(exc), file=sys.stderr)
        return 2
    except (ImportError, RuntimeError, TimeoutError, OSError) as exc:
        print(_error(exc), file=sys.stderr)
        return 1
    finally:
        server.stop()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    print("stopped")
    return 0


# `LocalServer`'s argument names as this command's flags: its messages name the argument
# ("`n_threads`"), which is no flag here.
# (``model_path`` and ``log_path`` messages name their flag already)
_FLAGS = {
    "n_threads": "--threads", "n_ctx": "--n-ctx", "cache_mb": "--cache-mb", "host": "--host",
    "chat_format": "--chat-format", "startup_timeout": "--startup-timeout", "port": "--port",
}  # fmt: skip


def _as_flags(message: str) -> str:
    """``message`` with each `LocalServer` argument it names in backquotes as its flag."""
    for name, flag in _FLAGS.items():
        message = message.replace(f"`{name}`", f"`{flag}`")
    return message


def _error(message: object) -> str:
    """The error line, then the rest of the message (a server log's tail) line by line, each
    shown as an error line shows it (a log quotes the model's path, and any control
    characters in it: they reached the terminal)."""
    from turnbudget.agents.secrets import redact
    from turnbudget.cli import error_line, shown

    first, *rest = str(message).split("\n")
    lines = [error_line("serve-local", first), *(shown(redact(line)) for line in rest)]
    return "\n".join(lines)
