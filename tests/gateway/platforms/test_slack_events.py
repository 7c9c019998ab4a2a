"""Which Slack events are messages for the bot, and what they say (slack.events)."""
from __future__ import annotations

from gateway.platforms.slack.events import clean_text, incoming, kind_of

BOT = "UHERMES01"


def test_dms_are_messages_and_channels_need_a_mention():
    dm = incoming({"type": "message", "channel_type": "im", "channel": "D1", "user": "U1",
                   "text": "hi", "ts": "1.1"}, BOT)
    assert dm is not None and (dm.chat_type, dm.thread, dm.text) == ("dm", None, "hi")
    chatter = {"type": "message", "channel_type": "channel", "channel": "C1", "user": "U1",
               "text": "hi all", "ts": "1.2"}
    assert incoming(chatter, BOT) is None
    mention = incoming({"type": "app_mention", "channel": "C1", "user": "U1", "ts": "1.3",
                        "text": f"<@{BOT}> hello <@U2|bob> &amp; co"}, BOT)
    assert mention is not None and mention.thread == "1.3" and mention.chat_type == "thread"
    assert mention.text == "hello @U2 & co"
    in_thread = incoming({"type": "app_mention", "channel": "C1", "user": "U1", "ts": "1.5",
                          "thread_ts": "1.3", "text": f"<@{BOT}> more"}, BOT)
    assert in_thread is not None and in_thread.thread == "1.3"


def test_what_is_never_a_message():
    base = {"type": "message", "channel_type": "im", "channel": "D1", "ts": "1.1", "text": "x"}
    assert incoming({**base, "user": BOT}, BOT) is None  # our own
    assert incoming({**base, "user": "U1", "bot_id": "B2"}, BOT) is None  # another bot
    assert incoming({**base, "user": "U1", "subtype": "message_changed"}, BOT) is None
    assert incoming({**base}, BOT) is None  # no user
    assert incoming({**base, "user": "U1", "subtype": "file_share", "files": [{"id": "F"}]},
                    BOT).files == ({"id": "F"},)


def test_text_and_kinds():
    assert clean_text(f"<@{BOT}>   what now?", BOT) == "what now?"
    assert (kind_of("image/png"), kind_of("audio/webm"), kind_of("application/pdf")) == (
        "image", "voice", "file")
