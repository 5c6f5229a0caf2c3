"""A local OpenAI-compatible server over a GGUF model (llama-cpp-python's), started and stopped by the
benchmarks that ask an LLM (not a benchmark itself): ``bench.llm_victim`` and ``bench.llm_detector``.

It listens on 127.0.0.1 only. llama-cpp-python built for AVX2 alone on a CPU whose AMX llama.cpp
mishandles (the README says how).
"""
from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ALIAS = "qwen2.5-coder-0.5b-instruct"


def check_free(port: int) -> None:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            raise SystemExit(f"port {port} is taken: pass --port") from None


def server_command(gguf: Path, port: int, threads: int) -> list[str]:
    return [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", ALIAS,
            "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", str(threads),
            "--n_threads_batch", str(threads), "--seed", "0"]


def wait_until_up(endpoint: str, process: subprocess.Popen, seconds: float = 300) -> float:
    started = time.time()
    while time.time() - started < seconds:
        if process.poll() is not None:
            raise SystemExit(f"the server exited with code {process.returncode}")
        try:
            with urllib.request.urlopen(endpoint + "/models", timeout=5) as response:
                if ALIAS in response.read().decode():
                    return time.time() - started
        except OSError:
            time.sleep(1)
    raise SystemExit(f"the server did not answer within {seconds:.0f} s")


@contextlib.contextmanager
def serving(gguf: Path, port: int, threads: int, log: Path) -> Iterator[tuple[str, float]]:
    """(endpoint, seconds to start) of a server over ``gguf`` while the block runs; stopped after it,
    whatever happens. Its output goes to ``log``."""
    check_free(port)
    endpoint = f"http://127.0.0.1:{port}/v1"
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        server = subprocess.Popen(server_command(gguf, port, threads), stdout=out, stderr=subprocess.STDOUT)
        try:
            yield endpoint, wait_until_up(endpoint, server)
        finally:
            server.terminate()
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()
