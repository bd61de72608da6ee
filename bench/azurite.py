"""Azurite, Microsoft's Azure Storage emulator, run on loopback for the tests and the benchmark
of tables in Azure storage: its Blob service as a child process on a free port, its state in a
folder, so a stop and a start keep the containers. ``scripts/setup.sh --test`` installs it from
the npm registry."""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

ACCOUNT = "devstoreaccount1"
KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
       "KBHBeksoGMGw==")  # the emulator's documented development key


def executable() -> str:
    """The ``azurite-blob`` program: where ``scripts/setup.sh --test`` installs it, else on
    PATH (:class:`RuntimeError` naming the fix when it is nowhere: the tests must not pass
    without the server)."""
    folder = Path(os.environ.get("EVONB_AZURITE_DIR", Path.home() / ".cache/evonb/azurite"))
    local = folder / "node_modules" / ".bin" / "azurite-blob"
    if local.exists():
        return str(local)
    found = shutil.which("azurite-blob")
    if found:
        return found
    raise RuntimeError(f"Azurite is not installed (looked in {local} and on PATH): run "
                       "`bash scripts/setup.sh --test`")


def installed() -> bool:
    """Whether :func:`executable` finds the emulator."""
    try:
        executable()
    except RuntimeError:
        return False
    return True


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Azurite:
    """The emulator's Blob service on loopback."""

    def __init__(self, state: Path) -> None:
        self.state = state
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}/{ACCOUNT}"
        self._proc: subprocess.Popen[bytes] | None = None

    def connection_string(self, key: str = KEY) -> str:
        return (f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={key};"
                f"BlobEndpoint={self.endpoint};")

    def start(self) -> None:
        atexit.register(self.stop)  # never left running by a process that ends without stop()
        self._proc = subprocess.Popen(
            [executable(), "--blobHost", "127.0.0.1", "--blobPort", str(self.port),
             "--location", str(self.state), "--silent", "--skipApiVersionCheck"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError("Azurite exited: "
                                   + (self._proc.stderr.read() if self._proc.stderr else b"")
                                   .decode(errors="replace"))
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"Azurite did not listen on port {self.port} within 60 s")

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None


__all__ = ["ACCOUNT", "KEY", "Azurite", "executable", "installed"]
