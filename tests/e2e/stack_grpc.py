#!/usr/bin/env python3
"""The gRPC tier of the real-stack test (docs/e2e.md): a grpcio server
(Debian's python3-grpcio) with a pool of worker threads, over HTTP/2 in
cleartext. One unary method; messages are raw bytes (no protobuf schema: the
capture reads the method from the HTTP/2 headers, never the payload).

    /bbprof.Catalog/Quote   request: a key; Redis GET key on this worker
                            thread's connection; reply: the value

The caller sends the request id as gRPC metadata `x-request-id` (an HTTP/2
header, which `bbprof capture --truth-header X-Request-Id` reads). Redis
connections are bound to this tier's own loopback address.

    stack_grpc.py LISTEN_IP PORT REDIS_IP REDIS_PORT
"""
import concurrent.futures
import sys

import grpc

from e2e_util import Redis

listen_ip, port, redis_ip, redis_port = (sys.argv[1], int(sys.argv[2]), sys.argv[3],
                                         int(sys.argv[4]))
WORKERS = 16
redis = Redis(listen_ip, redis_ip, redis_port).command


def quote(request, context):
    return b"quote " + redis("GET", request)


server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS),
                     options=[("grpc.so_reuseport", 0)])
server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
    "bbprof.Catalog", {"Quote": grpc.unary_unary_rpc_method_handler(quote)}),))
server.add_insecure_port("%s:%d" % (listen_ip, port))
server.start()
server.wait_for_termination()
