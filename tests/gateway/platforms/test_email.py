"""Email end to end against real mail servers: people's mail dropped into a real Dovecot's
Maildir -> the email adapter (IMAP IDLE) -> the runner -> real agents -> FakeProvider; the
answers sent through SMTP to a real aiosmtpd. One pair of servers per module."""
from __future__ import annotations

import uuid
from email.message import EmailMessage
from email.utils import make_msgid
from typing import Any, Optional

import pytest

from gateway.platforms.email import build
from gateway.sessions import session_key
from tests.fake_provider import text, tool_calls
from tests.gateway.platforms.conftest import (LONG_ANSWER, PNG, VOICE, last_user_message,
                                              user_texts, wait_until)
from tests.gateway.platforms.mail_servers import Dovecot, SMTPSink, dovecot_missing

DOMAIN = "mail.test"


@pytest.fixture(scope="module")
def servers() -> Any:
    why = dovecot_missing()
    if why:
        pytest.skip(why)
    imap, smtp = Dovecot().start(), SMTPSink().start()
    yield imap, smtp
    smtp.stop()
    imap.destroy()


class Mailbox:
    """A person writing to the bot: mail goes straight into the bot's INBOX; what the bot sends
    them is read from the SMTP server."""

    def __init__(self, servers: Any, address: str, bot: str) -> None:
        self.imap, self.smtp = servers
        self.address, self.bot = address, bot

    def write(self, body: str, subject: str = "Hello", *, reply_to: Optional[Any] = None,
              files: tuple[tuple[str, str, bytes], ...] = (), cc_only: bool = False) -> str:
        msg = EmailMessage()
        msg["From"] = f"Someone <{self.address}>"
        msg["To"] = "friend@" + DOMAIN if cc_only else self.bot
        if cc_only:
            msg["Cc"] = self.bot
        msg["Subject"] = subject
        msg["Message-ID"] = make_msgid(domain=DOMAIN)
        if reply_to is not None:
            msg["In-Reply-To"] = reply_to["Message-ID"]
            msg["References"] = f'{reply_to.get("References", "")} {reply_to["Message-ID"]}'
        msg.set_content(body)
        for name, mime, data in files:
            main, _, sub = mime.partition("/")
            msg.add_attachment(data, maintype=main, subtype=sub, filename=name)
        self.imap.deliver(self.bot, bytes(msg))
        return str(msg["Message-ID"])

    def received(self, n: int = 1) -> list[Any]:
        return wait_until(lambda: (lambda got: got if len(got) >= n else None)(
            self.smtp.to(self.address)), what=f"{n} mail(s) to {self.address}")


def body_of(msg: Any) -> str:
    """The plain text as a reader sees it (the SMTP wire's CRLF line ends as newlines)."""
    return str(msg.get_body(preferencelist=("plain",)).get_content()).replace("\r\n", "\n").strip()


@pytest.fixture
def mail(servers, make_gateway, monkeypatch):
    """A fresh bot account, an allowed person and a stranger; the gateway serving the bot."""
    imap, smtp = servers
    tag = uuid.uuid4().hex[:8]
    bot, alice, eve = (f"{who}-{tag}@{DOMAIN}" for who in ("hermes", "alice", "eve"))
    imap.add_user(bot, "bot-password")
    smtp.accounts[bot] = "bot-password"
    monkeypatch.setenv("EMAIL_ALLOWED_USERS", alice)
    adapter = build({"address": bot, "password": "bot-password", "imap_host": "127.0.0.1",
                     "imap_port": imap.port, "imap_security": "none", "smtp_host": "127.0.0.1",
                     "smtp_port": smtp.port, "smtp_security": "none", "poll_interval": 1}, {})
    gw = make_gateway(adapters=(adapter,))
    return gw, Mailbox(servers, alice, bot), Mailbox(servers, eve, bot)


def test_a_thread_is_a_session_and_replies_quote_nothing_twice(mail, provider_env):
    gw, alice, _eve = mail
    provider_env.queue(text("Milk is on your list."), text("You asked about milk."),
                       text("A new conversation."))
    first = alice.write("remind me to buy milk", subject="Shopping")
    answer = alice.received()[0]
    assert answer["Subject"] == "Re: Shopping" and answer["In-Reply-To"] == first
    assert body_of(answer) == "Milk is on your list."
    # her client quotes the bot's answer under her reply; the model sees only what is new
    alice.write("what did I ask?\n\nOn Tue, the bot wrote:\n> Milk is on your list.\n",
                subject="Re: Shopping", reply_to=answer)
    second = alice.received(2)[1]
    assert body_of(second) == "You asked about milk." and ">" not in body_of(second)
    assert second["References"].split()[0] == first  # the same thread in every client
    assert user_texts(gw.db, session_key("email", "thread", alice.address, alice.address, first)) \
        == ["remind me to buy milk", "what did I ask?"]
    assert "Milk is on your list." in str(provider_env.requests[1]["messages"])  # the history
    other = alice.write("something else entirely", subject="Another topic")
    assert alice.received(3)[2]["Subject"] == "Re: Another topic"
    assert user_texts(gw.db, session_key("email", "thread", alice.address, alice.address, other)) \
        == ["something else entirely"]


def test_an_unknown_sender_is_refused(mail, provider_env):
    _gw, alice, eve = mail
    eve.write("let me in")
    refusal = body_of(eve.received()[0])
    assert "hermes pairing approve email" in refusal
    assert provider_env.requests == []
    provider_env.queue(text("Hi Alice."))
    alice.write("hello")
    assert body_of(alice.received()[0]) == "Hi Alice."
    assert len(eve.smtp.to(eve.address)) == 1  # nothing more went to the stranger


def test_an_attachment_in_and_one_out(mail, provider_env):
    gw, alice, _eve = mail
    provider_env.queue(tool_calls([("write_file", {"path": "report.txt",
                                                   "content": "one pixel, white\n"})]),
                       text("Here is the report.\nMEDIA: report.txt"))
    alice.write("describe this picture in a file", files=(("pixel.png", "image/png", PNG),))
    answer = alice.received()[0]
    parts = [m for m in provider_env.requests[0]["messages"] if m["role"] == "user"][-1]["content"]
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert body_of(answer) == "Here is the report."
    sent = {p.get_filename(): p.get_content() for p in answer.iter_attachments()}
    assert sent == {"report.txt": "one pixel, white\n"}
    assert provider_env.requests and last_user_message(provider_env)


def test_a_voice_note_reaches_the_model_and_its_transcript_the_sender(mail, provider_env, stt):
    _gw, alice, _eve = mail
    provider_env.queue(text("Nothing today."))
    alice.write("", subject="Voice memo", files=(("memo.ogg", "audio/ogg", VOICE),))
    said = [body_of(m) for m in alice.received(2)]
    assert said == [f"🎤 “{stt.transcript}”", "Nothing today."]
    assert stt.received[0]["data"] == VOICE
    assert stt.transcript in last_user_message(provider_env)


def test_a_long_answer_is_one_mail(mail, provider_env):
    _gw, alice, _eve = mail
    provider_env.queue(text(LONG_ANSWER))
    alice.write("tell me everything")
    answers = alice.received()
    assert len(answers) == 1 and body_of(answers[0]) == LONG_ANSWER


def test_mail_only_copied_to_the_bot_needs_its_name(mail, provider_env):
    _gw, alice, _eve = mail
    provider_env.queue(text("Noted."))
    alice.write("the two of us should meet", cc_only=True)
    alice.write("hermes, please note the meeting", cc_only=True)
    assert body_of(alice.received()[0]) == "Noted."
    assert len(provider_env.requests) == 1
    assert last_user_message(provider_env) == "hermes, please note the meeting"


def test_mail_that_arrives_while_imap_is_down_is_answered(mail, provider_env, servers):
    _gw, alice, _eve = mail
    imap, _smtp = servers
    provider_env.queue(text("first answer"), text("second answer"))
    alice.write("first")
    alice.received()
    imap.stop()
    alice.write("second")  # delivered to the Maildir while the IMAP server is away
    imap.start()
    assert [body_of(m) for m in alice.received(2)] == ["first answer", "second answer"]
    assert len(provider_env.requests) == 2


def test_send_message_mails_a_file_into_the_thread(mail, provider_env):
    _gw, alice, _eve = mail
    provider_env.queue(
        tool_calls([("write_file", {"path": "notes.md", "content": "# Notes\n"})]),
        tool_calls([("send_message", {"target": "origin", "text": "Your notes.",
                                      "files": ["notes.md"]})]),
        text("Sent them separately."))
    first = alice.write("mail me my notes", subject="Notes")
    sent, answer = alice.received(2)
    assert body_of(sent) == "Your notes." and sent["In-Reply-To"] == first
    assert {p.get_filename(): p.get_content() for p in sent.iter_attachments()} == {
        "notes.md": "# Notes\n"}
    assert body_of(answer) == "Sent them separately."
    assert answer["References"].split()[0] == first
