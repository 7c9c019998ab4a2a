"""Images attached from the CLI (`--image`, `/image`) reach the model as image parts; a model that
rejects them gives one clear line; `hermes -z` reads a loopback page end to end through
web_extract with the loopback provider scripting the calls."""
from __future__ import annotations

import io
from types import SimpleNamespace

import pytest

from hermes_core.config import load_config
from hermes_cli.agent_factory import build_agent
from hermes_cli.chat import ChatSession
from hermes_cli.render import Renderer
from tests.conftest import write_config
from tests.fake_provider import error, text, tool_calls
from tests.web_articles import ARTICLES
from tests.web_server import WebServer, make_png


@pytest.fixture
def png(tmp_path):
    path = tmp_path / "red.png"
    path.write_bytes(make_png(3, 3))
    return path


def user_content(body: dict):
    return [m for m in body["messages"] if m["role"] == "user"][-1]["content"]


def test_image_flag_attaches_to_the_message(hermes, fake_provider, png):
    fake_provider.queue(text("It is a red square."))
    res = hermes("-z", "what is this?", "--image", str(png))
    assert res.returncode == 0, res.stderr
    assert res.stdout == "It is a red square.\n"
    content = user_content(fake_provider.requests[0])
    assert content[0] == {"type": "text", "text": "what is this?"}
    assert content[1]["image_url"]["url"].startswith("data:image/png;base64,")


def test_bad_image_flag_is_one_line_and_sends_nothing(hermes, fake_provider, tmp_path):
    res = hermes("-z", "what is this?", "--image", str(tmp_path / "nope.png"))
    assert res.returncode != 0 and fake_provider.requests == []
    assert res.stderr.strip().splitlines() == [
        f"hermes: error: cannot attach {tmp_path / 'nope.png'}: {tmp_path / 'nope.png'}: "
        "no such image file"]


def test_a_model_that_rejects_images_says_so(hermes, fake_provider, png):
    fake_provider.queue(error(400, "Invalid content type. image_url is only supported by "
                                   "certain models.", type="invalid_request_error"))
    res = hermes("-z", "what is this?", "--image", str(png), "-m", "fake-model")
    assert res.returncode != 0
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "hermes: error: The model fake-model does not accept images"), res.stderr


def test_repl_image_command_attaches_to_the_next_message(fake_provider, png):
    from hermes_state import SessionDB

    args = SimpleNamespace(model=None, provider=None, base_url=fake_provider.base_url,
                           api_key="test", toolsets=None, resume=None, continue_last=False,
                           max_turns=None, yolo=False, debug=False)
    out, db = io.StringIO(), SessionDB()
    chat = ChatSession(lambda sid: build_agent(args, load_config(), session_db=db,
                                               session_id=sid), Renderer(out=out, spinner=False),
                       db=db)
    fake_provider.queue(text("red"), text("plain"))
    chat.handle_line(f"/image {png}")
    assert "Attached" in out.getvalue()
    chat.handle_line("what colour?")
    chat.handle_line("and now?")
    first, second = (user_content(b) for b in fake_provider.requests)
    assert first[0]["text"] == "what colour?" and first[1]["type"] == "image_url"
    assert second == "and now?"  # the image went with one message only
    chat.handle_line("/image /nowhere.png")
    assert "cannot attach /nowhere.png" in out.getvalue()
    stored = db.get_active_messages(chat.agent.session_id)
    assert stored[0]["content"][1]["type"] == "image_url"  # kept in the store as parts
    db.close()


def test_z_reads_a_loopback_page_end_to_end(hermes, fake_provider, hermes_home):
    web = WebServer().start()
    write_config(hermes_home, "web:\n  allow_private: true\n")
    sentence = ARTICLES["tides"].sentences[5]

    def answer(body):
        tool = [m for m in body["messages"] if m["role"] == "tool"]
        if not tool:
            return tool_calls([("web_extract", {"urls": [web.url("/article/tides")]})])
        said = " ".join(tool[-1]["content"].split())
        return text(f"The page says: {sentence}" if sentence in said else "nothing found")

    fake_provider.handler = answer
    try:
        res = hermes("-z", f"what does {web.url('/article/tides')} say about the 1899 flood?")
    finally:
        web.stop()
    assert res.returncode == 0, res.stderr
    assert res.stdout == f"The page says: {sentence}\n"
    assert web.hits["/article/tides"] == 1
    tool_msg = [m for m in fake_provider.requests[-1]["messages"] if m["role"] == "tool"][0]
    assert "Accept all cookies" not in tool_msg["content"]
