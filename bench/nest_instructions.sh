#!/bin/sh
# nest's work counted in instructions (valgrind's callgrind), the yardstick
# that a shared, noisy machine does not move (docs/benchmarks.md, "nest:
# speed and memory"): user time there moves by a third from one minute to
# the next, the instruction count not at all. A
# multitier trace of N messages from maketrace (samples/multitier-long.conf,
# seed 1, binary), nested by each binary given in memory on one thread, in
# memory on two, and streamed on one, with the result's bytes compared
# between binaries.
#
# The two-thread count is the extra work the parallel passes do, apart
# from any waiting and from what two busy cores cost each other
# (docs/benchmarks.md, "nest on two threads"): callgrind runs one
# thread at a time, so it counts what both threads execute, and none of
# the time either waits. Each binary's two-thread count over its
# one-thread count is printed after the table.
#
#   bench/nest_instructions.sh [N] [BBPROF...]
#
# N defaults to 2000000 (about a minute a run under callgrind; the stream
# nests a trace of at most one segment, 2,097,152 messages, as one, so use
# N = 20000000 to count what streaming adds). The binaries default to
# $BBPROF or build/release/cli/bbprof; the first also writes the trace.
# Needs valgrind (apt-get install valgrind).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-2000000}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- "${BBPROF:-$here/build/release/cli/bbprof}"
command -v valgrind >/dev/null 2>&1 || {
  echo "nest_instructions.sh: valgrind not found (apt-get install valgrind)" >&2
  exit 2
}
work=$(mktemp -d "${TMPDIR:-/tmp}/nest-instructions.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$1" maketrace "$here/samples/multitier-long.conf" -q --seed 1 \
  --messages "$n" -o "$work/t.bbt"
printf '%-8s %7s %16s  %s\n' mode threads instructions binary
: >"$work/counts"
for run in memory:1 memory:2 stream:1; do
  mode=${run%:*}
  threads=${run#*:}
  # Two threads must give one thread's bytes: both memory rows are
  # compared with the first binary's one-thread result.
  [ "$run" = memory:2 ] || first=
  i=0
  for b in "$@"; do
    i=$((i + 1))
    valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" \
      "$b" nest "$work/t.bbt" -q --threads "$threads" --search "$mode" \
      --json "$work/r.json" >/dev/null 2>"$work/cg.err"
    ir=$(sed -n 's/.*Collected : *\([0-9]*\).*/\1/p' "$work/cg.err")
    same=
    if [ -z "$first" ]; then
      first=$b
      cp "$work/r.json" "$work/first.json"
    elif cmp -s "$work/r.json" "$work/first.json"; then
      same="  (the same bytes as $first)"
    else
      same="  (bytes differ from $first)"
    fi
    printf '%-8s %7s %16s  %s%s\n' "$mode" "$threads" "$ir" "$b" "$same"
    if [ "$mode" = memory ]; then echo "$i $threads $ir" >>"$work/counts"; fi
  done
done
echo
i=0
for b in "$@"; do
  i=$((i + 1))
  ratio=$(awk -v i="$i" '$1 == i { ir[$2] = $3 }
    END { printf "%.3f", ir[2] / ir[1] }' "$work/counts")
  echo "two threads over one, in memory: $ratio  $b"
done
