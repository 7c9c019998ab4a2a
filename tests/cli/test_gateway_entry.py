"""`hermes gateway` and `hermes pairing` reach the gateway's own command line."""
from __future__ import annotations

import signal
import subprocess
import sys

from openai import OpenAI

from tests.cli.conftest import ROOT, hermes_env, run_hermes
from tests.fake_provider import text


def test_hermes_gateway_run_serves_the_openai_sdk_and_stops_on_sigterm(fake_provider, hermes_home):
    env = hermes_env(fake_provider)
    fake_provider.queue(text("served through the gateway"))
    proc = subprocess.Popen([sys.executable, "-m", "hermes_cli.main", "gateway", "run", "--api-server", "--port", "0"],
                            env=env, cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("READY gateway"), line + proc.stderr.read()
        api = line.split("api=")[1].strip()
        status = run_hermes("gateway", "status", env=env)
        assert status.returncode == 0 and "running" in status.stdout
        from dotenv import dotenv_values

        key = dotenv_values(hermes_home / ".env")["API_SERVER_KEY"]  # generated on first start
        client = OpenAI(base_url=api + "/v1", api_key=key, max_retries=0)
        reply = client.chat.completions.create(model="hermes-agent", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message.content == "served through the gateway"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    after = run_hermes("gateway", "status", env=env)
    assert after.returncode == 1 and "stopped" in after.stdout


def test_hermes_pairing_and_gateway_help_pass_through():
    env = hermes_env()
    listed = run_hermes("pairing", "list", env=env)
    assert listed.returncode == 0 and "No pending pairing codes" in listed.stdout
    helped = run_hermes("gateway", "--help", env=env)
    assert helped.returncode == 0 and "{run,setup,status}" in helped.stdout
    bad = run_hermes("pairing", "approve", "telegram", "NOSUCHCODE", env=env)
    assert bad.returncode != 0 and bad.stderr.strip() and "Traceback" not in bad.stderr
