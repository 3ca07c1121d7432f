#!/usr/bin/env python3
"""The thread-per-request application tier of the real-stack test.

A ThreadingHTTPServer (one thread per connection; nginx keeps a pool of
keep-alive connections to it, so one thread serves many requests). Every
outgoing HTTP call forwards the request's X-Request-Id (the capture's ground
truth); Redis calls carry none (RESP has no headers). Outgoing connections
are bound to this tier's own loopback address, so the capture tells the tiers
apart, and are pooled: reused across requests.

    GET /item/K     Redis GET K, then GET node /price/K
    GET /slow/K     the same, working 40 ms in between (the delay to find)
    GET /stock/K    Redis GET K
    GET /audit/K    Redis INCR audit:K
    GET /compose/K  three concurrent POST node /part/K (parallel fan-out; the
                    node answers them all when the last arrives: fan-in)

    stack_app.py LISTEN_IP PORT REDIS_IP REDIS_PORT NODE_IP NODE_PORT
"""
import concurrent.futures
import http.client
import queue
import socket
import sys
import threading
import time

from e2e_util import Server, TextHandler

listen_ip, port, redis_ip, redis_port, node_ip, node_port = (
    sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5],
    int(sys.argv[6]))
SLOW = 0.040
PARTS = 3
local = threading.local()
node_pool = queue.LifoQueue()
fanout = concurrent.futures.ThreadPoolExecutor(max_workers=64)


def redis(*args):
    """One RESP command on this thread's connection; returns the reply line
    and bulk body (enough for GET and INCR)."""
    sock = getattr(local, "sock", None)
    if sock is None:
        sock = socket.create_connection((redis_ip, redis_port), timeout=10,
                                        source_address=(listen_ip, 0))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        local.sock, local.buf = sock, b""
    parts = [a.encode() for a in args]
    sock.sendall(b"*%d\r\n" % len(parts) +
                 b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts))
    while b"\r\n" not in local.buf:
        local.buf += sock.recv(65536)
    head, _, rest = local.buf.partition(b"\r\n")
    need = 0
    if head.startswith(b"$") and int(head[1:]) >= 0:
        need = int(head[1:]) + 2
    while len(rest) < need:
        rest += sock.recv(65536)
    local.buf = rest[need:]
    return rest[:max(need - 2, 0)]


def node_call(method, path, rid):
    """An HTTP call to the node tier over a pooled keep-alive connection (a
    pooled connection the server has closed meanwhile is replaced once, as
    client libraries do)."""
    for attempt in range(2):
        fresh = False
        try:
            conn = node_pool.get_nowait()
        except queue.Empty:
            conn = http.client.HTTPConnection(node_ip, node_port, timeout=10,
                                              source_address=(listen_ip, 0))
            fresh = True
        try:
            conn.request(method, path,
                         headers={"X-Request-Id": rid, "Content-Length": "0"})
            r = conn.getresponse()
            body = r.read()
        except (OSError, http.client.HTTPException):
            conn.close()
            if fresh or attempt == 1:
                raise
            continue
        node_pool.put(conn)
        return body


class Handler(TextHandler):
    def do_GET(self):
        rid = self.headers.get("X-Request-Id", "-")
        parts = self.path.split("/")
        route, key = (parts[1], parts[2]) if len(parts) > 2 else (parts[1], "k")
        if route in ("item", "slow"):
            value = redis("GET", key)
            if route == "slow":
                time.sleep(SLOW)
            body = value + b" " + node_call("GET", "/price/" + key, rid)
        elif route == "stock":
            body = redis("GET", key)
        elif route == "audit":
            body = redis("INCR", "audit:" + key)
        elif route == "compose":
            futures = [fanout.submit(node_call, "POST",
                                     "/part/%s?i=%d&n=%d" % (key, i, PARTS), rid)
                       for i in range(PARTS)]
            body = b",".join(f.result() for f in futures)
        else:
            self.send_error(404)
            return
        self.reply(body)


Server((listen_ip, port), Handler).serve_forever()
