"""The gateway on the embedded model survives the model's death (issue 19): killing the model's
child during a turn gives that client an error, the gateway stays up, and the next request starts a
fresh child and gets an answer. A real gateway subprocess, the real model, a real SIGKILL."""
from __future__ import annotations

import json
import os
import signal
import time
import urllib.error
import urllib.request

import pytest

from tests.local_model import model_children, needs_model

pytestmark = [needs_model, pytest.mark.timeout(600)]


def _post(gw, text: str) -> tuple[int, dict]:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": text}]}).encode()
    req = urllib.request.Request(gw.url, data=body, method="POST", headers={
        "Content-Type": "application/json", "Authorization": f"Bearer {gw.key}"})
    try:
        with urllib.request.urlopen(req, timeout=300) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def test_killing_the_model_child_fails_one_request_and_the_next_one_answers(gateway_process):
    gw = gateway_process(HERMES_PROVIDER="local")
    pending = gw.post_async("Tell me a long story about the sea.", session="local-crash")
    victims: list[int] = []
    deadline = time.monotonic() + 120
    while not victims and time.monotonic() < deadline:  # the child starts with the first turn
        victims = model_children(gw.proc.pid)
        time.sleep(0.02)
    assert victims, "the gateway never started the model's child"
    os.kill(victims[0], signal.SIGKILL)
    failed = pending.get(timeout=300)
    assert isinstance(failed, urllib.error.HTTPError), failed
    detail = json.loads(failed.read() or b"{}")
    assert "The embedded model stopped" in json.dumps(detail) and "SIGKILL" in json.dumps(detail)
    assert gw.proc.poll() is None  # the gateway lives

    status, answer = _post(gw, "Say hello.")
    assert status == 200, answer
    assert answer["choices"][0]["message"]["content"]
    assert model_children(gw.proc.pid) and victims[0] not in model_children(gw.proc.pid)
