"""The suite's own guard: an exception in a background thread fails the test that started it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

INNER = '''
import threading

def test_worker_dies():
    worker = threading.Thread(target=lambda: 1 / 0, name="doomed-worker")
    worker.start()
    worker.join()

def test_healthy():
    worker = threading.Thread(target=lambda: None)
    worker.start()
    worker.join()
'''


def test_a_thread_exception_fails_the_test_that_caused_it(tmp_path):
    (tmp_path / "test_inner.py").write_text(INNER)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
                           "test_inner.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "1 failed, 1 passed" in out
    assert "FAILED test_inner.py::test_worker_dies" in out
    assert "doomed-worker" in out and "ZeroDivisionError" in out
