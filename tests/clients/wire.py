"""A minimal raw Kafka request writer and response reader, for the tests that must send exact bytes
(versions no client sends, malformed-but-accepted frames, fields the clients hide): the compact
(flexible-version) encoders, the request header v1/v2, a connection that sends one frame and reads
one response, and a Reader over a response. No schema knowledge: each test writes and reads its own
fields, so what goes on the wire is exactly what the test spells out."""

from __future__ import annotations

import socket
import struct
from typing import Callable

API_VERSIONS = 18


# ---------------------------------------------------------------------------- writers

def uvarint(n: int) -> bytes:
    """Unsigned varint (7 bits a byte, low first), as compact lengths and tag counts use."""
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def cstring(s: str | bytes | None) -> bytes:
    """Compact (nullable) string: length + 1 as a uvarint, 0 for null. Bytes are written as they
    are, so a test can send invalid UTF-8."""
    if s is None:
        return b"\x00"
    b = s.encode() if isinstance(s, str) else s
    return uvarint(len(b) + 1) + b


def carray(items: list[bytes] | None) -> bytes:
    """Compact (nullable) array of already encoded items."""
    return b"\x00" if items is None else uvarint(len(items) + 1) + b"".join(items)


def header(api_key: int, version: int, correlation_id: int, client_id: bytes | None,
           tags: bytes | None) -> bytes:
    """Request header v1 (tags None) or v2 (tags: the tagged-field section as raw bytes, b"\\x00"
    for none). The client id is a classic nullable string in both."""
    cid = struct.pack(">h", -1) if client_id is None else struct.pack(">h", len(client_id)) + client_id
    return struct.pack(">hhi", api_key, version, correlation_id) + cid + (b"" if tags is None else tags)


# ---------------------------------------------------------------------------- reader

class Reader:
    """Reads a response body front to back; `pos` is the next byte of `buf`."""

    def __init__(self, buf: bytes):
        self.buf, self.pos = buf, 0

    def raw(self, n: int) -> bytes:
        v = self.buf[self.pos:self.pos + n]
        assert len(v) == n, f"response truncated at {self.pos}"
        self.pos += n
        return v

    def take(self, fmt: str):
        """One big-endian fixed-size value by its struct code: "b", "h", "i", "q", "?"."""
        (v,) = struct.unpack(">" + fmt, self.raw(struct.calcsize(">" + fmt)))
        return v

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            b = self.raw(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7

    def string(self, errors: str = "strict") -> str | None:
        """Compact nullable string."""
        n = self.uvarint() - 1
        return None if n < 0 else self.raw(n).decode("utf-8", errors)

    def array(self, item: Callable[[Reader], object]) -> list | None:
        """Compact nullable array, each element read by `item(reader)`."""
        n = self.uvarint() - 1
        return None if n < 0 else [item(self) for _ in range(n)]

    def tags(self) -> None:
        """Skips a tagged-field section."""
        for _ in range(self.uvarint()):
            self.uvarint()
            self.raw(self.uvarint())


# ---------------------------------------------------------------------------- connection

def address(broker_or_addr) -> tuple[str, int]:
    """A broker fixture (its `bootstrap`), "host:port" or (host, port)."""
    if isinstance(broker_or_addr, tuple):
        return broker_or_addr
    addr = broker_or_addr if isinstance(broker_or_addr, str) else broker_or_addr.bootstrap
    host, port = addr.rsplit(":", 1)
    return host, int(port)


class Connection:
    """One TCP connection: each roundtrip sends one size-prefixed frame and returns the response
    frame (without its size)."""

    def __init__(self, broker_or_addr, timeout: float = 30):
        self.s = socket.create_connection(address(broker_or_addr), timeout=timeout)

    def roundtrip(self, frame: bytes) -> bytes:
        self.s.sendall(struct.pack(">i", len(frame)) + frame)
        (size,) = struct.unpack(">i", self._exact(4))
        return self._exact(size)

    def _exact(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.s.recv(n - len(out))
            assert chunk, "the broker closed the connection instead of answering"
            out += chunk
        return out

    def close(self) -> None:
        self.s.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def call(broker_or_addr, api_key: int, version: int, body: bytes, *, flexible: bool = True,
         response_header_tags: bool | None = None, client_id: bytes = b"test",
         correlation_id: int = 7) -> Reader:
    """One request on a new connection: header v2 when flexible, else v1, then `body` as given.
    Returns a Reader at the response body: the correlation id is checked and, with response header
    v1, its tags skipped. By default the response header is v1 for flexible requests, except
    ApiVersions, whose response header is v0 at every version (so a client can read it whatever
    version it sent)."""
    if response_header_tags is None:
        response_header_tags = flexible and api_key != API_VERSIONS
    frame = header(api_key, version, correlation_id, client_id, b"\x00" if flexible else None) + body
    with Connection(broker_or_addr) as c:
        r = Reader(c.roundtrip(frame))
    assert r.take("i") == correlation_id
    if response_header_tags:
        r.tags()
    return r
