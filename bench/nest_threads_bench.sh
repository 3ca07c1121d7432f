#!/bin/sh
# nest in memory on one thread and on two (issue 17, "every core";
# docs/benchmarks.md "nest on two threads"), beside what this machine gives
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
# share of the machine's.
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

wall() {  # the wall seconds of one run of the given command
  /usr/bin/time -f %e -o "$work/t" "$@" >/dev/null 2>&1
  cat "$work/t"
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
rows = [line.split() for line in open(sys.argv[1])]
machine = [2 * float(a) / float(b) for name, a, b in rows if name == "machine"]
m = statistics.median(machine)
print(f"machine, two independent jobs: {m:.2f}x (median of {len(machine)} rounds,"
      f" {min(machine):.2f}-{max(machine):.2f})")
for name in dict.fromkeys(r[0] for r in rows if r[0] != "machine"):
    t1 = [float(a) for n, a, b in rows if n == name]
    t2 = [float(b) for n, a, b in rows if n == name]
    gains = [a / b for a, b in zip(t1, t2)]
    g = statistics.median(gains)
    print(f"{name}: 1 thread {statistics.median(t1):.2f} s, 2 threads"
          f" {statistics.median(t2):.2f} s (medians); 2 threads {g:.2f}x"
          f" ({min(gains):.2f}-{max(gains):.2f}), {100 * g / m:.0f}% of the machine's")
EOF
