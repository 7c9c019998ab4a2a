"""Start-up cost of `hermes -z "hi"` against the loopback provider, beside `python -c "import openai"`.

Prints the median wall time and peak RSS of each over N runs (default 10) and the ratios. The targets
(issue 4): hermes -z wall time <= 2x the openai import, peak RSS <= 80 MB. Peak RSS is read per child
with os.wait4, so one run's figure is never mixed with another's.

    .venv/bin/python bench/cli_start.py [--runs 10] [--args "profile list"]

``--args`` times another command line of `hermes` in place of ``-z "hi"`` (the same ratio).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measure(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one run; fails loudly if the command fails."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    out, err = proc.stdout.read(), proc.stderr.read()  # type: ignore[union-attr]
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err.decode(errors='replace').strip()}")
    _ = out
    return wall, usage.ru_maxrss / 1024  # Linux reports KiB


def start_provider(env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "tests.fake_provider", "--port", "0", "--reply", "hello"],
                            env=env, cwd=str(ROOT), stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()  # type: ignore[union-attr]
    if not line.startswith("READY "):
        proc.kill()
        raise SystemExit(f"fake provider did not start: {line!r}")
    return proc, line.split(" ", 1)[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--args", default="-z hi", help="the hermes command line to time")
    args = ap.parse_args()

    home = tempfile.mkdtemp(prefix="hermes-bench-")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "OPENROUTER_", "HERMES_"))}
    env["HERMES_HOME"] = home
    provider, base_url = start_provider(env)
    env.update(OPENAI_BASE_URL=base_url, OPENAI_API_KEY="bench")
    script = Path(sys.executable).with_name("hermes")
    hermes = [str(script)] if script.exists() else [sys.executable, "-m", "hermes_cli.main"]
    import shlex

    label = f"hermes {args.args}"
    cases = {
        label: hermes + shlex.split(args.args),
        'python -c "import openai"': [sys.executable, "-c", "import openai"],
    }
    try:
        for cmd in cases.values():  # warm the page cache and .pyc files once
            measure(cmd, env)
        results: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in cases}
        for _ in range(args.runs):  # interleaved, so drift on the machine hits both alike
            for name, cmd in cases.items():
                wall, rss = measure(cmd, env)
                results[name][0].append(wall)
                results[name][1].append(rss)
    finally:
        provider.terminate()
        provider.wait(timeout=10)
        shutil.rmtree(home, ignore_errors=True)

    print(f"{'command':<28} {'median wall':>12} {'median peak RSS':>16} {'max peak RSS':>13}   ({args.runs} runs)")
    med = {}
    for name, (walls, rsss) in results.items():
        med[name] = (statistics.median(walls), statistics.median(rsss), max(rsss))
        print(f"{name:<28} {med[name][0] * 1000:>10.0f}ms {med[name][1]:>14.1f}MB {med[name][2]:>11.1f}MB")
    (hw, hr, hmax), (bw, br, _) = med[label], med['python -c "import openai"']
    print(f"ratio wall {hw / bw:.2f}x (target <= 2.00x)   hermes peak RSS {hmax:.1f} MB (target <= 80 MB)   "
          f"RSS ratio {hr / br:.2f}x   load {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
