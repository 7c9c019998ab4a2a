"""hermes_core.wire_json: the JSON of provider request bodies (orjson, else the standard library);
the same document either way, whatever orjson cannot encode included."""
from __future__ import annotations

import json
import math

import pytest

from hermes_core import wire_json


@pytest.mark.parametrize("obj", [
    {"messages": [{"role": "user", "content": "héllo ☃ \u2028 \"quoted\""}], "n": 1.5},
    {"big": 2 ** 70},  # past orjson's 64 bits: the standard library encodes it
    {1: "int key", "nested": [None, True, {"x": []}]},
])
def test_the_bytes_decode_to_what_was_encoded(obj):
    out = wire_json.dumps(obj)
    assert isinstance(out, bytes)
    assert json.loads(out) == json.loads(json.dumps(obj))
    assert wire_json.dumps_text(obj) == out.decode()


def test_orjson_is_what_encodes_when_installed():
    pytest.importorskip("orjson")
    assert wire_json.orjson is not None
    assert wire_json.dumps({"a": "é"}) == '{"a":"é"}'.encode()  # orjson's compact UTF-8


def test_what_neither_can_encode_is_a_type_error():
    with pytest.raises(TypeError):
        wire_json.dumps({"x": object()})


def test_loads_reads_what_json_reads_and_raises_json_s_error_on_bad_json():
    for text in ['{"a": [1, 2.5, "\u00fc", null]}', '"\\ud800"', b'{"b": true}']:
        assert wire_json.loads(text) == json.loads(text)
    assert math.isnan(wire_json.loads('{"a": NaN}')["a"])  # orjson refuses NaN; json reads it
    with pytest.raises(json.JSONDecodeError):
        wire_json.loads('{"a": ')
