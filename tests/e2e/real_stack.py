#!/usr/bin/env python3
"""Request accuracy on a real stack, with ground truth.

Real Debian servers on a random /24 of 127.0.0.0/8 (127.N.M.0/24 below),
started here and stopped by their own process ids:

    load generator .1 --HTTP keep-alive--> nginx .2:18080
        nginx --(upstream pool, keep-alive, round robin)--> py1 .3 / py2 .4 :18081
        nginx --/fanout/ (keep-alive)--> node .5:18082
        nginx --/shop/ --> go .8:18083     nginx --/order/ --> java .9:18084
    py1, py2 (stack_app.py: Python, thread per connection)
        --> redis .6:6379 (raw RESP)     --> node /price, /part (pooled)
        py1 --> grpc .10:50051 (grpcio, one HTTP/2 channel)
    node (stack_node.js: Node.js event loop, plain http/net modules)
        --> memcached .7:11211 (one connection, replies in order)
        --> py1 /stock (fan-out with memcached), py1 /audit (the fan-in's call)
    go (stack_go.go: goroutines, one keep-alive transport)
        --> java, py1 /quote, node /price
    java (StackJava.java: HttpServer on a fixed pool of 16 threads, pooled
        sockets) --> redis, node /price, go /ship
    grpc (stack_grpc.py: grpcio on a pool of 16 threads) --> redis

Routes (the load mixes them):
    /item/K     nginx -> py(LB) -> redis, node(memcached)               sync
    /slow/K     the same, with 40 ms of work in py                         sync
    /fanout/K   nginx -> node -> {memcached, py1 -> redis} in parallel      sync
    /compose/K  nginx -> py(LB) -> 3 parallel POST node /part; node holds
                them until the last arrives, then calls py1 /audit -> redis  async
    /shop/K     nginx -> go -> java /cart; java /product six in a row; then
                {java /recommend -> node, py1 /quote -> grpc} in parallel   sync
    /order/K    nginx -> java -> redis, then go /ship ->
                {py1 /quote -> grpc, node /price} in parallel               sync

PostgreSQL is left out: the standard library has no client for it, and
speaking its wire protocol, or a psql process per query, would test our
client more than the stack; Redis and memcached give the store tier with
two real protocols bbprof decodes.

The load generator sends `X-Request-Id: <unique>` on every request; the
apps forward it on every outgoing HTTP call (not to Redis/memcached, whose
protocols have no headers: those calls have no pathid, and eval leaves them
unscored), and py1 as gRPC metadata. `bbprof capture -i lo --truth-header
X-Request-Id` records it as the pathid. The capture is then skewed as if
taken on several hosts (`bbprof skewer`: per-host offsets from 50 us to
2 ms, and drift), and that copy quantised to 1 ms; each is nested with
default flags and scored with `bbprof eval` (request accuracy).

    real_stack.py BBPROF --ci [WORKDIR]      short test: one light load level
    real_stack.py BBPROF --bench [WORKDIR]   all load levels, a table
    real_stack.py BBPROF --rescore WORKDIR   the table again from the captures a
                                             --bench run kept (no servers, no root)
    real_stack.py BBPROF --long SECONDS WORKDIR [MIX [SHARE]]
                                             one long capture (MIX, default all, at
                                             SHARE of saturation, default 0.6, for
                                             SECONDS) kept as
                                             WORKDIR/long.trace and, skewed as
                                             above, long.skewed.trace: what stream
                                             segments cost on a real capture longer
                                             than one (bench/stream_long_accuracy.sh)

With BBPROF_BASE=PATH in the environment, the table gets a column for that
binary's default nest too (say, main's build), scored in the same run.

Exit status: 0 pass, 1 fail, 77 skipped (not root, or a server or compiler
missing: scripts/install-deps.sh installs them).
"""
import http.client
import json
import math
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

from e2e_util import (NGINX_PREAMBLE, fail, find, finish_capture, skip, start_capture,
                      stop, wait_port)

HERE = os.path.dirname(os.path.abspath(__file__))
_rng = random.SystemRandom()
NET = "127.%d.%d" % (_rng.randint(20, 250), _rng.randint(0, 255))
HOSTS = {"client": ".1", "nginx": ".2", "py1": ".3", "py2": ".4", "node": ".5",
         "redis": ".6", "memcached": ".7", "go": ".8", "java": ".9", "grpc": ".10"}
IP = {k: NET + v for k, v in HOSTS.items()}
NGINX_PORT, PY_PORT, NODE_PORT, REDIS_PORT, MC_PORT = 18080, 18081, 18082, 6379, 11211
GO_PORT, JAVA_PORT, GRPC_PORT = 18083, 18084, 50051
# grpcio cannot bind a client channel to a source address, so py1's gRPC
# connection comes from the kernel's choice for loopback, 127.0.0.1; no
# other process of the stack leaves its address unbound, and the capture's
# filter keeps only traffic to or from this run's /24, so that address is
# py1's here (stack_app.py, quote).
UNBOUND = {"127.0.0.1": "py1"}
# Per-host clock offsets (seconds) and drifts (ppm) for the skewed runs, as
# if each host had captured its own traffic (client = reference clock).
SKEW = {"nginx": (0.00005, 0), "py1": (-0.0007, 15), "py2": (0.0012, -20),
        "node": (-0.002, 30), "redis": (0.0004, 0), "memcached": (-0.0015, -10),
        "go": (0.0009, -25), "java": (-0.0012, 20), "grpc": (0.0006, 10)}
# Offsets of 50-200 us, no drift: NTP on a quiet LAN. Small enough that the
# slow route's calls, in flight at nginx throughout, enclose what a skewed
# clock pushes out of its true parent, so no call seems to miss (docs/
# nesting.md, "Probe windows").
SKEW_SMALL = {"nginx": (0.00005, 0), "py1": (-0.00012, 0), "py2": (0.0002, 0),
              "node": (0.00015, 0), "redis": (-0.0001, 0), "memcached": (0.00008, 0),
              "go": (-0.00018, 0), "java": (0.0001, 0), "grpc": (-0.00006, 0)}
# Span stores and logs keep milliseconds: the bench also scores the skewed
# copy with every timestamp cut to this step (quantize).
QUANTUM = 0.001
MIXES = {
    "sync": [("item", 0.45), ("slow", 0.2), ("fanout", 0.35)],
    "async": [("compose", 1.0)],
    "poly": [("shop", 0.6), ("order", 0.4)],
    "all": [("item", 0.2), ("slow", 0.1), ("fanout", 0.15), ("compose", 0.2),
            ("shop", 0.2), ("order", 0.15)],
}
# The CI floors, from default nest on the CI level (about 140 requests, so
# one request is 0.7 point): as captured 88.8-97.2%, skewed 81.3-97.2%,
# skewed at 1 ms 79.1-95.0% over four runs on a loaded 2-core machine,
# where the Go, Java and gRPC routes (/shop, /order) hold most of the
# requests nest gets wrong. Timing moves them, so each floor sits below the
# lowest run, yet far above what nest without skew handling gets on the
# skewed capture (0-13.5% in the bench). The target is 97%.
CI_FLOOR = {"plain": 0.80, "skewed": 0.75, "skewed+1ms": 0.70}
NGINX_CONF = NGINX_PREAMBLE + """
  keepalive_requests 100000;
  upstream pyapps {{
    server {py1}:{py_port};
    server {py2}:{py_port};
    keepalive 32;
  }}
  upstream nodeapp {{
    server {node}:{node_port};
    keepalive 32;
  }}
  upstream goapp {{
    server {go}:{go_port};
    keepalive 32;
  }}
  upstream javaapp {{
    server {java}:{java_port};
    keepalive 32;
  }}
  server {{
    listen {nginx}:{nginx_port};
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_bind {nginx};
    location /fanout/ {{ proxy_pass http://nodeapp; }}
    location /shop/ {{ proxy_pass http://goapp; }}
    location /order/ {{ proxy_pass http://javaapp; }}
    location / {{ proxy_pass http://pyapps; }}
  }}
}}
"""


class Stack:
    """The servers, started in dependency order, stopped in reverse."""

    def __init__(self, work):
        self.work = work
        self.procs = []

    def spawn(self, name, argv, ip, port):
        log = open(os.path.join(self.work, name + ".log"), "w")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        self.procs.append((name, p))
        wait_port(ip, port, p, name)
        return p

    def build(self):
        """Compiles the Go and Java tiers into WORK/build, both at once:
        `go build` of one standard-library file with no network (GOPROXY=off,
        its caches in the work folder), and javac of one file against the
        JDK alone."""
        out = os.path.join(self.work, "build")
        os.makedirs(out, exist_ok=True)
        env = dict(os.environ, GOFLAGS="-mod=mod", GOPROXY="off", GOTOOLCHAIN="local",
                   GOCACHE=os.path.join(out, "go-cache"),
                   GOPATH=os.path.join(out, "gopath"))
        jobs = [("go build", subprocess.Popen(
                    [find("go"), "build", "-o", os.path.join(out, "stack_go"),
                     os.path.join(HERE, "stack_go.go")], env=env,
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)),
                ("javac", subprocess.Popen(
                    [find("javac"), "-d", out, os.path.join(HERE, "StackJava.java")],
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))]
        for what, p in jobs:
            text, _ = p.communicate()
            if p.returncode != 0:
                fail("%s exited %d: %s" % (what, p.returncode, text))
        return out

    def start(self):
        build = self.build()
        self.spawn("redis", [find("redis-server"), "--bind", IP["redis"], "--port",
                             str(REDIS_PORT), "--save", "", "--appendonly", "no",
                             "--protected-mode", "no", "--dir", self.work],
                   IP["redis"], REDIS_PORT)
        self.spawn("memcached", [find("memcached"), "-l", IP["memcached"], "-p",
                                 str(MC_PORT), "-U", "0", "-u", "nobody", "-t", "2"],
                   IP["memcached"], MC_PORT)
        with socket.create_connection((IP["redis"], REDIS_PORT)) as s:
            for k in range(10):
                s.sendall(b"*3\r\n$3\r\nSET\r\n$2\r\nk%d\r\n$5\r\nhello\r\n" % k)
                s.recv(64)
        with socket.create_connection((IP["memcached"], MC_PORT)) as s:
            for k in range(10):
                s.sendall(b"set k%d 0 0 5\r\nworld\r\n" % k)
                s.recv(64)
        self.spawn("node", [find("node"), os.path.join(HERE, "stack_node.js"), IP["node"],
                            str(NODE_PORT), IP["memcached"], str(MC_PORT), IP["py1"],
                            str(PY_PORT)],
                   IP["node"], NODE_PORT)
        python = grpc_python()
        self.spawn("grpc", [python, os.path.join(HERE, "stack_grpc.py"), IP["grpc"],
                            str(GRPC_PORT), IP["redis"], str(REDIS_PORT)],
                   IP["grpc"], GRPC_PORT)
        for py in ("py1", "py2"):
            # py1 is the gRPC tier's one client (UNBOUND).
            grpc_args = [IP["grpc"], str(GRPC_PORT)] if py == "py1" else []
            self.spawn(py, [python, os.path.join(HERE, "stack_app.py"), IP[py],
                            str(PY_PORT), IP["redis"], str(REDIS_PORT), IP["node"],
                            str(NODE_PORT)] + grpc_args,
                       IP[py], PY_PORT)
        # A small heap and the serial collector: the machine is shared.
        self.spawn("java", [find("java"), "-XX:+UseSerialGC", "-Xmx256m",
                            "-Dsun.net.httpserver.nodelay=true", "-cp", build, "StackJava",
                            IP["java"], str(JAVA_PORT), IP["redis"], str(REDIS_PORT),
                            IP["node"], str(NODE_PORT), IP["go"], str(GO_PORT)],
                   IP["java"], JAVA_PORT)
        self.spawn("go", [os.path.join(build, "stack_go"), IP["go"], str(GO_PORT),
                          "%s:%d" % (IP["java"], JAVA_PORT), "%s:%d" % (IP["py1"], PY_PORT),
                          "%s:%d" % (IP["node"], NODE_PORT)],
                   IP["go"], GO_PORT)
        conf = os.path.join(self.work, "nginx.conf")
        with open(conf, "w") as f:
            f.write(NGINX_CONF.format(work=self.work, nginx=IP["nginx"],
                                      nginx_port=NGINX_PORT, py1=IP["py1"], py2=IP["py2"],
                                      py_port=PY_PORT, node=IP["node"],
                                      node_port=NODE_PORT, go=IP["go"], go_port=GO_PORT,
                                      java=IP["java"], java_port=JAVA_PORT))
        self.spawn("nginx", [find("nginx"), "-c", conf, "-p", self.work], IP["nginx"],
                   NGINX_PORT)

    def stop(self):
        for _, p in reversed(self.procs):
            stop(p)
        self.procs = []

    def fresh_grpc(self):
        """Before a capture: py1's next gRPC call opens a new connection,
        whose start the capture sees (stack_app.py, grpc_reconnect)."""
        conn = http.client.HTTPConnection(IP["py1"], PY_PORT, timeout=10,
                                          source_address=(IP["client"], 0))
        try:
            conn.request("GET", "/grpc-reconnect")
            r = conn.getresponse()
            r.read()
            if r.status != 200:
                fail("py1 /grpc-reconnect -> HTTP %d" % r.status)
        finally:
            conn.close()


_grpc_python = []


def grpc_python():
    """A Python that imports grpc (Debian's python3-grpcio installs it for
    /usr/bin/python3, which need not be the one running this), or None."""
    if not _grpc_python:
        found = None
        for p in dict.fromkeys([sys.executable, "/usr/bin/python3"]):
            if os.access(p, os.X_OK) and subprocess.run(
                    [p, "-c", "import grpc"], capture_output=True).returncode == 0:
                found = p
                break
        _grpc_python.append(found)
    return _grpc_python[0]


def client_thread(tag, rate, mix, stop_at, results, errors):
    """Keep-alive requests at `rate` per second (exponential gaps; if a
    response comes late the next request goes at once), routes drawn from
    `mix`, each with a unique X-Request-Id."""
    rng = random.Random(tag)
    routes = [r for r, _ in mix]
    weights = [w for _, w in mix]
    conn = None
    i = 0
    next_at = time.monotonic() + rng.expovariate(rate) if rate else 0
    while time.monotonic() < stop_at:
        if rate:
            delay = next_at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            next_at = max(next_at, time.monotonic() - 1.0 / rate) + rng.expovariate(rate)
        route = rng.choices(routes, weights)[0]
        rid = "%s.%d" % (tag, i)
        i += 1
        try:
            if conn is None:
                conn = http.client.HTTPConnection(IP["nginx"], NGINX_PORT, timeout=15,
                                                  source_address=(IP["client"], 0))
            conn.request("GET", "/%s/k%d" % (route, rng.randrange(10)),
                         headers={"X-Request-Id": rid})
            r = conn.getresponse()
            r.read()
            if r.status != 200:
                errors.append("%s -> HTTP %d" % (route, r.status))
            results[route] = results.get(route, 0) + 1
        except (OSError, http.client.HTTPException) as e:
            errors.append("%s: %s" % (route, e))
            conn = None
    if conn is not None:
        conn.close()


def run_load(name, rate, seconds, mix, threads):
    """Returns (requests by route, errors, requests per second achieved)."""
    results = [dict() for _ in range(threads)]
    errors = []
    stop_at = time.monotonic() + seconds
    start = time.monotonic()
    ts = [threading.Thread(target=client_thread,
                           args=("%s.%d" % (name, t), rate / threads if rate else 0,
                                 MIXES[mix], stop_at, results[t], errors))
          for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    counts = {}
    for r in results:
        for k, v in r.items():
            counts[k] = counts.get(k, 0) + v
    return counts, errors, sum(counts.values()) / (time.monotonic() - start)


def capture(bbprof, work, name, load):
    """Runs `load()` under a live capture of the /24; returns the trace."""
    names = os.path.join(work, "names.map")
    with open(names, "w") as f:
        for k, ip in IP.items():
            f.write("%s %s\n" % (ip, k))
        for ip, k in UNBOUND.items():
            f.write("%s %s\n" % (ip, k))
    trace = os.path.join(work, name + ".trace")
    err = os.path.join(work, name + ".capture.err")
    p = start_capture([bbprof, "capture", "-i", "lo", "--names", names, "-o", trace,
                       "--truth-header", "X-Request-Id", "net", NET + ".0/24"], err)
    try:
        out = load()
        time.sleep(0.3)  # the last packets reach the capture
    except BaseException:
        stop(p)
        raise
    log = finish_capture(p, err)
    if "kernel_drops 0" not in log:
        print("note: %s: the kernel dropped packets" % name)
    return trace, out


def skew(bbprof, trace, offsets=None, name="skewed"):
    offsets = SKEW if offsets is None else offsets
    out = trace.replace(".trace", ".%s.trace" % name)
    argv = [bbprof, "skewer", trace, "-q", "-o", out]
    present = set()
    with open(trace) as f:
        for line in f:
            if not line.startswith("#"):
                present.update(line.split("\t")[2:4])
    for node, (offset, drift) in offsets.items():
        if node not in present:
            continue
        argv += ["--offset", "%s=%.6f" % (node, offset)]
        if drift:
            argv += ["--drift", "%s=%d" % (node, drift)]
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        fail("bbprof skewer exited %d: %s" % (r.returncode, r.stderr))
    return out


def quantize(bbprof, trace, step=QUANTUM):
    """A copy of `trace` with every timestamp cut down to a multiple of
    `step` seconds, as a span store that keeps milliseconds records them:
    `bbprof skewer --quantize` where this build has it, else rewritten here
    (cutting keeps the lines in order; equal stamps keep the file's order,
    which then says nothing)."""
    out = trace.replace(".trace", ".%gms.trace" % (step * 1e3))
    help_text = subprocess.run([bbprof, "skewer", "--help"], capture_output=True,
                               text=True).stdout
    if "--quantize" in help_text:
        r = subprocess.run([bbprof, "skewer", trace, "-q", "-o", out, "--quantize",
                            "%g" % step], capture_output=True, text=True)
        if r.returncode != 0:
            fail("bbprof skewer --quantize exited %d: %s" % (r.returncode, r.stderr))
        return out
    digits = round(-math.log10(step))
    if not 0 <= digits <= 9 or abs(10 ** -digits - step) > 1e-12:
        fail("quantize: step %g is not a power of ten" % step)
    with open(trace) as f, open(out + ".part", "w") as g:
        for line in f:
            if not line.startswith("#") and line.strip():
                stamp, sep, rest = line.partition("\t")
                whole, _, frac = stamp.partition(".")
                frac = (frac + "0" * 9)[:digits]
                line = (whole + ("." + frac if digits else "")) + sep + rest
            g.write(line)
    os.replace(out + ".part", out)
    return out


def scored_copies(bbprof, trace):
    """The copies of a capture every level is scored on, as (kind, trace):
    as captured; each host on its own clock (SKEW); that copy quantised to
    QUANTUM; and small offsets (SKEW_SMALL)."""
    skewed = skew(bbprof, trace)
    return [("no", trace), ("yes", skewed), ("yes+1ms", quantize(bbprof, skewed)),
            ("small", skew(bbprof, trace, SKEW_SMALL, "small"))]


def request_accuracy(bbprof, trace, flags, tag=None):
    """nest with `flags`, then eval against the trace's pathids."""
    tag = tag or "-".join(f.strip("-") for f in flags) or "default"
    result = trace + "." + tag + ".json"
    evaljs = trace + "." + tag + ".eval.json"
    requests = trace + "." + tag + ".otlp.json"
    r = subprocess.run([bbprof, "nest", trace, "-q", "--json", result,
                        "--requests", requests] + flags,
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail("bbprof nest %s exited %d: %s" % (flags, r.returncode, r.stderr))
    # eval scores the parent choices of the requests nest exported (the
    # result records the file).
    r = subprocess.run([bbprof, "eval", result, "--truth", trace, "-q", "--json", evaljs],
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail("bbprof eval exited %d: %s" % (r.returncode, r.stderr))
    with open(evaljs) as f:
        doc = json.load(f)
    return doc["request_accuracy"], doc["requests"]["true"]


def baselines(bbprof):
    """nest configurations to compare, as (name, binary, flags): default; the
    timeline passes off (skew handled as by default); the paper's algorithm
    as published (no timeline passes, no skew window); a hand-set window just
    above the widest offset gap (3.2 ms: what a user who knew the skew would
    pass); first-come-first-served if this nest has it; and the default of
    the binary BBPROF_BASE names, if set."""
    configs = [("default", []),
               ("--timeline-passes 0", ["--timeline-passes", "0"]),
               ("paper (--timeline-passes 0 --skew-window 0)",
                ["--timeline-passes", "0", "--skew-window", "0"]),
               ("hand-set --skew-window 0.004", ["--skew-window", "0.004"])]
    help_text = subprocess.run([bbprof, "nest", "--help"], capture_output=True,
                               text=True).stdout
    if "--assign" in help_text and "fcfs" in help_text:
        configs.append(("fcfs (--assign fcfs)", ["--assign", "fcfs"]))
    elif "--fcfs" in help_text:
        configs.append(("fcfs", ["--fcfs"]))
    configs = [(name, bbprof, flags) for name, flags in configs]
    base = os.environ.get("BBPROF_BASE")
    if base:
        configs.append(("%s default" % os.path.basename(base), os.path.abspath(base), []))
    return configs


def score_row(configs, mix, share, rps, trace, kind):
    """One table row: every configuration's request accuracy on `trace`."""
    accs = []
    for _, binary, flags in configs:
        tag = ("-".join(f.strip("-") for f in flags) or "default") + (
            ".base" if binary != configs[0][1] else "")
        accs.append(request_accuracy(binary, trace, flags, tag))
    return (mix, share, rps, kind, str(accs[0][1])) + tuple(
        "%.1f%%" % (100 * a) for a, _ in accs)


def print_table(configs, rows):
    head = ("mix", "load (of saturation)", "requests/s", "skew", "requests") + tuple(
        c for c, _, _ in configs)
    print()
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")


def check_tools():
    if os.geteuid() != 0:
        skip("live capture needs root")
    missing = [b for b in ("nginx", "redis-server", "memcached", "node", "java", "javac",
                           "go") if find(b) is None]
    if grpc_python() is None:
        missing.append("a Python with grpc (python3-grpcio)")
    if missing:
        skip("missing %s (scripts/install-deps.sh installs them)" % ", ".join(missing))


def warm_up(stack):
    """A second of the full mix before the first capture, not captured: the
    JVM's first requests run interpreted, hundreds of milliseconds each, and
    a capture of a service in its steady state should not hold them."""
    _, errors, _ = run_load("warm", 0, 1.0, "all", 4)
    if errors:
        fail("warm-up errors: %s" % errors[:5])
    stack.fresh_grpc()


def ci(bbprof, work, stack):
    """One light level of the full mix, a few seconds: as captured, with
    each host on its own clock, and that copy quantised to 1 ms."""
    warm_up(stack)
    def load():
        return run_load("ci", 30, 5.0, "all", 4)
    trace, (counts, errors, rps) = capture(bbprof, work, "ci", load)
    if errors:
        fail("load errors: %s" % errors[:5])
    print("load: %d requests, %.1f/s (%s)" % (sum(counts.values()), rps, counts))
    if sum(counts.values()) < 60:
        fail("only %d requests" % sum(counts.values()))
    check_grpc_truth(trace)
    skewed = skew(bbprof, trace)
    ok = True
    for kind, t in (("plain", trace), ("skewed", skewed),
                    ("skewed+1ms", quantize(bbprof, skewed))):
        acc, n = request_accuracy(bbprof, t, [])
        print("%s: %d requests, request accuracy %.1f%% (floor %.0f%%)"
              % (kind, n, 100 * acc, 100 * CI_FLOOR[kind]))
        # Every request the load generator made is a request eval counts
        # (a few at the capture's edges may be cut).
        if n < sum(counts.values()) - 4:
            fail("eval counted %d requests for %d sent" % (n, sum(counts.values())))
        ok &= acc >= CI_FLOOR[kind]
    if not ok:
        fail("request accuracy below its floor")
    check_slow_route(trace + ".default.json")
    print("PASS")


def check_grpc_truth(trace):
    """The request id that py1 sends as gRPC metadata (`x-request-id`, an
    HTTP/2 header) must reach the capture's pathids through
    `--truth-header X-Request-Id`, and every gRPC call must be read as gRPC
    (its op from the HTTP/2 headers): else the route through the gRPC tier
    would go unscored, or unnamed, and the accuracy would not cover it."""
    calls = with_id = 0
    nodes = set()
    with open(trace) as f:
        for line in f:
            fields = line.split()
            if len(fields) < 7 or fields[1] != "CALL":
                continue
            nodes.add(fields[2])
            if fields[6] == "grpc:/bbprof.Catalog/Quote":
                calls += 1
                with_id += fields[5] != "-"
                if fields[2:4] != ["py1", "grpc"]:
                    fail("a gRPC call from %s to %s, expected py1 to grpc: %s"
                         % (fields[2], fields[3], line.strip()))
    print("gRPC: %d calls read as grpc:/bbprof.Catalog/Quote, %d with a request id"
          % (calls, with_id))
    if calls == 0:
        fail("no call read as grpc:/bbprof.Catalog/Quote")
    if with_id != calls:
        fail("%d of %d gRPC calls carry no request id" % (calls - with_id, calls))
    missing = {"go", "java", "py1"} - nodes
    if missing:
        fail("no call from %s in the capture" % ", ".join(sorted(missing)))


def check_slow_route(result_path):
    """Issue 14: the route that works 40 ms inside the app (/slow/K) is a
    pattern of its own, apart from /item/K (same nodes and calls), with the
    40 ms on the app. Each route's own time is the median over its patterns
    weighted by count (routes carry their key, /item/k3): a mean would mix in
    the rare variants that a loaded machine's mis-assigned calls make, whose
    own times are not the route's."""
    with open(result_path) as f:
        patterns = json.load(f)["patterns"]

    def app_own(route):
        """(requests, the count-weighted median of the app's own time)."""
        own = []
        for p in patterns:
            root = p["root"]
            if not (root.get("op") or "").startswith("http:GET:/%s/" % route):
                continue
            for child in root["children"]:
                if child["node"].startswith("py") and child.get("op", "").startswith(
                        "http:GET:/%s/" % route):
                    own.append((child["own_time_s"], p["count"]))
        n = sum(c for _, c in own)
        seen = 0
        for t, c in sorted(own):
            seen += c
            if 2 * seen >= n:
                return n, t
        return 0, 0.0

    n_slow, slow = app_own("slow")
    n_item, item = app_own("item")
    print("app own time (median): /slow %.1f ms over %d requests, /item %.1f ms over %d"
          % (1e3 * slow, n_slow, 1e3 * item, n_item))
    if n_slow == 0 or n_item == 0:
        fail("no /slow or no /item pattern: the routes did not split by operation")
    if not 0.035 <= slow - item <= 0.060:
        fail("/slow's app adds %.1f ms more than /item's, expected about 40"
             % (1e3 * (slow - item)))


def bench(bbprof, work, stack):
    configs = baselines(bbprof)
    levels = []
    for mix in MIXES:
        _, errors, sat = run_load("sat-" + mix, 0, 4.0, mix, 16)
        if errors:
            fail("saturation run errors: %s" % errors[:5])
        print("# %s mix: saturation throughput %.0f requests/s (16 closed-loop clients)"
              % (mix, sat), flush=True)
        for share in (0.1, 0.3, 0.6, 0.85):
            levels.append((mix, share, sat * share))
    rows = []
    for mix, share, rate in levels:
        name = "%s-%d" % (mix, int(share * 100))
        threads = max(4, min(32, int(rate / 15)))
        stack.fresh_grpc()
        trace, (counts, errors, rps) = capture(
            bbprof, work, name, lambda: run_load(name, rate, 6.0, mix, threads))
        if errors:
            print("# %s: %d load errors, e.g. %s" % (name, len(errors), errors[0]))
        with open(os.path.join(work, name + ".level.json"), "w") as f:
            json.dump({"mix": mix, "share": share, "rps": rps}, f)
        for kind, t in scored_copies(bbprof, trace):
            rows.append(score_row(configs, mix, "%d%%" % int(share * 100), "%.0f" % rps,
                                  t, kind))
            print("| " + " | ".join(rows[-1]) + " |", flush=True)
    print_table(configs, rows)


def rescore(bbprof, work):
    """The bench's table again, from the captures a --bench run kept in
    `work` (NAME.trace and NAME.level.json per level), skewed afresh."""
    configs = baselines(bbprof)
    levels = []
    for entry in os.listdir(work):
        if entry.endswith(".level.json"):
            with open(os.path.join(work, entry)) as f:
                levels.append((entry[:-len(".level.json")], json.load(f)))
    if not levels:
        fail("%s holds no capture of a --bench run (NAME.level.json)" % work)
    order = list(MIXES)
    levels.sort(key=lambda l: (order.index(l[1]["mix"]), l[1]["share"]))
    rows = []
    for name, level in levels:
        trace = os.path.join(work, name + ".trace")
        for kind, t in scored_copies(bbprof, trace):
            rows.append(score_row(configs, level["mix"], "%d%%" % int(level["share"] * 100),
                                  "%.0f" % level["rps"], t, kind))
            print("| " + " | ".join(rows[-1]) + " |", flush=True)
    print_table(configs, rows)


def long_capture(bbprof, work, stack, seconds, mix="all", share=0.6):
    """`mix` at `share` of its saturation throughput for `seconds`, under
    one capture: a real trace many stream segments long."""
    _, errors, sat = run_load("sat-long", 0, 4.0, mix, 16)
    if errors:
        fail("saturation run errors: %s" % errors[:5])
    rate = share * sat
    threads = max(4, min(32, int(rate / 15)))
    print("# %s mix: saturation %.0f requests/s; %.0f s at %.0f/s (%d clients)"
          % (mix, sat, seconds, rate, threads), flush=True)
    stack.fresh_grpc()
    trace, (counts, errors, rps) = capture(
        bbprof, work, "long",
        lambda: run_load("long", rate, seconds, mix, threads))
    if errors:
        print("# long: %d load errors, e.g. %s" % (len(errors), errors[0]))
    with open(os.path.join(work, "long.level.json"), "w") as f:
        json.dump({"mix": mix, "share": share, "rps": rps, "seconds": seconds,
                   "requests": sum(counts.values())}, f)
    print("# long: %d requests, %.0f/s: %s" % (sum(counts.values()), rps, trace))
    print("# skewed as if on several hosts: %s" % skew(bbprof, trace), flush=True)


def main():
    if len(sys.argv) < 3 or sys.argv[2] not in ("--ci", "--bench", "--rescore", "--long"):
        print(__doc__)
        return 2
    bbprof = os.path.abspath(sys.argv[1])
    if sys.argv[2] == "--long":
        if len(sys.argv) not in (5, 6, 7) or (
                len(sys.argv) > 5 and sys.argv[5] not in MIXES):
            print(__doc__)
            return 2
        seconds = float(sys.argv[3])
        work = sys.argv[4]
        mix = sys.argv[5] if len(sys.argv) > 5 else "all"
        share = float(sys.argv[6]) if len(sys.argv) > 6 else 0.6
        check_tools()
        os.makedirs(work, exist_ok=True)
        os.chmod(work, 0o755)  # memcached runs as nobody
        stack = Stack(work)
        try:
            stack.start()
            long_capture(bbprof, work, stack, seconds, mix, share)
            return 0
        finally:
            stack.stop()
    if sys.argv[2] == "--rescore":
        if len(sys.argv) != 4:
            print(__doc__)
            return 2
        rescore(bbprof, sys.argv[3])
        return 0
    check_tools()
    keep = len(sys.argv) > 3
    work = sys.argv[3] if keep else tempfile.mkdtemp(prefix="bbprof-stack.")
    os.makedirs(work, exist_ok=True)
    os.chmod(work, 0o755)  # memcached runs as nobody
    stack = Stack(work)
    try:
        stack.start()
        if sys.argv[2] == "--ci":
            ci(bbprof, work, stack)
        else:
            bench(bbprof, work, stack)
        return 0
    finally:
        stack.stop()
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
