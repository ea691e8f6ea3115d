"""Secrets are values, not shapes: blank every credential this process was given.

An agent given a credential (an API key, a password or token in a URL, a key
in a query string) registers its *value* with `remember`; from then on
`redact` blanks that value, and its usual encodings (URL-quoted, JSON-escaped,
base64-encoded alone or inside a longer encoded text such as a basic-auth pair),
in any text, whatever the value looks like: error messages, step notes, the run
lock's command line. A value is matched as written (case and all): a value of
fewer than `MIN_LENGTH` characters is not registered, and one that is a common
word is blanked in every word it appears in (a key ``test`` blanks "attest").
`remember` also installs a log-record factory that blanks them in every log
record of the process (``httpx`` and ``openai`` log request URLs, and exceptions
whose text a server wrote).

Shapes stay as a fallback for what nobody registered (a stale lock file, a
command line of another process): a URL's user info, URL query values whose
names look like credentials (``key``, ``token``, ``sig``, ...) and key-like
tokens (``sk-...``, ``gsk_...``, ``hf_...``, ``Bearer ...``). Of a URL's query,
only the values so named are registered (`url_secrets`): ``?format=json`` would
blank every "json" of every log.

Example:
    >>> remember("p@ss/w0rd!")
    >>> redact("bad password p@ss/w0rd! (sent as p%40ss%2Fw0rd%21)")
    'bad password *** (sent as ***)'
    >>> redact("no answer from http://me:anything@host/v1")
    'no answer from http://***@host/v1'
    >>> redact("GET https://host/v1?api_key=abc123&page=2 with gsk_0123456789")
    'GET https://host/v1?api_key=***&page=2 with gsk_***'
"""

from __future__ import annotations

import base64
import html
import json
import logging
import re
import threading
import urllib.parse
from typing import Any

__all__ = [
    "MASK", "MIN_LENGTH", "is_credential_name", "looks_like_key", "redact", "redact_start",
    "remember", "url_secrets",
]  # fmt: skip

#: What a secret is replaced with.
MASK = "***"

#: Shorter values are not registered (blanking every "ab" would garble all text); a
#: URL's user info and key-named query values are still blanked by shape.
MIN_LENGTH = 4

_lock = threading.Lock()
_values: set[str] = set()
_pattern: re.Pattern[str] | None = None
_factory_installed = False

# The fallback shapes, each in time linear in the text (they run on whole replies and error
# bodies, after any request timeout): a scheme starts after anything but a letter and holds
# at most 32 characters, and a query name no "?" and at most 64 characters on either side of
# its key word.
# (Unbounded, "?key" * 2000 took 65 s, and "a." * 16000 several, per reply.)
_USERINFO = re.compile(r"(?i)(?<![a-z])([a-z][a-z0-9+.\-]{0,31}://)[^\s/?#@]*@")
# What in a query value's name says it is a credential (``api_key``, ``X-Amz-Signature``,
# Azure Functions' ``code``).
_CREDENTIAL_WORDS = "key|token|secret|pass|pwd|auth|sig|cred|code"
_CREDENTIAL_NAME = re.compile(rf"(?i){_CREDENTIAL_WORDS}")
_KEY_QUERY = re.compile(
    rf"(?i)([?&][^=&#\s?]{{0,64}}?(?:{_CREDENTIAL_WORDS})[^=&#\s?]{{0,64}}=)[^&#\s]+"
)
_KEYLIKE = re.compile(r"(?i)\b(sk-|sk_|gsk_|hf_|xai-|nvapi-|pk-|rk-|bearer\s+)[A-Za-z0-9_\-*.]{4,}")


# The words of a name that hold a credential's word (`_CREDENTIAL_WORDS`: ``authkey``,
# ``passcode``, ``api_keys``, ``oauth``) and still name none: common settings of a model or
# a text, whose values (a model's name) a run must record.
_NOT_CREDENTIAL_WORDS = frozenset(
    {"tokenizer", "tokenizers", "tokenization", "tokenize", "encoder", "encoders", "decoder",
     "decoders", "encoding", "decoding", "codec", "codecs", "unicode", "opcode", "barcode",
     "author", "authors", "authored", "keyword", "keywords", "keyboard", "monkey", "signal",
     "signals", "design", "assign", "assigned", "sigma", "sigmoid", "passage", "passages",
     "compass", "bypass", "passive", "incredible", "codebook", "codebooks"}
)  # fmt: skip
# The words of a name: snake_case, kebab-case, camelCase and ALLCAPS pieces.
_NAME_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
# A key's body: a run of letters and digits (and base64's + and =) between separators.
_KEY_SEPARATORS = re.compile(r"[^A-Za-z0-9+=]+")
_UUID = re.compile(r"(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# Keys of a fixed shape whose separators break the runs `looks_like_key` reads: Google's
# (``AIza`` and 35 characters, ``-`` and ``_`` among them).
_KEY_SHAPES = re.compile(r"AIza[0-9A-Za-z_-]{35}")


def is_credential_name(name: str) -> bool:
    """Whether ``name``, an argument's name, names a credential: one of its words holds a
    credential's word (``api_key``, ``apiKey``, ``HF_TOKEN``, ``authkey``, ``passcode``),
    unless it is a common word that merely holds one (``tokenizer``, ``encoder``, ``author``).

    Example:
        >>> is_credential_name("api_key"), is_credential_name("model"), is_credential_name("tokenizer")
        (True, False, False)
    """
    words = [word.lower() for word in _NAME_WORDS.findall(name)]
    return any(
        _CREDENTIAL_NAME.search(word) and word not in _NOT_CREDENTIAL_WORDS for word in words
    )


def looks_like_key(text: str, *, loosely: bool = True) -> bool:
    """Whether ``text`` looks like a key: one of a fixed shape (a Google key); and, with
    ``loosely`` (a value written with no name), a UUID or a run of at least 16 letters and
    digits that mixes both (``AIzaSy...``, a hex digest), where a model's name or a path has
    short words (``Qwen2.5-0.5B-Instruct``, ``claude-3-opus-20240229``).

    Example:
        >>> looks_like_key("AIzaSyD3xAmPlEkEy0123456789abcdEFGH"), looks_like_key("Llama-3.1-8B")
        (True, False)
    """
    if _KEY_SHAPES.search(text):
        return True
    if not loosely:
        return False
    if _UUID.fullmatch(text.strip()):
        return True
    return any(
        len(run) >= 16 and not run.isdigit() and not run.isalpha()
        for run in _KEY_SEPARATORS.split(text)
    )


def _encodings(value: str) -> set[str]:
    """``value`` as it may be written: raw, URL-unquoted and quoted (in either case of hex),
    JSON-escaped (with ``/`` escaped or not), in a Python repr, HTML-escaped, and
    base64-encoded (`_base64_cores`)."""
    plain = urllib.parse.unquote(value)
    quoted = {urllib.parse.quote(plain, safe=""), urllib.parse.quote_plus(plain)}
    forms = {value, plain, *quoted, *(_LOWER_HEX.sub(_lower, form) for form in quoted)}
    escaped = {json.dumps(form)[1:-1] for form in forms}
    # (and as encoders write it that escape "/", or that leave non-ASCII characters raw)
    escaped |= {form.replace("/", "\\/") for form in escaped}
    escaped |= {json.dumps(form, ensure_ascii=False)[1:-1] for form in forms}
    # (as a Python repr writes it, inside the repr of a longer text: a client's error quotes
    # the server's parsed JSON body, ``{'error': {'message': 'bad key it\'s"...'}}``; and
    # HTML-escaped, as an error page echoes it)
    escaped |= {repr(form)[1:-1] for form in forms}
    escaped |= {repr(form + "'\"")[1:-3] for form in forms}  # (quoted with ')
    escaped |= {html.escape(form) for form in forms}
    forms |= escaped
    forms |= _base64_cores(value) | _base64_cores(plain)
    return {form for form in forms if len(form) >= MIN_LENGTH}


_LOWER_HEX = re.compile(r"%[0-9A-F]{2}")


def _lower(match: re.Match[str]) -> str:
    return match.group().lower()


def _base64_cores(value: str) -> set[str]:
    """What the base64 of any text holding ``value`` shows of it (a key echoed in a basic-auth
    header, or encoded alone): the encoding of its bytes from each of the three alignments a
    3-byte group can have, standard and URL-safe, without the partial groups at its ends
    (their characters depend on the bytes around it: at most 2 bytes at either end stay),
    and its encoding alone, whole. None for a value of fewer than 8 bytes: a core under 6
    bytes would blank pieces of unrelated base64 text."""
    data = value.encode()
    if len(data) < 8:
        return set()
    whole = base64.b64encode(data).decode()  # (the value encoded alone: blanked whole)
    cores = {whole, whole.rstrip("="), base64.urlsafe_b64encode(data).decode().rstrip("=")}
    for skip in range(3):
        core = data[skip : skip + (len(data) - skip) // 3 * 3]
        cores |= {base64.b64encode(core).decode(), base64.urlsafe_b64encode(core).decode()}
    return cores


def remember(*values: str | None) -> None:
    """Register secret values (None and values shorter than `MIN_LENGTH` are skipped; a
    value that is not text is a TypeError, never skipped: it would be blanked nowhere)."""
    global _pattern
    new = set()
    for value in values:
        _check_text(value, "values")
        if isinstance(value, str) and len(value) >= MIN_LENGTH:
            new |= _encodings(value)
    with _lock:
        if new <= _values:
            return
        _values.update(new)
        ordered = sorted(_values, key=len, reverse=True)  # a longer form before its parts
        _pattern = re.compile("|".join(re.escape(v) for v in ordered))
        _install_log_factory()


def _check_text(value: Any, name: str) -> None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"Expect `{name}` to be a str or None, got {type(value).__name__}")


def url_secrets(url: str | None) -> list[str]:
    """The credentials a URL carries: its user info (the password, or a lone token, and
    the ``user:password`` pair with its basic-auth base64) and the query values whose names
    look like credentials (``key``, ``token``, ``secret``, ``password``, ``sig``, ``auth``,
    ``cred``, ``code``, in any case). Other query values are settings (``format=json``,
    ``api-version=2024-06-01``): registered, every "json" of the run's logs was blanked.

    Example:
        >>> url_secrets("https://me:hunter22@host/v1?key=abc123&v=2&format=json")
        ['me:hunter22', 'bWU6aHVudGVyMjI=', 'hunter22', 'abc123']
    """
    _check_text(url, "url")
    if not url:
        return []
    parts = urllib.parse.urlsplit(url)
    found: list[str] = []
    if "@" in parts.netloc:
        userinfo = parts.netloc.rpartition("@")[0]
        user, has_password, password = userinfo.partition(":")
        plain = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}"
        found += [userinfo, base64.b64encode(plain.encode()).decode()]
        found.append(password if has_password else user)
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    found += [value for name, value in query if _CREDENTIAL_NAME.search(name)]
    return [value for value in found if value]


def redact(text: str) -> str:
    """``text`` with every registered secret and every secret-shaped token blanked."""
    pattern = _pattern
    if pattern is not None:
        text = pattern.sub(MASK, text)
    text = _USERINFO.sub(rf"\1{MASK}@", text)
    text = _KEY_QUERY.sub(rf"\1{MASK}", text)
    return _KEYLIKE.sub(rf"\1{MASK}", text)


# How far past what is shown `redact_start` reads, for a shape (a URL's user info, a key-like
# token) that starts in what is shown and ends past it.
_SHAPE_MARGIN = 4096


def redact_start(text: str, limit: int) -> str:
    """``redact(text)[:limit]``, reading only as much of ``text`` as that needs: a server's
    error body may be megabytes, and blanking it whole took seconds per retry where only
    its start is shown. A secret cut at the end of what was read is left there, past
    ``limit``: at least as many characters as the longest secret follow what is shown."""
    with _lock:
        longest = max(map(len, _values), default=0)
    need = limit + longest + _SHAPE_MARGIN
    size = need
    while True:
        shown = redact(text[:size])
        # (blanking shortens what was read: read on until enough is left after it)
        if size >= len(text) or len(shown) >= need:
            return shown[:limit]
        size *= 4


def _scrub(record: logging.LogRecord) -> None:
    """Blank secrets in a log record's message and exception text, in place."""
    try:
        message = record.getMessage()
    except Exception:  # (a malformed call: logging reports it when the record is emitted)
        return
    clean = redact(message)
    if clean != message:
        record.msg, record.args = clean, ()
    if record.exc_info and record.exc_info[1] is not None:
        text = logging.Formatter().formatException(record.exc_info)
        clean = redact(text)
        if clean != text:  # the formatted text replaces the exception, so no formatter sees it
            record.exc_info, record.exc_text = None, clean
    if record.stack_info:
        record.stack_info = redact(record.stack_info)


def _install_log_factory() -> None:
    """Route every log record of the process through `_scrub` (once; under ``_lock``)."""
    global _factory_installed
    if _factory_installed:
        return
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if _pattern is not None:
            _scrub(record)
        return record

    logging.setLogRecordFactory(factory)
    _factory_installed = True
