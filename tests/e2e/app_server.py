#!/usr/bin/env python3
"""The application tier of the end-to-end test: a threaded HTTP server.

GET /item looks a key up in Redis (over a connection bound to this tier's own
loopback address, so the capture sees app -> redis), then works for DELAY
seconds (the delay the test expects bbprof to attribute to this tier), and
answers. GET /health answers at once without calling anything.

    app_server.py LISTEN_IP PORT REDIS_IP REDIS_PORT DELAY_SECONDS
"""
import socket
import sys
import threading
import time

from e2e_util import Server, TextHandler

listen_ip, port, redis_ip, redis_port, delay = (
    sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
local = threading.local()


def redis_get(key):
    sock = getattr(local, "sock", None)
    if sock is None:
        sock = socket.create_connection((redis_ip, redis_port), timeout=5,
                                        source_address=(listen_ip, 0))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        local.sock = sock
        local.buf = b""
    k = key.encode()
    sock.sendall(b"*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n" % (len(k), k))
    # A bulk string reply: "$N\r\n<N bytes>\r\n" or "$-1\r\n".
    while b"\r\n" not in local.buf:
        local.buf += sock.recv(65536)
    head, _, rest = local.buf.partition(b"\r\n")
    n = int(head[1:])
    need = 0 if n < 0 else n + 2
    while len(rest) < need:
        rest += sock.recv(65536)
    local.buf = rest[need:]
    return rest[:max(n, 0)]


class Handler(TextHandler):
    def do_GET(self):
        if self.path.startswith("/item"):
            value = redis_get("item")
            time.sleep(delay)
            body = b"item " + value + b"\n"
        else:
            body = b"ok\n"
        self.reply(body)


Server((listen_ip, port), Handler).serve_forever()
