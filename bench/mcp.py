"""MCP client costs: start-up with 3 stdio servers, and per-call overhead over a direct SDK call.

1. Start-up, in process: the time until every server is connected and its tools registered, for
   each of 3 stdio servers alone and for all 3 at once (the SDK is imported first, as the REPL
   does in the background while the user reads the banner). Target: all 3 <= 1.2x the slowest alone.
   Two sets: 3x the real `mcp-server-time`, and 3x the test server with 0.5/1.0/2.0 s of start-up
   delay (mostly waiting, so it shows the parallelism rather than this machine's 2 cores).
2. Start-up, as a user sees it: `hermes -z hi` wall time with no server, with the slowest server
   alone and with all 3 (the first turn waits for the servers; the prompt of the REPL does not).
3. Per call: `echo` through the registry (tool thread -> manager loop -> SDK) vs the SDK's own
   `Client.call_tool` on a session of its own, median of N calls each.

    .venv/bin/python bench/mcp.py [--runs 3] [--calls 200]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# this file is bench/mcp.py: `import mcp` must find the SDK, not this script's own folder
sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or os.getcwd()).resolve() != ROOT / "bench"]
SERVER = str(ROOT / "tests" / "mcp" / "server.py")


def time_server(name: str) -> dict:
    return {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
            "connect_timeout": 60}


def delayed_server(delay: float) -> dict:
    return {"command": sys.executable, "args": [SERVER, "--startup-delay", str(delay)], "connect_timeout": 60}


def connect_time(servers: dict) -> float:
    """Seconds from manager start until every server is connected (tools registered)."""
    from hermes_core.config import hermes_home
    from tools.mcp.config import parse_servers
    from tools.mcp.manager import MCPManager

    parsed, errors = parse_servers(servers, os.environ)
    assert not errors, errors
    start = time.perf_counter()
    manager = MCPManager(parsed, log_dir=hermes_home() / "logs").start()
    manager.wait_settled()
    took = time.perf_counter() - start
    bad = [s for s in manager.statuses() if s.status != "connected"]
    manager.shutdown()
    if bad:
        raise SystemExit(f"{bad[0].name} did not connect: {bad[0].error}")
    return took


def startup_in_process(label: str, servers: dict, runs: int) -> None:
    alone = {name: statistics.median(connect_time({name: entry}) for _ in range(runs))
             for name, entry in servers.items()}
    together = statistics.median(connect_time(servers) for _ in range(runs))
    slowest = max(alone.values())
    print(f"\n{label}: connect + list tools, median of {runs}")
    for name, t in alone.items():
        print(f"  {name:<10} alone      {t:6.2f} s")
    print(f"  all 3 at once        {together:6.2f} s   = {together / slowest:.2f}x the slowest alone "
          f"(sequential would be {sum(alone.values()):.2f} s)")


def run_z(env: dict, runs: int) -> float:
    cmd = [sys.executable, "-m", "hermes_cli.main", "-z", "hi"]
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(cmd, env=env, cwd=str(ROOT), capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if proc.returncode != 0 or proc.stdout.strip() != "hello":
            raise SystemExit(f"hermes -z failed: {proc.stderr.strip()}")
    return statistics.median(times)


def startup_cli(servers: dict, slowest: str, runs: int) -> None:
    import yaml

    home = Path(tempfile.mkdtemp(prefix="hermes-bench-mcp-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "OPENROUTER_", "HERMES_"))}
    env.update(HERMES_HOME=str(home), PYTHONPATH=str(ROOT))
    provider = subprocess.Popen([sys.executable, "-m", "tests.fake_provider", "--port", "0", "--reply", "hello"],
                                env=env, cwd=str(ROOT), stdout=subprocess.PIPE, text=True)
    try:
        env.update(OPENAI_BASE_URL=provider.stdout.readline().split()[1], OPENAI_API_KEY="bench")
        results = {}
        for label, chosen in (("no server", {}), (f"{slowest} alone", {slowest: servers[slowest]}),
                              ("all 3", servers)):
            (home / "config.yaml").write_text(yaml.safe_dump({"mcp_servers": chosen} if chosen else {}))
            results[label] = run_z(env, runs)
        print(f"\n`hermes -z hi` wall time (its first turn waits for the servers), median of {runs}")
        for label, t in results.items():
            print(f"  {label:<22} {t:6.2f} s")
        print(f"  all 3 / slowest alone  {results['all 3'] / results[f'{slowest} alone']:.2f}x")
    finally:
        provider.terminate()
        provider.wait(10)


async def direct_calls(n: int) -> list[float]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=[SERVER])
    out = []
    with open(os.devnull, "w") as devnull:
        async with Client(stdio_client(params, errlog=devnull)) as client:
            for i in range(n + 10):
                start = time.perf_counter()
                await client.call_tool("echo", {"text": "x"})
                if i >= 10:
                    out.append(time.perf_counter() - start)
    return out


def registry_calls(n: int) -> list[float]:
    from types import SimpleNamespace

    from tools.mcp.manager import shutdown_servers, start_servers
    from tools import registry

    start_servers(SimpleNamespace(mcp_servers={"s": {"command": sys.executable, "args": [SERVER]}}))
    registry.settle()
    ctx = registry.ToolContext(cwd=".")
    out = []
    for i in range(n + 10):
        start = time.perf_counter()
        registry.dispatch("mcp__s__echo", {"text": "x"}, ctx)
        if i >= 10:
            out.append(time.perf_counter() - start)
    shutdown_servers()
    return out


def per_call(n: int) -> None:
    direct = statistics.median(asyncio.run(direct_calls(n)))
    ours = statistics.median(registry_calls(n))
    print(f"\nper call (`echo` on the test server over stdio), median of {n}")
    print(f"  SDK Client.call_tool      {direct * 1000:7.2f} ms")
    print(f"  registry.dispatch         {ours * 1000:7.2f} ms   overhead {(ours - direct) * 1000:+.2f} ms")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args()
    os.environ["HERMES_HOME"] = tempfile.mkdtemp(prefix="hermes-bench-mcp-")
    import mcp.client.stdio  # noqa: F401 - paid once, in the background in real use

    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    startup_in_process("3x mcp-server-time", {f"time{i}": time_server(f"time{i}") for i in (1, 2, 3)}, args.runs)
    delayed = {"d0.5": delayed_server(0.5), "d1.0": delayed_server(1.0), "d2.0": delayed_server(2.0)}
    startup_in_process("3x test server with 0.5/1.0/2.0 s start-up delay", delayed, args.runs)
    startup_cli(delayed, "d2.0", args.runs)
    per_call(args.calls)
    return 0


if __name__ == "__main__":
    sys.exit(main())
