#!/usr/bin/env python3
"""End-to-end test on real servers: capture live, then nest.

A three-tier system of real Debian servers on loopback addresses:

    client 127.0.20.1 --HTTP--> nginx 127.0.20.2:18080 --HTTP--> app 127.0.20.3:18081
                                                                   |
                                                  redis 127.0.20.4:16380 <--RESP

nginx proxies to the app (proxy_bind makes its upstream connections come from
its own address, so the capture can tell the tiers apart); the app
(app_server.py) calls Redis and then works DELAY seconds on /item, and answers
/health at once. `bbprof capture -i lo` records a few seconds of real load,
is stopped by SIGINT, and `bbprof nest` must find:

  - the /item structure client->nginx(app(redis)) as the top pattern and the
    /health structure client->nginx(app) as the second (the load is 3:1),
    each node named with the operation its decoder read (nginx[http:GET:/item]);
  - the delay added in the app: the app's own time in the top pattern is about
    DELAY and is the largest of the pattern's nodes.

Every server is started here, on a /24 of 127.0.0.0/8 only, and stopped by
its own process id. The /24 is drawn at random per run (127.0.20.0/24 in the
picture above), and the capture sees only it: two runs at once on one
machine (two checkouts' test suites) neither share servers nor count each
other's traffic. Needs root (live capture) and nginx and redis-server
(scripts/install-deps.sh installs them); exits 77 (skipped) without them.

    multitier_e2e.py BBPROF [WORKDIR]
"""
import json
import random
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import http.client

from e2e_util import (NGINX_PREAMBLE, fail, find, finish_capture, skip, start_capture,
                      stop, wait_port)

HERE = os.path.dirname(os.path.abspath(__file__))
NET = "127.%d.%d" % (random.SystemRandom().randint(20, 250), random.SystemRandom().randint(0, 255))
CLIENT, NGINX, APP, REDIS = NET + ".1", NET + ".2", NET + ".3", NET + ".4"
NGINX_PORT, APP_PORT, REDIS_PORT = 18080, 18081, 16380
DELAY = 0.030       # seconds the app works on /item
LOAD_SECONDS = 4.0
CLIENTS = 3        # concurrent keep-alive client connections
THINK = 0.030      # the most a client waits between requests (uniform)


NGINX_CONF = NGINX_PREAMBLE + """
  server {{
    listen {nginx}:{nginx_port};
    location / {{
      proxy_pass http://{app}:{app_port};
      proxy_bind {nginx};
    }}
  }}
}}
"""


def load(seed, stop_at, counts, errors):
    """One client thread: keep-alive requests, three /item for one /health,
    each after a random think time. Without it the clients fall into lockstep
    (equal service times release them together) and their calls into each
    tier come microseconds apart, which no black-box method can tell apart."""
    rng = random.Random(seed)
    conn = None
    i = 0
    while time.monotonic() < stop_at:
        time.sleep(rng.uniform(0, THINK))
        path = "/health" if i % 4 == 3 else "/item"
        try:
            if conn is None:
                conn = http.client.HTTPConnection(NGINX, NGINX_PORT, timeout=10,
                                                  source_address=(CLIENT, 0))
            conn.request("GET", path)
            r = conn.getresponse()
            r.read()
            if r.status != 200:
                errors.append("%s -> HTTP %d" % (path, r.status))
            counts[path] = counts.get(path, 0) + 1
        except (OSError, http.client.HTTPException) as e:
            errors.append("%s: %s" % (path, e))
            conn = None
        i += 1
    if conn is not None:
        conn.close()


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    bbprof = os.path.abspath(sys.argv[1])
    if os.geteuid() != 0:
        skip("live capture needs root")
    nginx, redis = find("nginx"), find("redis-server")
    if nginx is None or redis is None:
        skip("nginx and redis-server are needed (scripts/install-deps.sh installs them)")

    work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="bbprof-e2e.")
    os.makedirs(work, exist_ok=True)
    procs = {}
    try:
        procs["redis"] = subprocess.Popen(
            [redis, "--bind", REDIS, "--port", str(REDIS_PORT), "--save", "",
             "--appendonly", "no", "--daemonize", "no", "--protected-mode", "no", "--dir", work,
             "--logfile", os.path.join(work, "redis.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(REDIS, REDIS_PORT, procs["redis"], "redis-server")
        with socket.create_connection((REDIS, REDIS_PORT)) as s:
            s.sendall(b"*3\r\n$3\r\nSET\r\n$4\r\nitem\r\n$5\r\nhello\r\n")
            if not s.recv(64).startswith(b"+OK"):
                fail("redis-server did not accept SET")

        procs["app"] = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "app_server.py"), APP, str(APP_PORT),
             REDIS, str(REDIS_PORT), str(DELAY)],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "app.log"), "w"))
        wait_port(APP, APP_PORT, procs["app"], "app_server.py")

        conf = os.path.join(work, "nginx.conf")
        with open(conf, "w") as f:
            f.write(NGINX_CONF.format(work=work, nginx=NGINX, nginx_port=NGINX_PORT,
                                      app=APP, app_port=APP_PORT))
        procs["nginx"] = subprocess.Popen([nginx, "-c", conf, "-p", work],
                                          stdout=subprocess.DEVNULL,
                                          stderr=open(os.path.join(work, "nginx.out"), "w"))
        wait_port(NGINX, NGINX_PORT, procs["nginx"], "nginx")

        names = os.path.join(work, "names.map")
        with open(names, "w") as f:
            f.write("# the tiers of the end-to-end test\n%s client\n%s nginx\n%s app\n%s redis\n"
                    % (CLIENT, NGINX, APP, REDIS))
        trace = os.path.join(work, "live.bbt")
        cap_err = os.path.join(work, "capture.err")
        # bbprof says "listening on lo" once packets are being captured.
        procs["capture"] = start_capture(
            [bbprof, "capture", "-i", "lo", "--names", names, "-o", trace,
             "--capture-host", "lo-test", "net", NET + ".0/24"], cap_err)

        counts, errors = {}, []
        stop_at = time.monotonic() + LOAD_SECONDS
        threads = [threading.Thread(target=load, args=(seed, stop_at, counts, errors))
                   for seed in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        time.sleep(0.3)  # let the last packets reach the capture
        if errors:
            fail("load errors: %s" % errors[:5])
        requests = sum(counts.values())
        print("load: %d requests (%s)" % (requests, counts))
        if requests < 40:
            fail("only %d requests in %.0f s" % (requests, LOAD_SECONDS))

        cap_log = finish_capture(procs["capture"], cap_err)
        if "kernel_drops 0" not in cap_log:
            print("note: the kernel dropped packets:\n" + cap_log)

        result = os.path.join(work, "result.json")
        # The names map calls the client "client": kept, not folded into
        # "clients", so the signatures below name it.
        out = subprocess.run([bbprof, "nest", trace, "--json", result, "--clients", "keep"],
                             capture_output=True, text=True)
        print(out.stdout[:3000])
        if out.returncode != 0:
            fail("bbprof nest exited %d: %s" % (out.returncode, out.stderr))
        with open(result) as f:
            doc = json.load(f)
        check(doc, counts)
        print("PASS")
        return 0
    finally:
        for name in ("capture", "nginx", "app", "redis"):
            stop(procs.get(name))
        if len(sys.argv) <= 2:
            shutil.rmtree(work, ignore_errors=True)


def nodes(n):
    yield n
    for c in n["children"]:
        yield from nodes(c)


def check(doc, counts):
    patterns = doc["patterns"]
    if len(patterns) < 2:
        fail("expected two patterns, got %s" % [p["signature"] for p in patterns])
    top = patterns[0]
    want_top = "client->nginx[http:GET:/item](app[http:GET:/item](redis[redis:GET]))"
    want_second = "client->nginx[http:GET:/health](app[http:GET:/health])"
    if top["signature"] != want_top:
        fail("top pattern is %s, not %s" % (top["signature"], want_top))
    # Found by its shape, not by rank: patterns rank by total latency, and
    # three /item requests nested wrongly (app without its redis call, 37 ms
    # each, on a loaded machine) outweigh seventy 1.5 ms /health requests.
    # Its count is bounded below.
    second = next((p for p in patterns if p["signature"] == want_second), None)
    if second is None:
        fail("no pattern %s among %s" % (want_second, [p["signature"] for p in patterns]))
    # Every request is the root of one instance: the client's calls into
    # nginx are never nested under anything (a few at the capture's edges may
    # be cut).
    total = sum(counts.values())
    rooted = sum(p["count"] for p in patterns if p["signature"].startswith("client->nginx"))
    if not (total - 4 <= rooted <= total):
        fail("%d instances rooted at client->nginx for %d requests" % (rooted, total))
    # Nearly all requests are instances of their own pattern. The nesting
    # algorithm is probabilistic (section 5.1): with concurrent clients a few
    # calls are nested under the wrong parent (app(redis,redis) beside an app
    # whose redis call was taken), so a bound is asserted, not exactness
    # (measured: 96-99% of /item requests).
    for p, path in ((top, "/item"), (second, "/health")):
        want = counts.get(path, 0)
        if not (0.8 * want <= p["count"] <= total):
            fail("%s: %d instances for %d %s requests" % (p["signature"], p["count"],
                                                         want, path))
    # The delay added in the app shows up on the app: its own time is about
    # DELAY, the largest in the pattern; nginx and redis add little.
    own = {n["node"]: n["own_time_s"] for n in nodes(top["root"])}
    culprit = max(own, key=own.get)
    if culprit != "app":
        fail("the node adding the most time is %s (%s), not app" % (culprit, own))
    if not (DELAY * 0.9 <= own["app"] <= DELAY + 0.025):
        fail("app's own time %.4f s, expected about %.3f s" % (own["app"], DELAY))
    app = next(n for n in nodes(top["root"]) if n["node"] == "app")
    if app["latency_s"]["p50"] < DELAY:
        fail("app's median latency %.4f s is below its %.3f s delay"
             % (app["latency_s"]["p50"], DELAY))
    # /health does not go through the delay (its median; the mean also holds
    # the /item calls that were nested under the wrong parent).
    health_app = next(n for n in nodes(second["root"]) if n["node"] == "app")
    if health_app["latency_s"]["p50"] > DELAY / 2:
        fail("app's median latency on /health is %.4f s" % health_app["latency_s"]["p50"])
    print("top pattern %s: %d instances, own time %s" % (top["signature"], top["count"],
                                                         {k: round(v, 4) for k, v in own.items()}))


if __name__ == "__main__":
    sys.exit(main())
