"""Senders that hold large webhook bodies open, over raw loopback sockets: the attack on
``POST /webhook`` that ``tests/test_ingest_bounds.py`` and ``bench/held_bodies.py`` run.

Each sender sends its headers and a 24 MiB body (declared by Content-Length, or chunked),
all but its end, and then holds the connection; it never closes it itself. The flood
variants are many cheap connections instead: some that send nothing, some that send a
head with a well-formed signature and hold the whole body back, some that declare a
small body and hold it after 64 KiB.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

MIB = 1024 * 1024
BODY_BYTES = 24 * MIB
PIECE = b"x" * (256 * 1024)
WELL_FORMED_BUT_WRONG = "sha256=" + "0" * 64
MALFORMED = "sha256=not-a-digest"


@dataclass(frozen=True)
class Variant:
    name: str
    signature: str
    chunked: bool
    body_bytes: int = BODY_BYTES
    # Body bytes sent before holding (None: all but the end); no head at all if not head.
    send_bytes: int | None = None
    head: bool = True


# 24 MiB declared or chunked, with a malformed or a well-formed but wrong signature; and a
# body under the cap, held one byte short, that only the deadline ends.
VARIANTS = (
    Variant("declared-malformed", MALFORMED, chunked=False),
    Variant("declared-wrong", WELL_FORMED_BUT_WRONG, chunked=False),
    Variant("chunked-malformed", MALFORMED, chunked=True),
    Variant("chunked-wrong", WELL_FORMED_BUT_WRONG, chunked=True),
    Variant("under-cap-held", WELL_FORMED_BUT_WRONG, chunked=False, body_bytes=4 * MIB),
)
# Connections that hold a place rather than memory: more of each than the requests one
# process serves at once (256).
FLOOD_VARIANTS = (
    Variant("idle", "", chunked=False, body_bytes=0, head=False),
    Variant("head-only", WELL_FORMED_BUT_WRONG, chunked=False, body_bytes=30_000, send_bytes=0),
    Variant(
        "small-held", WELL_FORMED_BUT_WRONG, False, body_bytes=256 * 1024, send_bytes=64 * 1024
    ),
)


@dataclass
class HeldSender:
    """One connection sending ``variant``'s body, all but its end, then holding it."""

    port: int
    variant: Variant
    sock: socket.socket = field(init=False)
    sent: int = 0
    thread: threading.Thread = field(init=False)

    def __post_init__(self) -> None:
        self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        self.thread = threading.Thread(target=self._send, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _send(self) -> None:
        variant = self.variant
        framing = (
            "Transfer-Encoding: chunked\r\n"
            if variant.chunked
            else f"Content-Length: {variant.body_bytes}\r\n"
        )
        head = (
            "POST /webhook HTTP/1.1\r\nHost: perfbot\r\nContent-Type: application/json\r\n"
            f"X-GitHub-Event: workflow_run\r\nX-GitHub-Delivery: held-{id(self)}\r\n"
            f"X-Hub-Signature-256: {variant.signature}\r\n{framing}\r\n"
        )
        try:
            if not variant.head:
                return  # a connection that sends nothing
            self.sock.sendall(head.encode())
            # All but the last byte (declared), or every chunk but the terminating one.
            left = variant.body_bytes - (0 if variant.chunked else 1)
            if variant.send_bytes is not None:
                left = variant.send_bytes
            while left > 0:
                piece = PIECE[: min(left, len(PIECE))]
                if variant.chunked:
                    self.sock.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                else:
                    self.sock.sendall(piece)
                self.sent += len(piece)
                left -= len(piece)
        except OSError:
            return  # the server refused and closed: the sender stops sending

    def wait_closed(self, deadline: float) -> float | None:
        """When the server closed the connection (monotonic), or None if still open at
        ``deadline``. Whatever the server answered before closing is read and dropped."""
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.sock.settimeout(left)
                if not self.sock.recv(65536):
                    return time.monotonic()
        except TimeoutError:
            return None
        except OSError:  # reset: closed with our unread bytes still in its buffer
            return time.monotonic()

    def close(self) -> None:
        self.sock.close()


def rss_bytes(pid: int, field_name: str = "VmRSS") -> int:
    """A field of ``/proc/<pid>/status`` in bytes: VmRSS now, VmHWM the peak so far."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field_name}:"):
            return int(line.split()[1]) * 1024
    raise LookupError(f"{field_name} not in /proc/{pid}/status")


def start_senders(
    port: int, per_variant: int, variants: tuple[Variant, ...] = VARIANTS
) -> list[HeldSender]:
    senders = [HeldSender(port, v) for v in variants for _ in range(per_variant)]
    for sender in senders:
        sender.start()
    return senders
