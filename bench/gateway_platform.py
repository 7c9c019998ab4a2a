"""`bench/gateway_load.py --platform matrix`: the gateway serving Matrix rooms on a real Synapse.

    .venv/bin/python bench/gateway_load.py --platform matrix [--sessions 100] [--rounds 10] [--delay 1.0]

Starts Synapse as the tests do (``tests/gateway/platforms/synapse.py``: SQLite, rate limits
lifted, on loopback), ``python -m tests.fake_provider --delay D`` and ``hermes gateway run``
(subprocesses, a throwaway HERMES_HOME) with the bot's Matrix account; registers one person per
room, each opens a DM with the bot (the bot accepts the invite, as an allowed user's), then
every person sends ``--rounds`` messages one after another, each as soon as the bot's answer to
the previous one arrived through their own ``/sync`` long poll (what a Matrix client sees).

Prints: completed turns/s against the ideal (rooms / delay); the added latency (from sending
the message to seeing the answer, minus the provider's fixed delay; p50, p99, max); the
gateway's CPU per turn (user + system seconds of its process over the turns) and Synapse's;
the load average next to every figure. Synapse runs on the same cores: its work is part of
every figure, as it would be for a homeserver on the same host.

Seen on the 2-core build host (load average ~1): Synapse spends ~80-90 ms of CPU per turn in
one process and saturates (~89% of a core) near 11 turns/s, whatever the number of rooms; the
gateway spends ~8 ms per turn (~9% of a core). 5 rooms (below that ceiling): added p50 ~180 ms.
"""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Any, Optional
from urllib.parse import quote

import aiohttp

from gateway_load import REPO, _spawn, _stop, cpu_seconds, load_average, pct

SYNC_FILTER = json.dumps({"presence": {"not_types": ["*"]}, "account_data": {"not_types": ["*"]},
                          "room": {"timeline": {"limit": 20, "types": ["m.room.message"]},
                                   "state": {"lazy_load_members": True},
                                   "ephemeral": {"not_types": ["*"]},
                                   "account_data": {"not_types": ["*"]}}})


class Person:
    """One Matrix user over the client-server API (aiohttp): a DM with the bot, and a sync loop
    that returns the bot's next message in it."""

    def __init__(self, http: aiohttp.ClientSession, base: str, account: dict[str, Any]) -> None:
        self.http, self.base = http, base
        self.user_id, self.token = account["user_id"], account["access_token"]
        self.room = ""
        self.since: Optional[str] = None
        self._txn = 0

    async def call(self, method: str, path: str, body: Any = None,
                   timeout: float = 60) -> dict[str, Any]:
        async with self.http.request(method, self.base + path, json=body, headers={
                "Authorization": f"Bearer {self.token}"},
                timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
            data = await resp.json()
            if resp.status >= 400:
                raise RuntimeError(f"{method} {path.split('?')[0]}: HTTP {resp.status} {data}")
            return data

    async def open_dm(self, bot: str) -> None:
        made = await self.call("POST", "/_matrix/client/v3/createRoom", {
            "invite": [bot], "is_direct": True, "preset": "private_chat"})
        self.room = made["room_id"]
        path = f"/_matrix/client/v3/rooms/{quote(self.room, safe='')}/joined_members"
        while bot not in (await self.call("GET", path))["joined"]:
            await asyncio.sleep(0.2)
        await self.bot_messages(bot, wait=0)  # past the invite and join: the next batch

    async def say(self, text: str) -> None:
        self._txn += 1
        path = (f"/_matrix/client/v3/rooms/{quote(self.room, safe='')}/send/m.room.message/"
                f"b{self._txn}-{uuid.uuid4().hex[:6]}")
        await self.call("PUT", path, {"msgtype": "m.text", "body": text})

    async def bot_messages(self, bot: str, wait: float = 30) -> list[str]:
        """The bot's messages in the room since the last call, long-polling ``wait`` seconds."""
        query = f"timeout={int(wait * 1000)}&filter={quote(SYNC_FILTER)}"
        if self.since:
            query += f"&since={quote(self.since)}"
        data = await self.call("GET", f"/_matrix/client/v3/sync?{query}", timeout=wait + 60)
        self.since = data["next_batch"]
        room = data.get("rooms", {}).get("join", {}).get(self.room, {})
        return [str(e["content"].get("body", "")) for e in room.get("timeline", {}).get(
            "events", ()) if e.get("sender") == bot and e.get("type") == "m.room.message"]


async def converse(person: Person, bot: str, rounds: int, latencies: list[float],
                   errors: list[str]) -> None:
    for i in range(rounds):
        sent = time.perf_counter()
        try:
            await person.say(f"turn {i}: hello")
            deadline = sent + 120
            while not await person.bot_messages(bot):
                if time.perf_counter() > deadline:
                    raise TimeoutError("no answer within 120 s")
        except Exception as exc:  # noqa: BLE001 - counted and shown, the others go on
            errors.append(f"{type(exc).__name__}: {str(exc)[:120]}")
            return
        latencies.append(time.perf_counter() - sent)


def register_all(synapse: Any, n: int) -> list[dict[str, Any]]:
    tag = uuid.uuid4().hex[:6]
    return [synapse.register(f"bench{tag}-{i}", "bench password 1") for i in range(n)]


def start_gateway(env: dict[str, str], synapse: Any, bot: dict[str, Any],
                  people: list[dict[str, Any]]) -> tuple[subprocess.Popen[str], str]:
    gw_env = dict(env, MATRIX_HOMESERVER=synapse.url, MATRIX_USER_ID=bot["user_id"],
                  MATRIX_ACCESS_TOKEN=bot["access_token"],
                  MATRIX_ALLOWED_USERS=",".join(p["user_id"] for p in people))
    return _spawn([sys.executable, "-m", "hermes_cli.main", "gateway", "run"], gw_env,
                  "READY gateway")


async def drive(synapse: Any, bot: str, people: list[dict[str, Any]], rounds: int,
                gw_pid: int) -> dict[str, Any]:
    conn = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=conn) as http:
        persons = [Person(http, synapse.url, p) for p in people]
        t0 = time.perf_counter()
        for chunk in range(0, len(persons), 20):  # room creation in waves: Synapse's own pace
            await asyncio.gather(*(p.open_dm(bot) for p in persons[chunk:chunk + 20]))
        print(f"  {len(persons)} DMs open in {time.perf_counter() - t0:.1f}s "
              f"(load average {load_average()})", flush=True)
        latencies: list[float] = []
        errors: list[str] = []
        cpu0, syn0, start = cpu_seconds(gw_pid), cpu_seconds(synapse.proc.pid), time.perf_counter()
        await asyncio.gather(*(converse(p, bot, rounds, latencies, errors) for p in persons))
        wall = time.perf_counter() - start
        return {"latencies": latencies, "errors": errors, "wall": wall,
                "gw_cpu": cpu_seconds(gw_pid) - cpu0,
                "synapse_cpu": cpu_seconds(synapse.proc.pid) - syn0, "load": load_average()}


def report(r: dict[str, Any], rooms: int, rounds: int, delay: float) -> None:
    turns = len(r["latencies"])
    added = [(x - delay) * 1000 for x in r["latencies"]] or [float("nan")]
    ideal = rooms / delay
    print(f"  turns: {turns}/{rooms * rounds} in {r['wall']:.1f}s -> {turns / r['wall']:.1f} "
          f"turns/s (ideal {ideal:.1f}, {100 * turns / r['wall'] / ideal:.0f}%) "
          f"[load average {r['load']}]")
    print(f"  added latency (sent -> answer seen, minus the {delay:g}s provider delay): "
          f"p50 {pct(added, 50):.0f} ms, p99 {pct(added, 99):.0f} ms, max {max(added):.0f} ms")
    print(f"  CPU per turn: gateway {1000 * r['gw_cpu'] / max(turns, 1):.1f} ms, "
          f"Synapse {1000 * r['synapse_cpu'] / max(turns, 1):.1f} ms; busy: gateway "
          f"{100 * r['gw_cpu'] / r['wall']:.0f}% of a core, Synapse "
          f"{100 * r['synapse_cpu'] / r['wall']:.0f}% (one process each)")
    if r["errors"]:
        print(f"  errors ({len(r['errors'])}): {sorted(set(r['errors']))[:5]}")


def run_matrix(args: Any) -> int:
    sys.path.insert(0, str(REPO))  # run as a script: the repo's test helpers
    from tests.gateway.platforms.synapse import Synapse, available

    why = available()
    if why:
        print(f"cannot run: {why}")
        return 2
    home = tempfile.mkdtemp(prefix="hermes-bench-matrix-")
    env = dict(os.environ, HERMES_HOME=home, PYTHONPATH=str(REPO))
    synapse = Synapse().start()
    procs: list[subprocess.Popen[str]] = []
    try:
        bot, *people = register_all(synapse, args.sessions + 1)
        fp, ready = _spawn([sys.executable, "-m", "tests.fake_provider", "--port", "0",
                            "--delay", str(args.delay)], env, "READY")
        procs.append(fp)
        env.update(OPENAI_BASE_URL=ready.split()[1], OPENAI_API_KEY="bench",
                   HERMES_MODEL="fake-model")
        gw, _ = start_gateway(env, synapse, bot, people)
        procs.append(gw)
        print(f"matrix: {args.sessions} rooms x {args.rounds} turns, provider delay "
              f"{args.delay:g}s, Synapse {synapse.url}", flush=True)
        result = asyncio.run(drive(synapse, bot["user_id"], people, args.rounds, gw.pid))
        report(result, args.sessions, args.rounds, args.delay)
    finally:
        _stop(procs)
        synapse.stop()
    print(f"load average after: {load_average()}")
    return 1 if result["errors"] else 0
