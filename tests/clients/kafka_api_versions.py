"""ApiVersions v3 over a raw socket: the API keys and version ranges a broker advertises.

Used by tests/compat/generate (COMPATIBILITY.md), test_compatibility.py and test_cli_tools.py.

    python3 tests/clients/kafka_api_versions.py 127.0.0.1:9092      # one `key min max` line per API
"""

from __future__ import annotations

import socket
import struct
import sys

API_VERSIONS_KEY = 18


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise ValueError("varint too long")


def _skip_tagged_fields(buf: bytes, pos: int) -> int:
    count, pos = _uvarint(buf, pos)
    for _ in range(count):
        _tag, pos = _uvarint(buf, pos)
        size, pos = _uvarint(buf, pos)
        pos += size
    return pos


def _compact_string(s: str) -> bytes:
    b = s.encode()
    return bytes([len(b) + 1]) + b  # short strings only: one-byte uvarint


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise OSError("connection closed by the broker")
        buf += chunk
    return bytes(buf)


def encode_request(correlation_id: int = 1, client_id: str = "sluice-compat") -> bytes:
    """An ApiVersions v3 request frame (request header v2, flexible body)."""
    cid = client_id.encode()
    header = struct.pack(">hhih", API_VERSIONS_KEY, 3, correlation_id, len(cid)) + cid + b"\x00"
    body = _compact_string("sluice-compat") + _compact_string("1") + b"\x00"
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def decode_response(payload: bytes, correlation_id: int = 1) -> dict[int, tuple[int, int]]:
    """Parse an ApiVersions v3 response (header v0, as for every ApiVersions version):
    {api_key: (min_version, max_version)}. Raises ValueError on an error code or bad framing."""
    corr, error = struct.unpack_from(">ih", payload, 0)
    if corr != correlation_id:
        raise ValueError(f"correlation id {corr}, expected {correlation_id}")
    if error != 0:
        raise ValueError(f"ApiVersions error code {error}")
    n, pos = _uvarint(payload, 6)
    apis: dict[int, tuple[int, int]] = {}
    for _ in range(n - 1):
        key, lo, hi = struct.unpack_from(">hhh", payload, pos)
        pos = _skip_tagged_fields(payload, pos + 6)
        apis[key] = (lo, hi)
    struct.unpack_from(">i", payload, pos)  # throttle_time_ms: present, or the frame is short
    return apis


def query(bootstrap: str, timeout: float = 10.0) -> dict[int, tuple[int, int]]:
    """Ask the broker at host:port for its ApiVersions (v3)."""
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(encode_request())
        (size,) = struct.unpack(">i", _recv_exact(s, 4))
        return decode_response(_recv_exact(s, size))


def main() -> int:
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} HOST:PORT", file=sys.stderr)
        return 2
    for key, (lo, hi) in sorted(query(sys.argv[1]).items()):
        print(key, lo, hi)
    return 0


if __name__ == "__main__":
    sys.exit(main())
