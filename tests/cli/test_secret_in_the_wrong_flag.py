"""A key typed where a variable name or a URL was expected is never echoed.

The issue: ``--api-key-env sk-proj-SECRET...`` printed "The environment variable
'sk-proj-SECRET...' (api_key_env) is not set", and ``--base-url`` echoed a key given to
it. Error text of the command line goes through `redact`, ``--api-key-env`` must be a
variable's name, and a ``--base-url`` that is not a URL is not shown.
"""

from __future__ import annotations

import pytest

from turnbudget.cli import main

MAZE = "turnbudget/Maze-Easy-v0"
SHAPED = "sk-proj-SECRET123456abcdef"  # a key with a known shape
PLAIN = "Zq8vK2mX-r7TpLw4Nd9!BcHf"  # one no shape rule knows (not a variable name either)


def _run(command: str, *flags: str, tmp_path, capsys) -> tuple[int, str]:
    common = ["--env", MAZE, "--agent", "llm:gpt-x", "--tasks", "1", "--quiet",
              "--out", str(tmp_path / command)]  # fmt: skip
    if command == "eval":
        common += ["--k", "1", "--t", "5", "--no-plots"]
    code = main([command, *common, *flags])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _assert_not_shown(secret: str, text: str) -> None:
    for form in (secret, secret[:12], secret[-12:]):
        assert form not in text, f"{form!r} shown in {text!r}"


@pytest.mark.parametrize("command", ["eval", "probe"])
@pytest.mark.parametrize("key", [SHAPED, PLAIN], ids=["shaped", "plain"])
def test_a_key_given_as_the_variable_name_is_refused_unshown(command, key, tmp_path, capsys):
    code, text = _run(command, "--api-key-env", key, tmp_path=tmp_path, capsys=capsys)
    assert code == 2 and text.count("\n") == 1
    assert "to be the NAME of the environment variable that holds the API key" in text
    _assert_not_shown(key, text)
    assert not (tmp_path / command).exists()  # refused before anything was written


@pytest.mark.parametrize("command", ["eval", "probe"])
@pytest.mark.parametrize(
    "url,secret",
    [
        (SHAPED, SHAPED),
        (PLAIN, PLAIN),
        ("htp:/sk-SECRET123456abcdef", "SECRET123456abcdef"),
        ("htp:/Zq8vK2mXr7TpLw4Nd9BcHf", "Zq8vK2mXr7TpLw4Nd9BcHf"),
        ("ftp://bob:Pa5s-w0rd-Kx81@host/v1?key=qk-Mv62-NOT-SEEN", "Pa5s-w0rd-Kx81"),
        ("ftp://host/v1?key=qk-Mv62-NOT-SEEN", "qk-Mv62-NOT-SEEN"),
    ],
    ids=["shaped", "plain", "bad-scheme-shaped", "bad-scheme-plain", "userinfo", "query"],
)
def test_a_secret_given_as_the_base_url_is_not_shown(command, url, secret, tmp_path, capsys):
    code, text = _run(command, "--base-url", url, tmp_path=tmp_path, capsys=capsys)
    assert code == 2 and text.count("\n") == 1
    assert "to be an http(s) URL" in text
    _assert_not_shown(secret, text)


def test_a_url_with_a_wrong_scheme_is_shown_without_its_credentials(tmp_path, capsys):
    url = "ftp://bob:Pa5s-w0rd-Kx81@host:21/v1?key=qk-Mv62-NOT-SEEN"
    code, text = _run("eval", "--base-url", url, tmp_path=tmp_path, capsys=capsys)
    assert code == 2 and "got 'ftp://host:21/v1'" in text


def test_an_unset_variable_name_is_redacted_and_explained(tmp_path, capsys, monkeypatch):
    pytest.importorskip("openai")  # (the client is built, and its key read, at preflight)
    name = "gsk_Wq3v8TnR2xLp0Yc5Hd7Jf"  # a valid name, and the shape of a Groq key
    monkeypatch.delenv(name, raising=False)
    code, text = _run("eval", "--api-key-env", name, "--base-url", "http://127.0.0.1:9/v1",
                      tmp_path=tmp_path, capsys=capsys)  # fmt: skip
    assert code == 2 and "(`api_key_env`) is not set" in text and "never the key itself" in text
    _assert_not_shown(name, text)


@pytest.mark.parametrize("command", ["eval", "probe"])
@pytest.mark.parametrize("sealed", ["--no-sealed", "--sealed"])
@pytest.mark.parametrize("key", [SHAPED, "Wr4Kq9Zm2Tx7Lp3Vn8Bd"], ids=["shaped", "plain"])
def test_the_key_given_as_the_model_is_refused_unshown(
    command, sealed, key, tmp_path, capsys, monkeypatch
):
    """``--agent llm:KEY`` ran: the model, the key, named the run's directory (runs/llm-KEY)
    and was written into run.json, the records and the report; sealed, the child's refusal
    quoted the spec whole. A plain key is known by its value: the one the run sends."""
    key += f"{command}{sealed}".replace("-", "")  # (a value this process has not seen yet)
    monkeypatch.setenv("OPENAI_API_KEY", key)  # (the default api_key_env)
    monkeypatch.chdir(tmp_path)
    flags = ["--env", MAZE, "--agent", f"llm:{key}", sealed, "--tasks", "1", "--quiet"]
    if command == "eval":
        flags += ["--k", "1", "--t", "5", "--no-plots"]
    code = main([command, *flags])
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert code == 2 and "Expect `model` to be a model name" in text
    _assert_not_shown(key, text)
    assert list(tmp_path.iterdir()) == []  # refused before anything was written


@pytest.mark.parametrize(
    "flags, secret",
    [
        (["--key", SHAPED], SHAPED),
        (["--openai-api-key", PLAIN], PLAIN),
        (["--gemini-token=AIzaSyQ7vK2mXr7TpLw4Nd9Bc"], "AIzaSyQ7vK2mXr7TpLw4Nd9Bc"),
        (["--concurrency", SHAPED], SHAPED),
        (["--parse", SHAPED], SHAPED),
    ],
    ids=["unknown-key-flag", "unknown-api-key-flag", "unknown-token-flag=", "int", "choice"],
)
def test_a_key_given_to_a_flag_argparse_refuses_is_not_shown(flags, secret, capsys):
    """argparse's usage errors quote what was typed: ``--openai-api-key KEY`` (no such flag)
    printed "unrecognized arguments: --openai-api-key KEY", ``--parse sk-...`` the key."""
    with pytest.raises(SystemExit) as exit_:
        main(["eval", "--env", MAZE, "--agent", "llm:gpt-x", *flags])
    text = capsys.readouterr().err
    assert exit_.value.code == 2 and "error: " in text
    _assert_not_shown(secret, text)


def test_an_unknown_flag_not_named_like_a_secret_is_shown_with_its_value(capsys):
    with pytest.raises(SystemExit):
        main(["eval", "--env", MAZE, "--max-tokens", "32", "--colour=red"])
    assert "unrecognized arguments: --max-tokens 32 --colour=red" in capsys.readouterr().err
