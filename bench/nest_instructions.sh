#!/bin/sh
# nest's work counted in instructions (valgrind's callgrind), the yardstick
# that a shared, noisy machine does not move (docs/benchmarks.md,
# "Instructions, not seconds"): the same run's user time here ranged over
# 30% from one minute to the next, its instruction count not at all. A
# multitier trace of N messages from maketrace (samples/multitier-long.conf,
# seed 1, binary), nested on one thread in memory and streamed, by each
# binary given, with the result's bytes compared between binaries.
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
printf '%-8s %16s  %s\n' mode instructions binary
for mode in memory stream; do
  first=
  for b in "$@"; do
    valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" \
      "$b" nest "$work/t.bbt" -q --threads 1 --search "$mode" \
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
    printf '%-8s %16s  %s%s\n' "$mode" "$ir" "$b" "$same"
  done
done
