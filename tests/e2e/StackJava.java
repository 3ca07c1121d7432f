// The thread-pool application tier of the real-stack test (docs/e2e.md):
// the JDK's com.sun.net.httpserver.HttpServer with a fixed pool of worker
// threads, as a Spring service runs its requests on a pool. A worker holds
// its request for the whole of its downstream calls. Outgoing connections
// are bound to this tier's own loopback address (the capture tells the tiers
// apart by address) and pooled: taken from a pool, returned after the reply,
// reused across requests and threads. Every outgoing HTTP call forwards
// X-Request-Id; Redis calls carry none (RESP has no headers).
//
//   GET /cart/K      Redis GET cart:K
//   GET /product/K   Redis GET K (the Go tier calls it six times a request)
//   GET /recommend/K GET node /price/K
//   GET /order/K     Redis INCR order:K, then GET go /ship/K
//
//   javac -d DIR StackJava.java   (the JDK alone; tests/e2e/real_stack.py)
//   java -cp DIR StackJava LISTEN_IP PORT REDIS_IP REDIS_PORT NODE_IP NODE_PORT
//                          GO_IP GO_PORT

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.Executors;

public final class StackJava {
  static final int WORKERS = 16;

  // A pool of keep-alive connections to one server, bound to our address.
  static final class Pool {
    final InetAddress local;
    final InetSocketAddress remote;
    final ConcurrentLinkedDeque<Conn> idle = new ConcurrentLinkedDeque<>();

    Pool(InetAddress local, String ip, int port) {
      this.local = local;
      this.remote = new InetSocketAddress(ip, port);
    }

    Conn take() throws IOException {
      Conn c = idle.pollFirst();
      if (c != null) return c;
      Socket s = new Socket();
      s.bind(new InetSocketAddress(local, 0));
      s.setTcpNoDelay(true);
      s.connect(remote, 10000);
      s.setSoTimeout(10000);
      return new Conn(s);
    }

    void give(Conn c) {
      idle.addFirst(c);
    }
  }

  static final class Conn {
    final Socket socket;
    final InputStream in;
    final OutputStream out;

    Conn(Socket s) throws IOException {
      socket = s;
      in = new BufferedInputStream(s.getInputStream(), 1 << 14);
      out = s.getOutputStream();
    }

    void close() {
      try {
        socket.close();
      } catch (IOException e) {
        // closing a broken connection: nothing left to do
      }
    }

    // One line up to CRLF, without it.
    String line() throws IOException {
      StringBuilder b = new StringBuilder();
      for (;;) {
        int c = in.read();
        if (c < 0) throw new IOException("connection closed");
        if (c == '\n') break;
        if (c != '\r') b.append((char) c);
      }
      return b.toString();
    }

    byte[] bytes(int n) throws IOException {
      byte[] b = in.readNBytes(n);
      if (b.length != n) throw new IOException("connection closed");
      return b;
    }
  }

  static Pool redis;
  static Pool node;
  static Pool go;

  // One RESP command; returns the bulk or integer reply as text.
  static String redis(String... args) throws IOException {
    StringBuilder b = new StringBuilder("*" + args.length + "\r\n");
    for (String a : args) b.append('$').append(a.length()).append("\r\n").append(a).append("\r\n");
    Conn c = redis.take();
    try {
      c.out.write(b.toString().getBytes(StandardCharsets.UTF_8));
      String head = c.line();
      String value = head.substring(1);
      if (head.startsWith("$")) {
        int n = Integer.parseInt(value);
        value = n < 0 ? "" : new String(c.bytes(n + 2), 0, n, StandardCharsets.UTF_8);
      }
      redis.give(c);
      return value;
    } catch (IOException | RuntimeException e) {
      c.close();
      throw e;
    }
  }

  // GET path on a pooled keep-alive connection, forwarding the request id.
  // A pooled connection the server closed meanwhile is replaced once, as
  // client libraries do.
  static String get(Pool pool, String path, String rid) throws IOException {
    byte[] req = ("GET " + path + " HTTP/1.1\r\nHost: " + pool.remote.getHostString()
                  + "\r\nX-Request-Id: " + rid + "\r\n\r\n").getBytes(StandardCharsets.UTF_8);
    for (int attempt = 0;; ++attempt) {
      boolean fresh = pool.idle.isEmpty();
      Conn c = pool.take();
      try {
        c.out.write(req);
        String status = c.line();
        int length = 0;
        for (String h = c.line(); !h.isEmpty(); h = c.line()) {
          int colon = h.indexOf(':');
          if (colon > 0 && h.substring(0, colon).trim().equalsIgnoreCase("content-length")) {
            length = Integer.parseInt(h.substring(colon + 1).trim());
          }
        }
        String body = new String(c.bytes(length), StandardCharsets.UTF_8);
        pool.give(c);
        if (!status.contains(" 200")) throw new IOException(path + ": " + status);
        return body;
      } catch (IOException e) {
        c.close();
        if (fresh || attempt == 1) throw e;
      }
    }
  }

  static void handle(HttpExchange x) throws IOException {
    String[] parts = x.getRequestURI().getPath().split("/");
    String route = parts.length > 1 ? parts[1] : "";
    String key = parts.length > 2 ? parts[2] : "k";
    String rid = x.getRequestHeaders().getFirst("X-Request-Id");
    if (rid == null) rid = "-";
    x.getRequestBody().readAllBytes();
    String body;
    int status = 200;
    try {
      switch (route) {
        case "cart" -> body = "cart " + redis("GET", "cart:" + key);
        case "product" -> body = "product " + redis("GET", key);
        case "recommend" -> body = "recommend " + get(node, "/price/" + key, rid);
        case "order" -> {
          String n = redis("INCR", "order:" + key);
          body = "order " + n + " " + get(go, "/ship/" + key, rid);
        }
        default -> {
          status = 404;
          body = "no route";
        }
      }
    } catch (IOException e) {
      status = 502;
      body = e.toString();
    }
    byte[] out = body.getBytes(StandardCharsets.UTF_8);
    x.getResponseHeaders().set("Content-Type", "text/plain");
    x.sendResponseHeaders(status, out.length);
    try (OutputStream os = x.getResponseBody()) {
      os.write(out);
    }
  }

  public static void main(String[] args) throws IOException {
    InetAddress self = InetAddress.getByName(args[0]);
    redis = new Pool(self, args[2], Integer.parseInt(args[3]));
    node = new Pool(self, args[4], Integer.parseInt(args[5]));
    go = new Pool(self, args[6], Integer.parseInt(args[7]));
    HttpServer server = HttpServer.create(new InetSocketAddress(self, Integer.parseInt(args[1])), 256);
    server.createContext("/", x -> {
      try {
        handle(x);
      } catch (IOException | RuntimeException e) {
        x.close();
      }
    });
    server.setExecutor(Executors.newFixedThreadPool(WORKERS));
    server.start();
  }
}
