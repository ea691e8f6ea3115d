"""Secrets are values, not shapes: `turnbudget.agents.secrets` blanks what it was given."""

from __future__ import annotations

import base64
import json
import logging

import pytest

from turnbudget.agents import secrets
from turnbudget.agents.secrets import MASK, redact, redact_start, remember, url_secrets

# No shape rule knows these: only their values can find them.
PASSWORD = "Pq/7 x@y!unshaped"
TOKEN = "Tk9fUnNoYXBlZC10b2tlbg"


def test_a_registered_value_is_blanked_in_every_usual_encoding():
    remember(PASSWORD)
    forms = [
        PASSWORD,
        "Pq%2F7%20x%40y%21unshaped",  # URL-quoted
        "Pq%2F7+x%40y%21unshaped",  # form-quoted
        json.dumps(PASSWORD)[1:-1],
    ]
    for form in forms:
        assert redact(f"server said: {form}.") == f"server said: {MASK}."


ENCODED = "Ek7/q+Wz3Lm9Xv2Rb8Tn"  # (no shape rule knows it; "/" and "+" change as they are quoted)


@pytest.mark.parametrize("before", ["", "a", "ab", "Bearer ", "user:"])
def test_a_registered_value_is_blanked_in_base64_whatever_precedes_it(before):
    """A reply that echoed the key base64-encoded (alone, or inside an encoded header such
    as a basic-auth pair) was written as it came. Each alignment's core is blanked: what
    stays at either end encodes at most 2 bytes that border the value."""
    remember(ENCODED)
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        encoded = encode(f"{before}{ENCODED} tail".encode()).decode()
        clean = redact(f"echo {encoded}.")
        assert MASK in clean
        shown = clean.removeprefix("echo ").removesuffix(".").split(MASK)
        assert len(shown[0]) <= len(encode(before.encode())) + 4 and len(shown[1]) <= 12
    assert redact(base64.b64encode(ENCODED.encode()).decode()) == MASK  # (alone: whole)


def test_a_registered_value_is_blanked_url_quoted_with_lowercase_hex():
    remember(ENCODED)
    assert redact("key=Ek7%2fq%2bWz3Lm9Xv2Rb8Tn&x=1") == f"key={MASK}&x=1"


def test_url_credentials_are_values_and_shapes():
    url = f"https://bob:{TOKEN}@llm.example/v1?sig=Sg-0042-unshaped"
    remember(*url_secrets(url))
    pair = base64.b64encode(f"bob:{TOKEN}".encode()).decode()
    text = f"auth {pair} for {TOKEN} and Sg-0042-unshaped"
    assert redact(text) == f"auth {MASK} for {MASK} and {MASK}"
    # Shapes, for what nobody registered (a command line of another process):
    assert (
        redact("--base-url http://u:p@h/v1?key=k&page=2")
        == "--base-url http://***@h/v1?key=***&page=2"
    )
    assert redact("echoed gsk_abcdef and hf_abcdef") == "echoed gsk_*** and hf_***"


def test_only_query_values_named_like_credentials_are_url_secrets():
    """Every query value was one: a base URL with ``?format=json`` blanked every "json" of
    the run's logs, errors and step notes."""
    url = (
        "https://h/v1?format=json&api-version=2024-06-01&API_KEY=Ak-51&X-Amz-Signature=Sg-77"
        "&access_token=Tk-93&Password=Pw-12&Authorization=Au-34&credential=Cr-56&secret=Sc-78&code=Cd-9"
    )
    secrets_named = ["Ak-51", "Sg-77", "Tk-93", "Pw-12", "Au-34", "Cr-56", "Sc-78", "Cd-9"]
    assert url_secrets(url) == secrets_named
    assert url_secrets("http://tok3n-only@h/v1?format=json")[-1] == "tok3n-only"
    remember(*url_secrets(url))
    settings = "reply as json, api-version 2024-06-01"
    assert redact(settings) == settings


def test_short_values_are_not_registered():
    remember("ab", None, "")
    assert redact("a tab") == "a tab"


@pytest.mark.parametrize("value", [b"Bx7-bytes-secret", 12345678, ["Lx7-listed-secret"]])
def test_a_secret_that_is_not_text_is_a_type_error_never_skipped(value):
    """A value that was not a str was skipped without a word, like None: a key read as
    bytes was then blanked nowhere. Its value is not shown (it is the secret)."""
    with pytest.raises(TypeError, match="Expect `values` to be a str or None") as err:
        remember("Ok7-text-secret", value)
    assert "secret" not in str(err.value) and "1234" not in str(err.value)


@pytest.mark.parametrize("url", [b"http://u:p@h/v1", 5])
def test_a_url_that_is_not_text_is_a_type_error(url):
    with pytest.raises(TypeError, match="Expect `url` to be a str or None"):
        url_secrets(url)


def test_log_records_are_blanked_whatever_logged_them(caplog):
    remember(TOKEN)
    log = logging.getLogger("some.library")
    with caplog.at_level(logging.DEBUG):
        log.info("GET with token %s", TOKEN)
        try:
            raise RuntimeError(f"401: bad token {TOKEN}")
        except RuntimeError:
            log.debug("request failed", exc_info=True)
    assert TOKEN not in caplog.text and f"token {MASK}" in caplog.text
    assert f"RuntimeError: 401: bad token {MASK}" in caplog.text


@pytest.mark.timeout(120, method="thread")  # a hang guard: each text takes milliseconds now
@pytest.mark.parametrize(
    "hostile",
    [
        "?key" * 250_000,
        "a." * 500_000,
        "go-north-" * 100_000,
        "?" + "key" * 300_000,
        "a://" * 250_000,
    ],
)
def test_a_hostile_reply_is_blanked_in_linear_time(hostile):
    """`redact` runs on whole replies and error bodies, after the request's timeout: its shapes
    backtracked, in cubic time on "?key" repeated (8,000 characters took 65 s; a 16,000-character
    reply held `turnbudget eval` past 150 s) and in square time on "a." repeated."""
    assert redact(hostile) == hostile  # (no shape in them: nothing to blank)
    secret = f"{hostile} GET http://me:pw@host/v1?api_key=abc123&page=2"
    assert redact(secret).endswith("GET http://***@host/v1?api_key=***&page=2")


def test_a_url_after_punctuation_or_an_underscore_is_still_blanked():
    """The linear shape first took a scheme only where no scheme character preceded it:
    "see 1.https://admin:pw@host" lost its blanking."""
    for prefix in ("see 1.", "mirrors: -", "2)", "_", "v2.0+"):
        assert "hunter2" not in redact(f"{prefix}https://admin:hunter2@db.example/x")


STRADDLING = "Rs7-straddling-secret-value"  # (no shape rule knows it)


@pytest.mark.parametrize("at", [0, 150, 190, 199, 200, 4_000, 9_000, 2**20])
def test_the_start_of_a_long_text_is_blanked_as_the_whole_text_would_be(at):
    """`redact_start` reads only the start of a text, yet shows what blanking it whole and
    cutting would: a secret across the cut, or across the end of what is read, never shows
    a part (a text of blanked secrets, which shortens as it is blanked, is read on)."""
    remember(STRADDLING, "Ab7-short-one")
    for filler in ("x", " ", "Ab7-short-one "):
        text = filler * (at // len(filler)) + STRADDLING + " tail" + "y" * 2**20
        assert redact_start(text, 200) == redact(text)[:200]


def test_the_start_of_a_long_text_is_blanked_reading_only_the_start(monkeypatch):
    read: list[int] = []
    blank = secrets.redact
    monkeypatch.setattr(secrets, "redact", lambda text: read.append(len(text)) or blank(text))
    assert redact_start("z" * 16 * 2**20, 200) == "z" * 200
    assert max(read) < 2**16


def test_a_secret_is_blanked_as_json_encoders_escape_it():
    """``\\/`` (PHP's and some Java encoders' slash) and raw non-ASCII in a JSON string."""
    from turnbudget.agents.secrets import redact, remember

    remember("p@ss/w0rd-long-1")
    remember("pässwort-geheim-2")
    text = '{"k": "p@ss\\/w0rd-long-1", "a": "p\\u00e4sswort-geheim-2", "b": "pässwort-geheim-2"}'
    assert redact(text) == '{"k": "***", "a": "***", "b": "***"}'


def test_a_secret_is_blanked_in_a_python_repr_and_html_escaped():
    """A client's error quotes the server's parsed body (``{'error': {'message': ...}}``):
    in that repr a key holding both quotes has its ' escaped, and it was written to the
    episode records; an error page echoes it HTML-escaped."""
    import html

    from turnbudget.agents.secrets import redact, remember

    key = "it's\"my-key-0123456789"
    remember(key)
    assert redact(repr({"error": {"message": f"bad key Bearer {key}"}})) == (
        "{'error': {'message': 'bad key Bearer ***'}}"
    )
    assert redact(repr(f"a\\{key}")) == "'a\\\\***'"
    assert redact(f"<p>{html.escape(key)}</p>") == "<p>***</p>"


@pytest.mark.parametrize(
    "name, credential",
    [("api_key", True), ("apiKey", True), ("HF_TOKEN", True), ("authkey", True),
     ("passcode", True), ("accountkey", True), ("oauth", True), ("api_keys", True),
     ("code", True), ("tokenizer", False), ("encoder", False), ("author", False),
     ("keywords", False), ("model", False), ("revision", False)],
)  # fmt: skip
def test_an_argument_s_name_is_a_credential_by_its_words(name, credential):
    """Whole words only missed authkey=, passcode=, api_keys= (their values reached
    run.json); a substring alone blanked tokenizer= and author=."""
    from turnbudget.agents.secrets import is_credential_name

    assert is_credential_name(name) is credential


def test_outside_agent_arguments_blank_keys_and_keep_named_digests():
    """A Google key with "-" or "_" in it (1 in 16) had no 16-character run and was
    recorded; a revision's digest named as such was blanked (earlier runs were refused)."""
    from turnbudget.agents.registry import _arg_values

    key = "AIzakou_kk32lRAA1S6YLwO_tIF4zEkX8r594mj"
    assert key in _arg_values(f"gemini-2.0-flash,{key}")
    assert key in _arg_values(f"model=m,k={key}")
    revision = "7ae557604adf67be50417f59c2c2f167def9a775"
    assert revision not in _arg_values(f"model=Qwen/Qwen2.5-0.5B-Instruct,revision={revision}")
    assert revision in _arg_values(f"Qwen/Qwen2.5-0.5B-Instruct,{revision}")  # (no name)
