// Checks an OTLP/JSON lines file (bbprof nest --requests x.otlp.json)
// against the official OTLP protobuf definitions, as compiled by protobufjs
// into @opentelemetry/otlp-proto-exporter-base (installed by
// scripts/install-deps.sh under build/npm). Each line must be a TracesData /
// ExportTraceServiceRequest in the OTLP JSON encoding: after the encoding's
// one documented exception (trace and span ids in hex, not base64) is
// undone, the line must verify, and survive decoding into the message and
// encoding back unchanged, so that no field is misnamed, mistyped or
// unknown. Prints "ok LINES SPANS" or the first problem; exit 0 or 1.
//
// usage: node otlp_check.js NODE_MODULES FILE
'use strict';
const fs = require('fs');
const path = require('path');
const assert = require('assert');

const [modules, file] = process.argv.slice(2);
const root = require(path.join(
    modules, '@opentelemetry/otlp-proto-exporter-base/build/src/generated/root.js'));
const Request = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

function fail(where, msg) {
  console.log(`${file}:${where}: ${msg}`);
  process.exit(1);
}

// Hex id -> base64, checking the length the OTLP JSON encoding requires.
function hexToBase64(where, hex, bytes) {
  if (typeof hex !== 'string' || !new RegExp(`^[0-9a-f]{${2 * bytes}}$`).test(hex)) {
    fail(where, `id ${JSON.stringify(hex)} is not ${2 * bytes} lowercase hex digits`);
  }
  return Buffer.from(hex, 'hex').toString('base64');
}

let lines = 0, spans = 0;
const text = fs.readFileSync(file, 'utf8');
text.split('\n').forEach((line, i) => {
  if (line.trim() === '') return;
  const where = i + 1;
  let obj;
  try {
    obj = JSON.parse(line);
  } catch (e) {
    fail(where, `not JSON: ${e.message}`);
  }
  ++lines;
  for (const rs of obj.resourceSpans || []) {
    for (const ss of rs.scopeSpans || []) {
      for (const s of ss.spans || []) {
        ++spans;
        s.traceId = hexToBase64(where, s.traceId, 16);
        s.spanId = hexToBase64(where, s.spanId, 8);
        if ('parentSpanId' in s) s.parentSpanId = hexToBase64(where, s.parentSpanId, 8);
        if (!/^[0-9]+$/.test(s.startTimeUnixNano) || !/^[0-9]+$/.test(s.endTimeUnixNano)) {
          fail(where, 'times must be decimal strings of nanoseconds');
        }
        if (BigInt(s.endTimeUnixNano) < BigInt(s.startTimeUnixNano)) {
          fail(where, 'a span ends before it starts');
        }
      }
    }
  }
  const msg = Request.fromObject(obj);
  const err = Request.verify(msg);
  if (err) fail(where, `does not verify against ExportTraceServiceRequest: ${err}`);
  const back = Request.toObject(Request.decode(Request.encode(msg).finish()),
                                {longs: String, enums: Number, bytes: String});
  try {
    assert.deepStrictEqual(back, obj);
  } catch (e) {
    fail(where, `changes through the protobuf message (unknown or mistyped field): ${e.message}`);
  }
});
if (lines === 0) fail(0, 'no TracesData lines');
console.log(`ok ${lines} ${spans}`);
