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
    GET /quote/K    gRPC /bbprof.Catalog/Quote K to the catalog tier
                    (stack_grpc.py), X-Request-Id as metadata
    GET /grpc-reconnect   the next gRPC call opens a new connection

    stack_app.py LISTEN_IP PORT REDIS_IP REDIS_PORT NODE_IP NODE_PORT [GRPC_IP GRPC_PORT]
"""
import concurrent.futures
import http.client
import queue
import sys
import threading
import time

from e2e_util import Redis, Server, TextHandler

listen_ip, port, redis_ip, redis_port, node_ip, node_port = (
    sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5],
    int(sys.argv[6]))
grpc_ip, grpc_port = (sys.argv[7], int(sys.argv[8])) if len(sys.argv) > 8 else (None, 0)
SLOW = 0.040
PARTS = 3
redis = Redis(listen_ip, redis_ip, redis_port).command
grpc_lock = threading.Lock()
grpc_channel = grpc_quote = None
node_pool = queue.LifoQueue()
fanout = concurrent.futures.ThreadPoolExecutor(max_workers=64)


def quote(key, rid):
    """A gRPC call to the catalog tier on this process's one channel (many
    calls in flight on it at once, each its own HTTP/2 stream), the request
    id as metadata. grpcio is imported on first use: only the tier the Go
    tier calls needs it. grpcio cannot bind a channel to a source address,
    so its connection comes from the kernel's choice, 127.0.0.1; the test's
    name map gives that address this tier's name (docs/e2e.md)."""
    global grpc_channel, grpc_quote
    with grpc_lock:
        if grpc_quote is None:
            import grpc
            # A pool of its own: a channel made after grpc_reconnect()
            # opens a new connection instead of sharing the old one's.
            grpc_channel = grpc.insecure_channel(
                "%s:%d" % (grpc_ip, grpc_port),
                options=[("grpc.use_local_subchannel_pool", 1)])
            grpc_quote = grpc_channel.unary_unary("/bbprof.Catalog/Quote")
        call = grpc_quote
    return call(key.encode(), metadata=(("x-request-id", rid),), timeout=10)


def grpc_reconnect():
    """Closes the gRPC channel; the next call opens a new connection. The
    test calls it (GET /grpc-reconnect) before each capture, which must see
    the connection start: HPACK, HTTP/2's header compression, keeps state
    per connection, and a capture that begins mid-connection cannot read
    the method or the request id (docs/decoders.md)."""
    global grpc_channel, grpc_quote
    with grpc_lock:
        channel, grpc_channel, grpc_quote = grpc_channel, None, None
    if channel is not None:
        channel.close()


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
        elif route == "quote" and grpc_ip:
            body = quote(key, rid)
        elif route == "grpc-reconnect":
            grpc_reconnect()
            body = b"ok"
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
