#!/usr/bin/env bash
# Checks that two bbprof binaries give the same results, byte for byte: run
# before and after a change that must not change behaviour (a move, a split,
# a refactoring), with the binary built before it and the one built after.
#   scripts/same_results.sh OLD_BBPROF NEW_BBPROF [WORK_DIR]
# Inputs: a small trace from every samples/*.conf (maketrace, 4,000 messages;
# made by OLD, and NEW must make the same bytes), samples/*.trace and a few
# captures of ../shared/pcaps ($BBPROF_SHARED_DIR/pcaps if set). On each: nest with its defaults, with
# --threads 2 and with --search stream, writing the text report, --json and
# --requests in Jaeger, OTLP and CSV; on the default run's result also
# report, render (svg, dot), eval against the maketrace truth, and diff;
# convolve (memory and stream) on two samples. Standard output, standard
# error, exit codes and every file are compared. Both binaries run in folders
# of the same layout with the same relative paths, so no field needs masking.
# Prints `identical (N outputs)` and exits 0, or lists what differs and
# exits 1; 2 on a usage error. Takes a minute or two.
set -euo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
old=$(realpath "$1")
new=$(realpath "$2")
for b in "$old" "$new"; do
  [ -x "$b" ] || { echo "same_results: $b is not an executable" >&2; exit 2; }
done
src=$(cd "$(dirname "$0")/.." && pwd)
pcaps="${BBPROF_SHARED_DIR:-$src/../shared}/pcaps"
if [ $# -eq 3 ]; then
  work=$3
  mkdir -p "$work"
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/same_results.XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work/in" "$work/old" "$work/new" "$work/in-new"

# The inputs, under in/ (shared) and in-new/ (NEW's maketrace, compared).
for conf in "$src"/samples/*.conf; do
  name=$(basename "$conf" .conf)
  "$old" maketrace "$conf" -o "$work/in/$name.bbt" --messages 4000 --seed 3 -q
  "$new" maketrace "$conf" -o "$work/in-new/$name.bbt" --messages 4000 --seed 3 -q
done
truth_inputs=$(cd "$work/in" && ls ./*.bbt)
cp "$src"/samples/*.trace "$work/in/"
for p in http_1000_requests_one_dropped_response.pcap.gz grpc_unary.pcap \
  redis_resp_benchmark.pcap postgresql_greenhouse_app.pcap nfs_base.pcap; do
  cp "$pcaps/$p" "$work/in/" || {
    echo "same_results: no $pcaps/$p (set BBPROF_SHARED_DIR)" >&2
    exit 2
  }
done
inputs=$(cd "$work/in" && ls)

# run SIDE TAG ARGS...: runs SIDE's binary in SIDE/ with ARGS, keeping its
# standard output, standard error and exit code as TAG.{out,err,rc}.
run() {
  local side=$1 tag=$2
  shift 2
  local bin=$old
  [ "$side" = new ] && bin=$new
  (cd "$work/$side" && {
    "$bin" "$@" >"$tag.out" 2>"$tag.err"
    echo $? >"$tag.rc"
  }) || true
}

both() {
  run old "$@"
  run new "$@"
}

set +e
for in in $inputs; do
  base=${in%%.*}
  for variant in default threads stream; do
    flags=()
    [ "$variant" = threads ] && flags=(--threads 2)
    [ "$variant" = stream ] && flags=(--search stream)
    t="$base.$variant"
    both "$t.jaeger" nest "../in/$in" "${flags[@]}" --json "$t.json" \
      --requests "$t.jaeger.json"
    both "$t.otlp" nest "../in/$in" "${flags[@]}" --json "$t.otlp-run.json" \
      --requests "$t.otlp.json"
    both "$t.csv" nest "../in/$in" "${flags[@]}" --requests "$t.csv"
  done
  t="$base.default"
  both "$t.report" report "$t.json" -o "$t.html"
  both "$t.svg" render "$t.json" -o "$t.svg.d" --format svg
  both "$t.dot" render "$t.json" -o "$t.dot.d" --format dot --one-page
  if printf '%s\n' "$truth_inputs" | grep -qx "./$in"; then
    both "$t.eval" eval "$t.otlp-run.json" --truth "../in/$in" --json "$t.eval.json"
  fi
done
both diff.results diff multitier-normal.default.json \
  multitier-added-delay.default.json --json diff.json --html diff.html
both diff.text diff multitier-normal.default.json multitier-added-delay.default.json
for in in multitier-short.bbt email-relay.bbt; do
  for search in memory stream; do
    both "conv.$in.$search" convolve "../in/$in" --quantum 0.001 \
      --search "$search" --json "conv.$in.$search.json"
  done
done
set -e

diffs=0
for f in "$work"/in-new/*.bbt; do
  if ! cmp -s "$f" "$work/in/$(basename "$f")"; then
    echo "maketrace differs: $(basename "$f")"
    diffs=1
  fi
done
if ! diff -r "$work/old" "$work/new" >"$work/diff.txt"; then
  grep -E '^(diff|Only|Binary)' "$work/diff.txt" | head -40
  echo "same_results: outputs differ (full diff: $work/diff.txt)" >&2
  diffs=1
fi
count=$(find "$work/old" -type f | wc -l)
if [ $diffs -ne 0 ]; then
  [ $# -eq 3 ] || trap - EXIT
  echo "same_results: DIFFERENT ($count outputs; inputs and outputs kept in $work)"
  exit 1
fi
echo "same_results: identical ($count outputs)"
