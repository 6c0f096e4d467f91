"""A TCP proxy that cuts connections mid-flight, so a client must reconnect and retry.

Clients connect to the proxy (the broker advertises the proxy's address), each connection is
forwarded to the broker, and while `chaos` is on a cutter thread resets a random open
connection (both sides, RST) every `min_interval`..`max_interval` seconds. Requests in flight
on a cut connection are lost in either direction: the broker may or may not have handled them,
which is exactly what an idempotent producer's retries must survive.

    with ChaosProxy(listen_port, broker_port) as proxy:
        ...                      # connections pass through untouched
        proxy.chaos = True       # from now on, cut connections
        ...
        proxy.chaos = False
    proxy.cuts                   # how many connections were cut
"""

from __future__ import annotations

import random
import select
import socket
import struct
import threading
import time


class ChaosProxy:
    def __init__(self, listen_port: int, target_port: int, min_interval: float = 0.2,
                 max_interval: float = 0.6, seed: int | None = None, host: str = "127.0.0.1"):
        self.listen_port = listen_port
        self.target = (host, target_port)
        self.min_interval = min_interval
        self.max_interval = max_interval
        self.random = random.Random(seed)
        self.chaos = False
        self.cuts = 0
        self.accepted = 0
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((host, listen_port))
        self._listener.listen(64)
        self._listener.settimeout(0.2)

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> "ChaosProxy":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        for target in (self._accept_loop, self._cut_loop):
            t = threading.Thread(target=target, daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=5)
        self._listener.close()
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            self._close(pair, reset=False)

    # ------------------------------------------------------------------ internals

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            for s in (client, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                s.settimeout(None)
            pair = (client, upstream)
            with self._lock:
                self._pairs.append(pair)
                self.accepted += 1
            t = threading.Thread(target=self._pump, args=(pair,), daemon=True)
            t.start()

    def _pump(self, pair: tuple[socket.socket, socket.socket]) -> None:
        client, upstream = pair
        peers = {client: upstream, upstream: client}
        try:
            while not self._stop.is_set():
                readable, _, _ = select.select([client, upstream], [], [], 0.2)
                for s in readable:
                    data = s.recv(65536)
                    if not data:
                        return
                    peers[s].sendall(data)
        except (OSError, ValueError):
            return
        finally:
            self._close(pair, reset=False)

    def _cut_loop(self) -> None:
        while not self._stop.is_set():
            time.sleep(self.random.uniform(self.min_interval, self.max_interval))
            if not self.chaos:
                continue
            with self._lock:
                if not self._pairs:
                    continue
                pair = self._pairs[self.random.randrange(len(self._pairs))]
            self._close(pair, reset=True)
            self.cuts += 1

    def _close(self, pair: tuple[socket.socket, socket.socket], reset: bool) -> None:
        with self._lock:
            if pair in self._pairs:
                self._pairs.remove(pair)
        for s in pair:
            try:
                if reset:
                    # SO_LINGER 0: close() sends RST, dropping whatever is still buffered.
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                s.close()
            except OSError:
                pass
