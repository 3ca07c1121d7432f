#!/bin/sh
# nest streamed (docs/benchmarks.md, "nest streamed"): a multitier
# trace of N messages from maketrace (samples/multitier-long.conf, binary,
# numeric ids), nested with `--search stream` on one thread and on two, with
# wall time, user time and peak memory (/usr/bin/time); then the in-memory
# run of the trace's first 2 M messages (maketrace with --messages 2000000
# and the same seed writes the same messages but for the requests in flight
# at its end), and each top pattern's share in both. With IN_MEMORY=1 the whole trace is also nested in memory (only for
# N that fits: about 50 bytes a message).
#
#   bench/nest_stream_bench.sh [N]      (default 1000000000: 10 GB of trace)
#
# Uses $BBPROF or build/release/cli/bbprof; the trace goes to ${TMPDIR:-/tmp}
# and is removed at the end. On a shared machine, compare the runs of one
# invocation with each other; user seconds per message are steadier than
# wall time when other work competes for the cores.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
bbprof=${BBPROF:-$here/build/release/cli/bbprof}
n=${1:-1000000000}
work=$(mktemp -d "${TMPDIR:-/tmp}/nest-stream.XXXXXX")
trap 'rm -rf "$work"' EXIT
conf="$here/samples/multitier-long.conf"

"$bbprof" maketrace "$conf" -q --seed 1 --messages "$n" -o "$work/big.bbt"
"$bbprof" maketrace "$conf" -q --seed 1 --messages 2000000 -o "$work/first.bbt"
echo "trace: $(stat -c %s "$work/big.bbt") bytes"

run() {  # label, then nest's arguments
  label=$1
  shift
  /usr/bin/time -f "$label: %e s wall, %U s user, %M KB peak" \
    "$bbprof" nest "$@" 2>&1 >/dev/null | grep -v '^bbprof nest: clock skew'
}
run "stream, 1 thread" "$work/big.bbt" --search stream --threads 1 --json "$work/s1.json"
run "stream, 2 threads" "$work/big.bbt" --search stream --threads 2 --json "$work/s2.json"
if [ "${IN_MEMORY:-0}" = 1 ]; then
  run "memory, 1 thread" "$work/big.bbt" --search memory --threads 1 --json "$work/m.json"
fi
run "memory, first 2 M messages" "$work/first.bbt" --search memory --threads 1 --json "$work/first.json"
cmp -s "$work/s1.json" "$work/s2.json" && echo "1 and 2 threads: the same bytes" ||
  echo "1 and 2 threads: DIFFERENT results"

python3 - "$work" "$n" <<'EOF'
import json, os, sys
work, n = sys.argv[1], int(sys.argv[2])
def shares(name):
    d = json.load(open(os.path.join(work, name)))
    total = sum(p["count"] for p in d["patterns"])
    return {p["signature"]: 100.0 * p["count"] / total for p in d["patterns"]}, total
s, total = shares("s1.json")
f, _ = shares("first.json")
others = [("first 2 M in memory", f)]
if os.path.exists(os.path.join(work, "m.json")):
    others.append(("whole trace in memory", shares("m.json")[0]))
print("requests counted (streamed): %d" % total)
for label, o in others:
    worst = 0.0
    print("top patterns, streamed share vs %s:" % label)
    for sig in sorted(o, key=lambda k: -o[k])[:8]:
        d = s.get(sig, 0.0) - o[sig]
        worst = max(worst, abs(d))
        print("  %6.2f%% %6.2f%% %+.3f  %s" % (s.get(sig, 0.0), o[sig], d, sig))
    print("  largest difference: %.3f points" % worst)
EOF
