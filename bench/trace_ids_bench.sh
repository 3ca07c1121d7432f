#!/bin/sh
# Bytes a message and read/write speed of the binary trace form on three
# kinds of ids: a maketrace trace with numeric ids and the same
# with textual ids (`c415`, `p828`: every callid and pathid prefixed), traces
# that `bbprof capture` makes of the sample captures, and a trace that
# `bbprof import` makes of recorded spans (bench/spans_gen.py: random 128-bit
# trace ids and 64-bit span ids). Every conversion is checked to round-trip
# to the same text, byte for byte.
#
#   bench/trace_ids_bench.sh [RUNS]
#
# With OLD_BBPROF (and OLD_READ_BENCH) set to the bbprof (trace_read_bench)
# of a build from before a format change, its files are measured beside the
# current ones, and read speed is compared in the same run (best of RUNS,
# default 5, interleaved). PCAPS names the folder of sample captures
# (default /work/shared/pcaps). Uses $BBPROF or build/release/cli/bbprof;
# scratch files go to ${TMPDIR:-/tmp}.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
bbprof=${BBPROF:-$here/build/release/cli/bbprof}
readbench=${READ_BENCH:-$(dirname "$bbprof")/../bench/trace_read_bench}
old=${OLD_BBPROF:-}
oldread=${OLD_READ_BENCH:-}
pcaps=${PCAPS:-/work/shared/pcaps}
runs=${1:-5}
work=$(mktemp -d "${TMPDIR:-/tmp}/trace-ids-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

"$bbprof" maketrace "$here/samples/multitier-long.conf" -o numeric.trace -q
awk 'BEGIN { OFS = "\t" } /^#/ { print; next }
     { if ($5 != "-") $5 = "c" $5; if (NF >= 6 && $6 != "-") $6 = "p" $6; print }' \
  numeric.trace > textual.trace
python3 "$here/bench/spans_gen.py" 50000 spans.json
"$bbprof" import spans.json -o spans.trace -q
: > capture.trace.list
for p in "$pcaps"/*.pcap*; do
  [ -e "$p" ] || continue
  b=$(basename "$p")
  "$bbprof" capture -q -r "$p" -o "capture-$b.trace"
  echo "capture-$b" >> capture.trace.list
done

# bytes a message of NAME.trace: text, current binary, old binary
measure() {
  name=$1
  n=$(grep -vc '^#' "$name.trace" || true)
  "$bbprof" convert "$name.trace" "$name.bbt"
  "$bbprof" convert "$name.bbt" "$name.back.trace"
  cmp -s "$name.trace" "$name.back.trace" || { echo "$name: round trip differs"; exit 1; }
  line="$name: $n messages, text $(stat -c %s "$name.trace"), binary $(stat -c %s "$name.bbt")"
  if [ -n "$old" ]; then
    "$old" convert "$name.trace" "$name.old.bbt"
    line="$line, old binary $(stat -c %s "$name.old.bbt")"
  fi
  echo "$line bytes"
  echo "$n $(stat -c %s "$name.trace") $(stat -c %s "$name.bbt") \
$([ -n "$old" ] && stat -c %s "$name.old.bbt" || echo 0)" >> totals
}
: > totals
for name in numeric textual spans; do measure "$name"; done
: > totals
for name in $(cat capture.trace.list); do measure "$name" > /dev/null; done
awk '{ n += $1; t += $2; b += $3; o += $4 }
     END { printf "captures (all samples): %d messages, text %d, binary %d, old binary %d bytes\n", n, t, b, o }' totals

echo "bytes a message:"
for name in numeric textual spans; do
  n=$(grep -vc '^#' "$name.trace")
  printf '  %-8s text %6.2f  binary %6.2f' "$name" \
    "$(echo "$(stat -c %s "$name.trace") / $n" | bc -l)" \
    "$(echo "$(stat -c %s "$name.bbt") / $n" | bc -l)"
  if [ -n "$old" ]; then
    printf '  old binary %6.2f' "$(echo "$(stat -c %s "$name.old.bbt") / $n" | bc -l)"
  fi
  echo
done

# Read speed, best of $runs interleaved runs (M records/s), and the time of
# a binary-to-binary convert (read + write), best of 3.
echo "read speed, best of $runs (M records/s):"
for _ in $(seq "$runs"); do
  for name in numeric textual spans; do
    "$readbench" "$name.bbt" --numeric-ids "$name.bbt"
    if [ -n "$oldread" ]; then "$oldread" "$name.old.bbt" --numeric-ids "$name.old.bbt"; fi
  done
done | awk '{ k = $1; if ($2 == "(numeric") k = k " numeric-ids"; v = $(NF - 4) + 0;
              if (!(k in b) || v > b[k]) b[k] = v }
            END { for (k in b) printf "  %-32s %6.2f\n", k, b[k] }' | sort
. "$here/bench/lib/best_time.sh"
echo "binary to binary convert (read + write), best of 3 (s):"
for name in numeric textual spans; do
  line="  $name: $(best_time "$bbprof" convert "$name.bbt" copy.bbt)"
  if [ -n "$old" ]; then
    line="$line  old: $(best_time "$old" convert "$name.old.bbt" copy.bbt)"
  fi
  echo "$line"
done
