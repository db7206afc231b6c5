"""Bounded command output: keep the head and the tail, count what was dropped in between.

Invariants: memory held is at most about 2 x `limit` bytes however much a command prints;
`render()` returns everything when the total fits in `limit`, else the first `limit // 2` bytes,
the marker `…[N bytes elided]…` and the last `limit - limit // 2` bytes, where N is exact.
"""

from __future__ import annotations


class BoundedOutput:
    """Accumulates a byte stream, keeping only its head and tail."""

    def __init__(self, limit: int) -> None:
        if limit < 2:
            raise ValueError(f"output limit must be at least 2 bytes, got {limit}")
        self._head_limit = limit // 2
        self._tail_limit = limit - self._head_limit
        self._head = bytearray()
        self._tail = bytearray()
        self.total_bytes = 0

    def feed(self, chunk: bytes) -> None:
        self.total_bytes += len(chunk)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self._tail += chunk
            # Trim lazily so that a stream of small chunks is not quadratic.
            if len(self._tail) > 2 * self._tail_limit:
                del self._tail[: len(self._tail) - self._tail_limit]

    @property
    def elided_bytes(self) -> int:
        return self.total_bytes - len(self._head) - min(len(self._tail), self._tail_limit)

    def render(self) -> str:
        tail = bytes(self._tail[-self._tail_limit :]) if self._tail else b""
        elided = self.elided_bytes
        if elided == 0:
            return (bytes(self._head) + tail).decode("utf-8", errors="replace")
        head = bytes(self._head).decode("utf-8", errors="replace")
        return f"{head}…[{elided} bytes elided]…{tail.decode('utf-8', errors='replace')}"
