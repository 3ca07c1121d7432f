#!/bin/sh
# nest in memory on one thread and on two (docs/benchmarks.md, "nest on
# two threads"), beside what this machine gives
# two independent jobs at that moment. On a shared virtual machine a second
# core is often not a whole core (steal time), so a two-thread figure alone
# says little: each round runs, back to back,
#
#   - one `nest --threads 1` alone, then two of them at once: the machine's
#     own gain for two jobs that share nothing (2 x alone / both at once),
#     the most any two-thread run can reach in that round;
#   - for each BINARY, `nest --threads 1` and `nest --threads 2`: its gain.
#
# and the medians of the rounds are printed, with each build's gain as a
# share of the machine's. Each run's CPU time (user + system) is kept too,
# which splits a gain short of 2x in two: a second thread that waits (the
# cores busy on two threads, CPU over wall, below 2) and work that costs
# more CPU when two threads run it (CPU on two threads over CPU on one,
# above 1). The machine's line gives the same CPU ratio for its two
# independent jobs: what running both cores at once costs any program.
#
#   bench/nest_threads_bench.sh [ROUNDS] [BINARY...]
#
# ROUNDS defaults to 11; the binaries to $BBPROF or build/release/cli/bbprof
# (give an older build first to compare two in one run). The trace is
# samples/multitier-long.conf (2,008,650 messages, binary), written to
# ${TMPDIR:-/tmp} and removed at the end.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-11}
[ $# -gt 0 ] && shift
[ $# -eq 0 ] && set -- "${BBPROF:-$here/build/release/cli/bbprof}"
work=$(mktemp -d "${TMPDIR:-/tmp}/nest-threads.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$1" maketrace "$here/samples/multitier-long.conf" -q -o "$work/long.bbt"

wall() {  # "WALL CPU": the wall and CPU (user + system) seconds of one run
  /usr/bin/time -f "%e %U %S" -o "$work/t" "$@" >/dev/null 2>&1
  awk '{ printf "%s %.2f", $1, $2 + $3 }' "$work/t"
}
log="$work/log"
: >"$log"
i=0
while [ "$i" -lt "$rounds" ]; do
  i=$((i + 1))
  one=$(wall "$1" nest "$work/long.bbt" -q --threads 1)
  both=$(wall sh -c "'$1' nest '$work/long.bbt' -q --threads 1 & '$1' nest '$work/long.bbt' -q --threads 1; wait")
  echo "machine $one $both" >>"$log"
  for bin in "$@"; do
    t1=$(wall "$bin" nest "$work/long.bbt" -q --threads 1)
    t2=$(wall "$bin" nest "$work/long.bbt" -q --threads 2)
    echo "$bin $t1 $t2" >>"$log"
  done
done
python3 - "$log" <<'EOF'
import statistics, sys
# Each line: a name, then WALL CPU for one thread (alone) and for two
# threads (the machine's: its two jobs at once).
rows = [(r[0], *map(float, r[1:])) for r in (l.split() for l in open(sys.argv[1]))]
med = statistics.median
machine = [r for r in rows if r[0] == "machine"]
gains = [2 * w1 / w2 for _, w1, c1, w2, c2 in machine]
m = med(gains)
print(f"machine, two independent jobs: {m:.2f}x (median of {len(gains)} rounds,"
      f" {min(gains):.2f}-{max(gains):.2f}); CPU of the two jobs at once over"
      f" twice one alone: {med(c2 / (2 * c1) for _, w1, c1, w2, c2 in machine):.2f}")
for name in dict.fromkeys(r[0] for r in rows if r[0] != "machine"):
    runs = [r for r in rows if r[0] == name]
    g = [w1 / w2 for _, w1, c1, w2, c2 in runs]
    print(f"{name}: 1 thread {med(r[1] for r in runs):.2f} s, 2 threads"
          f" {med(r[3] for r in runs):.2f} s (medians); 2 threads {med(g):.2f}x"
          f" ({min(g):.2f}-{max(g):.2f}), {100 * med(g) / m:.0f}% of the machine's")
    print(f"  CPU: 1 thread {med(r[2] for r in runs):.2f} s, 2 threads"
          f" {med(r[4] for r in runs):.2f} s (medians); on 2 threads, cores busy"
          f" (CPU / wall) {med(c2 / w2 for _, w1, c1, w2, c2 in runs):.2f},"
          f" CPU over 1 thread's {med(c2 / c1 for _, w1, c1, w2, c2 in runs):.2f}")
EOF
