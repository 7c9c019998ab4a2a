"""`image_url` parts in API server requests reach the model as image parts (chat completions
and the Responses API's `input_image`), with the text beside them."""
from __future__ import annotations

import openai

from tests.fake_provider import text
from tests.web_server import make_png
from hermes_core.images import data_url

PNG = data_url(make_png(2, 2), "image/png")


def _client(gw) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.base_url, api_key=gw.api_key, max_retries=0, timeout=30)


def _last_user(body: dict):
    return [m for m in body["messages"] if m["role"] == "user"][-1]["content"]


def test_chat_completion_image_parts_reach_the_model(make_gateway, provider_env):
    provider_env.queue(text("a red square"), text("still red"))
    gw = make_gateway(api=True)
    content = [{"type": "text", "text": "What is this?"},
               {"type": "image_url", "image_url": {"url": PNG, "detail": "low"}}]
    out = _client(gw).chat.completions.create(
        model="hermes-agent", messages=[{"role": "user", "content": content}])
    assert out.choices[0].message.content == "a red square"
    assert _last_user(provider_env.requests[-1]) == [
        {"type": "text", "text": "What is this?"}, {"type": "image_url", "image_url": {"url": PNG}}]
    stream = _client(gw).chat.completions.create(
        model="hermes-agent", messages=[{"role": "user", "content": content}], stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "still red"
    assert _last_user(provider_env.requests[-1])[1]["image_url"]["url"] == PNG


def test_responses_input_image_reaches_the_model(make_gateway, provider_env):
    provider_env.queue(text("a tiny image"))
    gw = make_gateway(api=True)
    resp = _client(gw).responses.create(model="hermes-agent", input=[{
        "role": "user", "content": [{"type": "input_text", "text": "Describe it."},
                                    {"type": "input_image", "image_url": PNG}]}])
    assert resp.output_text == "a tiny image"
    assert _last_user(provider_env.requests[-1]) == [
        {"type": "text", "text": "Describe it."}, {"type": "image_url", "image_url": {"url": PNG}}]
