"""vision_analyze: a local path or URL reaches the vision model (auxiliary.vision, else the main
model) as an image part; models that cannot read images, and bad input, say so clearly."""
from __future__ import annotations

import base64

import pytest

from hermes_core.config import parse_config
from tests.fake_provider import error, text, tool_calls
from tests.web_server import WebServer, make_png
from tools.registry import ToolContext, ToolError, dispatch


@pytest.fixture
def png(tmp_path):
    path = tmp_path / "red.png"
    path.write_bytes(make_png(4, 4))
    return path


def vision_ctx(tmp_path, fp, **extra) -> ToolContext:
    cfg = parse_config({"auxiliary": {"vision": {"base_url": fp.base_url, "api_key": "k",
                                                 "model": "eyes-1"}}, **extra})
    return ToolContext(cwd=tmp_path, config=cfg)


def image_parts(body: dict) -> list[dict]:
    return [p for m in body["messages"] if isinstance(m.get("content"), list)
            for p in m["content"] if p.get("type") == "image_url"]


def test_local_image_to_the_auxiliary_model(tmp_path, png, fake_provider):
    fake_provider.queue(text("A small red square."))
    out = dispatch("vision_analyze", {"image": "red.png", "question": "What colour?"},
                   vision_ctx(tmp_path, fake_provider))
    assert out == "A small red square."
    body = fake_provider.requests[-1]
    assert body["model"] == "eyes-1"
    assert body["messages"][0]["content"][0] == {"type": "text", "text": "What colour?"}
    url = image_parts(body)[0]["image_url"]["url"]
    assert base64.b64decode(url.split(",", 1)[1]) == png.read_bytes()
    assert url.startswith("data:image/png;base64,")


def test_default_is_the_main_model_inside_a_turn(make_agent, fake_provider, png):
    call = ("vision_analyze", {"image": str(png), "question": "Colour?"})
    fake_provider.queue(tool_calls([call]),
                        text("red"), text("The image is red."))
    res = make_agent().run_conversation("what colour is red.png?")
    assert res["final_response"] == "The image is red."
    vision_request = fake_provider.requests[1]
    assert vision_request["model"] == "fake-model" and image_parts(vision_request)
    tool_msg = [m for m in fake_provider.requests[2]["messages"] if m["role"] == "tool"][0]
    assert tool_msg["content"] == "red"


def test_url_images_go_through_the_guard(tmp_path, fake_provider):
    web = WebServer().start()
    try:
        fake_provider.queue(text("a logo"))
        ok = vision_ctx(tmp_path, fake_provider, web={"allow_private": True})
        assert dispatch("vision_analyze", {"image": web.url("/image.png")}, ok) == "a logo"
        with pytest.raises(ToolError, match="refused: 127.0.0.1 is a loopback address"):
            dispatch("vision_analyze", {"image": web.url("/image.png")},
                     vision_ctx(tmp_path, fake_provider))
        with pytest.raises(ToolError, match="is not an image"):
            dispatch("vision_analyze", {"image": web.url("/article/tides")}, ok)
    finally:
        web.stop()


def test_a_model_without_vision_gets_a_clear_error(tmp_path, png, fake_provider):
    fake_provider.queue(error(400, "This model does not support image input.",
                              type="invalid_request_error"))
    with pytest.raises(ToolError) as err:
        dispatch("vision_analyze", {"image": str(png)}, vision_ctx(tmp_path, fake_provider))
    assert str(err.value).startswith("vision_analyze: the model eyes-1 does not accept images "
                                     "(This model does not support image input.); set "
                                     "auxiliary.vision.model")
    local = ToolContext(cwd=tmp_path, config=parse_config({"auxiliary": {"vision": {
        "provider": "local"}}}))
    with pytest.raises(ToolError, match="the embedded local model reads text only"):
        dispatch("vision_analyze", {"image": str(png)}, local)


def test_bad_images_are_named(tmp_path, png, fake_provider):
    ctx = vision_ctx(tmp_path, fake_provider)
    (tmp_path / "notes.txt").write_text("hello")
    for image, expected in (("missing.png", "no such image file"),
                            ("notes.txt", "notes.txt is not an image"), ("", "'image' is empty")):
        with pytest.raises(ToolError, match=expected):
            dispatch("vision_analyze", {"image": image}, ctx)
    confined = vision_ctx(tmp_path / "sub", fake_provider)
    confined.confine_to = tmp_path / "sub"
    (tmp_path / "sub").mkdir()
    with pytest.raises(ToolError, match="outside the working directory"):
        dispatch("vision_analyze", {"image": str(png)}, confined)
    assert fake_provider.requests == []
