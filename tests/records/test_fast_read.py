"""Reading a log's lines with orjson (issue 26) reads them exactly as json does.

`turnbudget.records.files._loads` hands a line to orjson unless the line has 19 digits in a
row (orjson reads an int past 64 bits as a float), many brackets (json refuses nesting
orjson reads) or orjson refuses it (then json reads it, or names the problem in its words).
The reference here is the same function with orjson switched off: every value, type and
error message must agree, for JSON values of every kind and for lines corrupted byte by byte.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnbudget.records import files

pytestmark = pytest.mark.skipif(files._orjson is None, reason="needs orjson (the fast extra)")

# Integers of any size (64-bit edges and past them), floats of every magnitude, text with
# escapes, non-ASCII and lone surrogates (json writes them as \ud800 escapes).
_EDGE_INTS = st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**18])
_ATOMS = (
    st.none()
    | st.booleans()
    | st.integers()
    | _EDGE_INTS
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
_VALUES = st.recursive(
    _ATOMS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def _read(line: bytes) -> tuple[str, str]:
    """What `_loads` gives for ``line``: ("value", its repr) or ("error", the message)."""
    try:
        return "value", repr(files._loads(line))
    except ValueError as exc:
        return "error", str(exc)


def _reference(line: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    with monkeypatch.context() as m:
        m.setattr(files, "_orjson", None)
        return _read(line)


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=_VALUES)
def test_a_json_line_reads_as_json_reads_it(value, monkeypatch):
    line = json.dumps(value).encode() + b"\n"
    assert _read(line) == _reference(line, monkeypatch) == ("value", repr(json.loads(line)))


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    value=_VALUES,
    edits=st.lists(st.tuples(st.integers(0, 10**6), st.binary(max_size=3)), max_size=4),
)
def test_a_corrupted_line_reads_or_fails_as_json_does(value, edits, monkeypatch):
    line = bytearray(json.dumps(value).encode())
    for at, data in edits:  # (replace a byte, or insert when the data is longer)
        at %= len(line) + 1
        line[at : at + 1] = data
    line = bytes(line) + b"\n"
    assert _read(line) == _reference(line, monkeypatch)


@pytest.mark.parametrize(
    "line",
    [
        b'{"a":12345678901234567890123}\n',  # (orjson: a float)
        b'{"a":-9223372036854775809}\n',
        b'{"a":18446744073709551616}\n',
        b"[" * 70 + b"]" * 70 + b"\n",
        b"[" * 1010 + b"]" * 1010 + b"\n",  # (json: nested too deeply; orjson reads it)
        b"[" * 2000 + b"]" * 2000 + b"\n",  # (json: nested too deeply)
        b'{"a":NaN,"b":-Infinity}\n',
        b'{"a":1e400}\n',
        b'{"a":"\\ud800"}\n',
        b'{"a":"\xff"}\n',
        b'{"a":-0,"b":-0.0,"c":1E5}\n',
        b'\xef\xbb\xbf{"a":1}\n',
        b'{"a":1}\x00\n',
    ],
)
def test_the_edges_orjson_reads_otherwise_are_read_as_json_reads_them(line, monkeypatch):
    assert _read(line) == _reference(line, monkeypatch)
