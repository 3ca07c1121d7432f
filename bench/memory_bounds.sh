#!/bin/sh
# Peak memory on crafted inputs that would grow memory without the limits
# (docs/benchmarks.md, "Memory bounds on crafted input"):
#   1. a pcap of N_CONNS TCP connections to an HTTP server, each opened, sent
#      one request and never closed nor answered, 10 us apart (so the whole
#      capture is shorter than the 300 s idle timeout): `bbprof capture -r`;
#   2. a trace of N_CALLS CALLs that are never answered: `stats` and `nest`;
#   3. a trace of N_NODES clients with distinct names, each making one call
#      that is answered: `stats` and `nest`.
# Each is run with the bbprof under test at its defaults, and with $BEFORE
# (an older bbprof, e.g. main's build) when given. Peak RSS comes from
# /usr/bin/time -v ("Maximum resident set size"). Memory, not time, is
# measured, so other work on the machine does not change the figures.
#
#   bench/memory_bounds.sh [N_CONNS N_CALLS N_NODES]   (default 1000000 3000000 1000000)
#
# Uses $BBPROF or build/release/cli/bbprof, and bench/pcap_gen of the same
# build; scratch files (about 1 GB at the defaults) in ${TMPDIR:-/tmp}.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
bbprof=${BBPROF:-$here/build/release/cli/bbprof}
pcap_gen=$(dirname "$bbprof")/../bench/pcap_gen
before=${BEFORE:-}
n_conns=${1:-1000000}
n_calls=${2:-3000000}
n_nodes=${3:-1000000}
work=$(mktemp -d "${TMPDIR:-/tmp}/memory-bounds.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$pcap_gen" --idle-conns "$n_conns" 10 "$work/idle.pcap" >/dev/null
python3 - "$work" "$n_calls" "$n_nodes" <<'EOF'
import sys
work, n_calls, n_nodes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
t0 = 1_700_000_000 * 10**9
def ts(ns):
    return f"{ns // 10**9}.{ns % 10**9:09d}"
with open(f"{work}/unmatched.trace", "w") as f:
    f.write("#bbprof-trace 1\n")
    for i in range(n_calls):  # 10 us apart, never answered
        f.write(f"{ts(t0 + i * 10_000)}\tCALL\tclient\tserver\tc{i}\n")
with open(f"{work}/nodes.trace", "w") as f:
    f.write("#bbprof-trace 1\n")
    for i in range(n_nodes):  # one answered call from each of n_nodes clients
        t = t0 + i * 20_000
        f.write(f"{ts(t)}\tCALL\tclient{i}\tserver\tc{i}\n")
        f.write(f"{ts(t + 10_000)}\tRET\tserver\tclient{i}\tc{i}\n")
EOF

# peak LABEL BIN ARGS...: "LABEL  PEAK_MB  EXIT" (nest exits 1 on a trace
# without a matched call, which the unmatched one is; that is its answer).
peak() {
  label=$1
  shift
  rc=0
  /usr/bin/time -v "$@" >/dev/null 2>"$work/time.txt" || rc=$?
  kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time.txt")
  awk -v l="$label" -v kb="$kb" -v rc="$rc" 'BEGIN { printf "%-44s %8.1f MB  exit %s\n", l, kb / 1024, rc }'
}

for which in before after; do
  if [ "$which" = before ]; then
    [ -n "$before" ] || continue
    bin=$before
  else
    bin=$bbprof
  fi
  peak "$which: capture $n_conns idle connections" \
    "$bin" capture -q -r "$work/idle.pcap" -o "$work/idle.trace"
  peak "$which: stats $n_calls unmatched calls" "$bin" stats "$work/unmatched.trace"
  peak "$which: nest $n_calls unmatched calls" \
    "$bin" nest -q --threads 1 "$work/unmatched.trace" --json "$work/r.json"
  peak "$which: stats $n_nodes distinct node names" "$bin" stats "$work/nodes.trace"
  peak "$which: nest $n_nodes distinct node names" \
    "$bin" nest -q --threads 1 "$work/nodes.trace" --json "$work/r.json"
done
