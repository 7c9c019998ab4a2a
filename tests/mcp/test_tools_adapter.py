"""Names, schemas and results of MCP tools as the model sees them (pure)."""
from __future__ import annotations

import re

import pytest

from tools.mcp.tools import check_schema, is_error, plan_tools, result_text, tool_name

VALID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def test_names_fit_the_provider_charset_and_length():
    assert tool_name("time", "get_current_time") == "mcp__time__get_current_time"
    assert tool_name("my.server", "files/read v2") == "mcp__my_server__files_read_v2"
    long_a, long_b = tool_name("s", "x" * 80 + "a"), tool_name("s", "x" * 80 + "b")
    assert VALID.match(long_a) and VALID.match(long_b) and long_a != long_b


def _tool(name: str, schema=None, desc: str = "d") -> dict:
    return {"name": name, "description": desc, "inputSchema": schema or {"type": "object", "properties": {}}}


@pytest.mark.parametrize("order", [["get.item", "get_item"], ["get_item", "get.item"]])
def test_a_collision_after_sanitising_is_reported_and_the_exact_name_wins(order):
    chosen, problems = plan_tools("s", [_tool(n) for n in order], (), (), lambda n: False)
    assert [(name, t["name"]) for name, t in chosen] == [("mcp__s__get_item", "get_item")]
    assert len(problems) == 1 and "'get.item'" in problems[0] and "mcp__s__get_item" in problems[0]


def test_a_name_another_server_owns_is_left_out():
    chosen, problems = plan_tools("a.b", [_tool("t")], (), (), lambda n: n == "mcp__a_b__t")
    assert chosen == [] and "another server" in problems[0]


def test_include_exclude_and_the_servers_order_are_kept():
    tools = [_tool("write"), _tool("read_a"), _tool("read_b"), _tool("read_secret")]
    chosen, problems = plan_tools("s", tools, ("read_*",), ("*secret",), lambda n: False)
    assert [t["name"] for _, t in chosen] == ["read_a", "read_b"] and problems == []


def test_schemas_are_repaired_when_obvious_and_refused_when_broken():
    fixed, note = check_schema({"properties": {"q": {"type": "string"}}})
    assert fixed == {"type": "object", "properties": {"q": {"type": "string"}}} and "type: object" in note
    assert check_schema(None) == ({"type": "object", "properties": {}}, None)
    assert check_schema({"type": "object"})[0] == {"type": "object", "properties": {}}
    for broken in ({"type": "object", "properties": {"x": {"type": "strng"}}},
                   {"type": "object", "required": "x"},
                   {"type": "string"}, ["not", "a", "schema"], {"type": "object", "properties": []}):
        schema, note = check_schema(broken)
        assert schema is None and note


def test_a_broken_schema_leaves_only_that_tool_out():
    chosen, problems = plan_tools("s", [_tool("ok"), _tool("bad", {"type": "object", "required": "x"})],
                                  (), (), lambda n: False)
    assert [t["name"] for _, t in chosen] == ["ok"]
    assert "'bad'" in problems[0] and "not valid JSON Schema" in problems[0]


def test_result_text_parts_and_structured_content():
    text = {"type": "text", "text": "hello"}
    assert result_text({"content": [text]}) == "hello"
    # the same JSON twice (text and structured) is shown once
    assert result_text({"content": [{"type": "text", "text": '{"a": 1}'}], "structuredContent": {"a": 1}}) == '{"a": 1}'
    assert result_text({"content": [{"type": "text", "text": "5"}], "structuredContent": {"result": 5}}) == "5"
    # structured content that adds something is appended; alone it is the whole answer
    assert result_text({"content": [text], "structuredContent": {"n": 2, "m": 3}}) == 'hello\n{"n": 2, "m": 3}'
    assert result_text({"content": [], "structuredContent": {"n": 2}}) == '{"n": 2}'
    image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    assert result_text({"content": [image]}) == "[image: image/png, 3 bytes not shown]"
    res = {"type": "resource", "resource": {"uri": "file:///a", "text": "body"}}
    assert result_text({"content": [res]}) == "body"
    assert is_error({"isError": True}) and not is_error({"content": []})
