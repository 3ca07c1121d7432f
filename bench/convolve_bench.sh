#!/bin/sh
# bbprof convolve speed and peak memory on Table 1 equivalents, a day of
# traffic and three days of the same traffic, in-memory search against
# streaming search (docs/benchmarks.md, "convolve"). Needs a release build:
#   cmake --preset release && cmake --build --preset release -j2
# Usage: bench/convolve_bench.sh [BUILD_DIR]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BBPROF:-${1:-$root/build/release}/cli/bbprof}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" maketrace "$root/samples/multitier-normal.conf" -o "$work/multitier.trace" --quiet
"$bin" maketrace "$root/samples/email-relay.conf" -o "$work/relay.trace" --quiet
python3 "$root/bench/convolve_gen.py" email "$work/email.trace"
python3 "$root/bench/convolve_gen.py" day "$work/day.trace"
python3 "$root/bench/convolve_gen.py" day "$work/day3.trace" 3
"$bin" convert "$work/day.trace" "$work/day.bbt" --quiet
"$bin" convert "$work/day3.trace" "$work/day3.bbt" --quiet
printf '%-16s %-7s %9s %10s %6s %9s\n' trace search 'time' 'peak RSS' passes held
# run NAME INPUT SEARCH FLAGS...: one run, its JSON kept as NAME-SEARCH.json.
run() {
  name=$1 input=$2 search=$3
  shift 3
  /usr/bin/time -v "$bin" convolve "$input" "$@" --search "$search" \
    --json "$work/$name-$search.json" 2>"$work/$name-$search.time" >/dev/null
  printf '%-16s %-7s %8ss %7s KB %6s %9s\n' "$name" "$search" \
    "$(grep 'Elapsed' "$work/$name-$search.time" | awk '{print $NF}' | sed 's/^0://')" \
    "$(grep 'Maximum resident' "$work/$name-$search.time" | awk '{print $NF}')" \
    "$(sed -n 's/.*FFT), \([0-9]*\) pass.*/\1/p' "$work/$name-$search.time")" \
    "$(sed -n 's/.*at most \([0-9]*\) messages held.*/\1/p' "$work/$name-$search.time")"
}
# both NAME INPUT FLAGS...: memory then stream, and their documents compared.
both() {
  name=$1 input=$2
  shift 2
  run "$name" "$input" memory "$@"
  run "$name" "$input" stream "$@"
  cmp -s "$work/$name-memory.json" "$work/$name-stream.json" ||
    echo "$name: the two searches disagree" >&2
}
both multitier "$work/multitier.trace" --quantum 0.01
both email "$work/email.trace" --quantum 5 --max-delay 3600
both relay "$work/relay.trace" --quantum 0.1 --max-delay 60
both day "$work/day.trace" --quantum 0.0001 --max-delay 0.1
both day.bbt "$work/day.bbt" --quantum 0.0001 --max-delay 0.1
both day3 "$work/day3.trace" --quantum 0.0001 --max-delay 0.1
both day3.bbt "$work/day3.bbt" --quantum 0.0001 --max-delay 0.1
run day3.bbt "$work/day3.bbt" auto --quantum 0.0001 --max-delay 0.1
python3 -c "import json,sys; [print(n, [ (p['nodes'], [round(d,4) for d in p['delays_s']], p['count']) for p in json.load(open(sys.argv[1]+'/'+n+'-stream.json'))['paths']]) for n in ['multitier','email','relay','day','day3']]" "$work"
