#!/bin/sh
# Where two threads lose, pass by pass (docs/benchmarks.md, "Where two
# threads lose"): `nest --threads 1` and
# `nest --threads 2` in turn, ROUNDS times each, on a maketrace trace,
# each with --timings, which gives every pass's wall seconds and the
# process's CPU seconds over it. Printed as a Markdown table of medians:
#
#   - gain: the pass's wall time on one thread over two;
#   - cores busy: its CPU over wall time on two threads (2: neither
#     thread waited);
#   - CPU 2/1: its CPU time on two threads over one (1: two threads did
#     the work of one, no more, and no slower).
#
# A gain short of 2 is the product of the two: gain = cores busy / (CPU
# 2/1) when the one-thread run keeps one core busy. The rounds alternate so
# that the machine's moods (a shared virtual machine) fall on both alike.
#
#   bench/nest_passes_bench.sh [ROUNDS] [BINARY] [CONF] [NODE=SECONDS...]
#
# ROUNDS defaults to 9; the binary to $BBPROF or build/release/cli/bbprof.
# The trace is maketrace's of CONF, by default samples/multitier-long.conf
# (2,008,650 messages; samples/multitier-parallelism-high.conf is a busy
# system, 265 calls in progress on average), written to ${TMPDIR:-/tmp} as
# a binary trace and removed at the end. Each NODE=SECONDS moves that
# node's clock (`bbprof skewer --offset`), as on hosts whose clocks
# disagree: the clock correction then runs its rounds on the whole trace
# (docs/benchmarks.md uses AUTH=-0.003 WS1=0.002 DB=0.004).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-9}
bin=${2:-${BBPROF:-$here/build/release/cli/bbprof}}
conf=${3:-$here/samples/multitier-long.conf}
[ $# -gt 3 ] && shift 3 || set --
work=$(mktemp -d "${TMPDIR:-/tmp}/nest-passes.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$bin" maketrace "$conf" -q -o "$work/long.bbt"
if [ $# -gt 0 ]; then
  offsets=
  for o in "$@"; do offsets="$offsets --offset $o"; done
  # shellcheck disable=SC2086  # one word per offset
  "$bin" skewer "$work/long.bbt" $offsets -o "$work/skewed.bbt" 2>/dev/null
  mv "$work/skewed.bbt" "$work/long.bbt"
fi
log="$work/log"
: >"$log"
i=0
while [ "$i" -lt "$rounds" ]; do
  i=$((i + 1))
  for threads in 1 2; do
    # The table's lines (after the heading), each prefixed by the thread
    # count: "N|pass|wall cpu busy".
    "$bin" nest "$work/long.bbt" -q --threads "$threads" --timings \
      --json /dev/null 2>&1 >/dev/null |
      sed -n 's/^  \([a-z].*[a-z)]\) \{1,\}\([0-9.]\{1,\} .*\)$/\1|\2/p' |
      sed "s/^/$threads|/" >>"$log"
  done
done
python3 - "$log" "$rounds" <<'EOF'
import collections, statistics, sys
wall = collections.defaultdict(list)
cpu = collections.defaultdict(list)
order = []
for line in open(sys.argv[1]):
    threads, name, fields = line.rstrip("\n").split("|")
    f = fields.split()
    if name not in order:
        order.append(name)
    wall[threads, name].append(float(f[0]))
    cpu[threads, name].append(float(f[1]))
med = statistics.median
print(f"medians of {sys.argv[2]} rounds, seconds")
print()
print("| pass | 1 thread: wall | CPU | 2 threads: wall | CPU | gain | cores busy | CPU 2/1 |")
print("|---|---|---|---|---|---|---|---|")
for name in order:
    w1, c1 = med(wall["1", name]), med(cpu["1", name])
    w2, c2 = med(wall["2", name]), med(cpu["2", name])
    if w2 < 0.0005 or c1 == 0:
        continue  # too short for a ratio
    print(f"| {name} | {w1:.3f} | {c1:.3f} | {w2:.3f} | {c2:.3f} |"
          f" {w1 / w2:.2f}x | {c2 / w2:.2f} | {c2 / c1:.2f} |")
EOF
