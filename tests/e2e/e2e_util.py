"""What the end-to-end tests on real servers share (docs/e2e.md): outcome
reporting with ctest's exit codes, finding and stopping servers, nginx's
per-run configuration preamble, and what the Python application tiers share:
the plain-text HTTP handler and Redis connections over raw RESP."""
import http.server
import os
import signal
import socket
import subprocess
import sys
import threading
import time

SKIP = 77  # ctest's SKIP_RETURN_CODE for these tests


def skip(why):
    print("SKIP: " + why)
    sys.exit(SKIP)


def fail(why):
    print("FAIL: " + why)
    sys.exit(1)


def find(binary):
    for d in os.environ.get("PATH", "").split(os.pathsep) + ["/usr/sbin", "/sbin"]:
        p = os.path.join(d, binary)
        if os.access(p, os.X_OK):
            return p
    return None


def wait_port(ip, port, proc, what, timeout=15.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            fail("%s exited at start (status %s)" % (what, proc.returncode))
        try:
            socket.create_connection((ip, port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    fail("%s did not listen on %s:%d within %.0f s" % (what, ip, port, timeout))


def stop(proc, sig=signal.SIGTERM):
    """Stops one server we started, by its own process id."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _process_state(pid):
    """What the kernel says a process is doing: its state and where it
    sleeps, for a failure message about a process that did not start."""
    parts = []
    for name in ("wchan", "stack"):
        try:
            with open("/proc/%d/%s" % (pid, name)) as f:
                text = f.read().strip()
            if text:
                parts.append("%s: %s" % (name, text.replace("\n", " | ")[:600]))
        except OSError:
            pass
    try:
        with open("/proc/%d/status" % pid) as f:
            parts += [l.strip() for l in f if l.startswith(("State:", "VmRSS:"))]
    except OSError:
        pass
    return "; ".join(parts)


def start_capture(argv, err_path, timeout=60.0):
    """Starts a live `bbprof capture` (argv) with its standard error in
    err_path and waits for its "listening on" line, as a script starting
    load after tcpdump would. The file is read through a handle of its own:
    one shared with the child would share its file offset, and a seek could
    race the child's write. Fails with the exit status, or with the state of
    a process that is still silent after `timeout` seconds (generous: an
    ASan build on a loaded 2-core machine starts slowly)."""
    start = time.monotonic()
    with open(err_path, "w") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
    while True:
        with open(err_path) as f:
            log = f.read()
        if "listening on" in log:
            return proc
        if proc.poll() is not None:
            fail("bbprof capture exited with status %s after %.1f s before listening: %r"
                 % (proc.returncode, time.monotonic() - start, log))
        if time.monotonic() - start > timeout:
            state = _process_state(proc.pid)
            stop(proc, signal.SIGKILL)
            fail("bbprof capture did not say it was listening within %.0f s (%s): %r"
                 % (timeout, state, log))
        time.sleep(0.05)


def finish_capture(proc, err_path):
    """Stops a capture as a person would (SIGINT), fails unless it exited 0,
    and returns its standard error."""
    stop(proc, signal.SIGINT)
    with open(err_path) as f:
        log = f.read()
    if proc.returncode != 0:
        fail("bbprof capture exited %d: %s" % (proc.returncode, log))
    return log


# The start of an nginx configuration that keeps every file in the run's work
# folder; the caller appends the rest of the http block and closes it.
NGINX_PREAMBLE = """
worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/nginx-error.log warn;
daemon off;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {work}/nginx-body;
  proxy_temp_path {work}/nginx-proxy;
  fastcgi_temp_path {work}/nginx-fastcgi;
  uwsgi_temp_path {work}/nginx-uwsgi;
  scgi_temp_path {work}/nginx-scgi;
"""


class TextHandler(http.server.BaseHTTPRequestHandler):
    """Keep-alive HTTP/1.1 with one write per response: unbuffered, the
    status line, the headers and the body go out as separate segments and
    Nagle's algorithm holds the last one for the peer's delayed ACK, adding
    tens of milliseconds that are not the tier's work (handle_one_request
    flushes after each request)."""
    protocol_version = "HTTP/1.1"
    wbufsize = 1 << 16

    def reply(self, body):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    """A thread per connection."""
    daemon_threads = True
    request_queue_size = 256


class Redis:
    """Redis over raw RESP (the test uses no third-party packages), one
    connection per thread, kept across requests and bound to the tier's own
    loopback address so the capture tells the tiers apart."""

    def __init__(self, local_ip, ip, port):
        self.local_ip, self.addr = local_ip, (ip, port)
        self.local = threading.local()

    def command(self, *args):
        """One command; returns the body of a bulk reply, else the reply
        line less its type byte (enough for GET and INCR)."""
        local = self.local
        sock = getattr(local, "sock", None)
        if sock is None:
            sock = socket.create_connection(self.addr, timeout=10,
                                            source_address=(self.local_ip, 0))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            local.sock, local.buf = sock, b""
        parts = [a if isinstance(a, bytes) else a.encode() for a in args]
        sock.sendall(b"*%d\r\n" % len(parts) +
                     b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts))
        while b"\r\n" not in local.buf:
            local.buf += sock.recv(65536)
        head, _, rest = local.buf.partition(b"\r\n")
        if not head.startswith(b"$"):
            local.buf = rest
            return head[1:]
        need = int(head[1:]) + 2 if int(head[1:]) >= 0 else 0
        while len(rest) < need:
            rest += sock.recv(65536)
        local.buf = rest[need:]
        return rest[:max(need - 2, 0)]
