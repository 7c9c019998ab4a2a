"""The email platform's pure parts: which thread a mail belongs to, what of its text is new,
which mail is never answered, and how a reply is threaded."""
from __future__ import annotations

from email.message import EmailMessage

from gateway.platforms.email import compose, parse

BOT = "hermes@example.org"


def _raw(body: str, **headers: str) -> bytes:
    msg = EmailMessage()
    msg["From"] = headers.pop("From", "Alice <Alice@Example.org>")
    msg["To"] = headers.pop("To", BOT)
    for name, value in headers.items():
        msg[name.replace("_", "-")] = value
    msg.set_content(body)
    return bytes(msg)


def test_the_thread_is_the_first_reference():
    mail = parse.parse(_raw("hi", Message_ID="<c@x>", In_Reply_To="<b@x>",
                            References="<a@x> <b@x>"), BOT)
    assert (mail.sender, mail.message_id, mail.thread) == ("alice@example.org", "<c@x>", "<a@x>")
    assert mail.direct and mail.skip is None
    assert parse.parse(_raw("hi", Message_ID="<d@x>", In_Reply_To="<b@x>"), BOT).thread == "<b@x>"
    assert parse.parse(_raw("hi", Message_ID="<e@x>"), BOT).thread == "<e@x>"


def test_only_the_new_text_is_kept():
    body = ("Thanks, and one more thing.\n\nOn Mon, 1 Dec 2026, Hermes wrote:\n> the old answer\n"
            "> more of it\n\n-- \nAlice's signature")
    assert parse.strip_quoted(body) == "Thanks, and one more thing."
    assert parse.strip_quoted("top\r\n> quoted\r\nbottom") == "top\nbottom"


def test_mail_that_is_never_answered():
    assert parse.parse(_raw("x", Auto_Submitted="auto-replied"), BOT).skip == "an automatic reply"
    assert parse.parse(_raw("x", Precedence="bulk"), BOT).skip == "bulk or list mail"
    assert parse.parse(_raw("x", From="MAILER-DAEMON@example.org"), BOT).skip
    assert parse.parse(_raw("x", From=BOT), BOT).skip


def test_copied_mail_must_name_the_bot():
    mail = parse.parse(_raw("hermes, a question", To="bob@example.org", Cc=BOT), BOT)
    assert not mail.direct
    assert parse.mentions(mail.text, BOT, "hermes")
    assert not parse.mentions("the hermetic seal", BOT, "hermes")


def test_a_reply_is_threaded_and_marked_automatic():
    msg = compose.message(BOT, "alice@example.org", compose.reply_subject("Re:  Plans"),
                          "**done**", in_reply_to="<b@x>", references=["<a@x>", "<b@x>"])
    assert msg["Subject"] == "Re: Plans" and msg["In-Reply-To"] == "<b@x>"
    assert msg["References"] == "<a@x> <b@x>" and msg["Auto-Submitted"] == "auto-replied"
    assert msg.get_body(preferencelist=("html",)) is not None  # markdown also as HTML
    assert compose.reply_subject("Plans") == "Re: Plans"
