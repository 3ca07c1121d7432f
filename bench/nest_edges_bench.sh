#!/bin/sh
# Requests across stream segments' edges (docs/nesting.md, "The stream
# driver"): a trace of bench/data/slow-reports.conf
# (maketrace, seed 1: 283,336 messages, 122 reports of 3 s ± 1 s) nested in
# memory and with --search stream in segments of 20,000 and 60,000 messages;
# for each streamed run, the reports found (the RPT patterns' counts), the
# requests, what nest did at the edges, and how far its share of the total
# latency by pattern is from the in-memory one (half the sum of the
# differences over patterns, in points, and the largest among the in-memory
# run's ten slowest patterns).
#
#   bench/nest_edges_bench.sh
#
# Uses $BBPROF or build/release/cli/bbprof, and python3.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
bbprof=${BBPROF:-$here/build/release/cli/bbprof}
work=$(mktemp -d "${TMPDIR:-/tmp}/nest-edges.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$bbprof" maketrace "$here/bench/data/slow-reports.conf" -q --seed 1 \
  -o "$work/t.bbt"
"$bbprof" nest "$work/t.bbt" -q --search memory --json "$work/memory.json" \
  >/dev/null
for s in 20000 60000; do
  echo "segments of $s messages:"
  "$bbprof" nest "$work/t.bbt" --search stream --segment-messages "$s" \
    --json "$work/$s.json" 2>&1 >/dev/null | grep "at the segments' edges" |
    sed 's/^/  /'
  python3 - "$work/memory.json" "$work/$s.json" <<'PY'
import json, sys

def load(path):
    patterns = json.load(open(path))["patterns"]
    latency = sum(p["total_latency_s"] for p in patterns)
    return ({p["signature"]: p for p in patterns},
            sum(p["count"] for p in patterns), latency)

mem, mem_requests, mem_latency = load(sys.argv[1])
got, requests, latency = load(sys.argv[2])
share = lambda ps, total, sig: ps[sig]["total_latency_s"] / total if sig in ps else 0
off = sum(abs(share(mem, mem_latency, s) - share(got, latency, s))
          for s in set(mem) | set(got)) / 2
slowest = sorted(mem, key=lambda s: -mem[s]["total_latency_s"])[:10]
top = max(abs(share(mem, mem_latency, s) - share(got, latency, s))
          for s in slowest)
reports = lambda ps: sum(p["count"] for s, p in ps.items()
                         if s.endswith("(AUTH,RPT(DB))"))
print(f"  reports {reports(got)} (in memory {reports(mem)}), requests "
      f"{requests} (in memory {mem_requests})")
print(f"  latency share off by {100 * off:.2f} points, the ten slowest "
      f"patterns' by at most {100 * top:.2f}")
PY
done
