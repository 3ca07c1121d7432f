// The event-loop application tier of the real-stack test: one Node.js
// process, plain `http` and `net` modules, many requests in flight on one
// thread. Outgoing connections are bound to this tier's own loopback address
// and kept alive (an http.Agent pool; one memcached connection whose replies
// come back in order). Every outgoing HTTP call forwards X-Request-Id.
//
//   GET  /price/K          memcached get K
//   GET  /fanout/K         memcached get K and GET py /stock/K, concurrently
//   POST /part/K?i=I&n=N   the asynchronous fan-in: held until all N parts of
//                          the request (by X-Request-Id) have arrived; the
//                          last one's arrival makes GET py /audit/K, and its
//                          answer answers all N parts
//
//   node stack_node.js LISTEN_IP PORT MEMCACHED_IP MEMCACHED_PORT PY_IP PY_PORT
'use strict';
const http = require('http');
const net = require('net');

const [listenIp, port, mcIp, mcPort, pyIp, pyPort] = process.argv.slice(2);
const agent = new http.Agent({keepAlive: true, maxSockets: 64});

// memcached text protocol on one connection: replies arrive in request order.
const mc = net.connect({host: mcIp, port: Number(mcPort), localAddress: listenIp});
mc.setNoDelay(true);
const waiting = [];
let buf = '';
mc.on('data', (d) => {
  buf += d.toString('latin1');
  for (;;) {
    const end = buf.indexOf('END\r\n');
    if (end < 0 || waiting.length === 0) return;
    const reply = buf.slice(0, end);
    buf = buf.slice(end + 5);
    waiting.shift()(reply);
  }
});
mc.on('error', (e) => { console.error('memcached: ' + e.message); process.exit(1); });
function mcGet(key, done) {
  waiting.push(done);
  mc.write('get ' + key + '\r\n');
}

function pyGet(path, rid, done) {
  const req = http.request({host: pyIp, port: Number(pyPort), path, agent,
                            localAddress: listenIp, headers: {'X-Request-Id': rid}},
                           (res) => {
    let body = '';
    res.on('data', (c) => { body += c; });
    res.on('end', () => done(body));
  });
  req.on('error', (e) => done('error ' + e.message));
  req.end();
}

const held = new Map();  // request id -> responses waiting for the last part

function reply(res, body) {
  res.writeHead(200, {'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(body)});
  res.end(body);
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  const [, route, key = 'k'] = url.pathname.split('/');
  const rid = req.headers['x-request-id'] || '-';
  req.resume();
  req.on('end', () => {
    if (route === 'price') {
      mcGet(key, (v) => reply(res, 'price ' + v.length));
    } else if (route === 'fanout') {
      let left = 2, out = '';
      const one = (s) => { out += s; if (--left === 0) reply(res, out); };
      mcGet(key, one);
      pyGet('/stock/' + key, rid, one);
    } else if (route === 'part') {
      const n = Number(url.searchParams.get('n') || 1);
      const list = held.get(rid) || [];
      list.push(res);
      held.set(rid, list);
      if (list.length === n) {
        held.delete(rid);
        pyGet('/audit/' + key, rid, (body) => { for (const r of list) reply(r, body); });
      }
    } else {
      res.writeHead(404);
      res.end();
    }
  });
});
// Keep idle keep-alive connections open (Node closes them after 5 s by
// default): the Python tier's pool reuses them across requests.
server.keepAliveTimeout = 0;
server.listen(Number(port), listenIp);
