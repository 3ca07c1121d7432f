#!/bin/sh
# bbprof convolve speed and peak memory on Table 1 equivalents and a day of
# traffic (docs/benchmarks.md, "convolve"). Needs a release build:
#   cmake --preset release -DBBPROF_BUILD_BENCHMARKS=OFF && cmake --build build/release --target bbprof
# Usage: bench/convolve_bench.sh [BUILD_DIR]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/release}/cli/bbprof
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" maketrace "$root/samples/multitier-normal.conf" -o "$work/mt.trace" --quiet
"$bin" maketrace "$root/samples/email-relay.conf" -o "$work/relay.trace" --quiet
python3 "$root/bench/convolve_gen.py" email "$work/email.trace"
python3 "$root/bench/convolve_gen.py" day "$work/day.trace"
run() {
  name=$1; shift
  /usr/bin/time -v "$bin" convolve "$@" --quiet --json "$work/$name.json" 2>"$work/$name.time"
  printf '%-12s %8s s  %8s KB  %s\n' "$name" \
    "$(grep 'Elapsed' "$work/$name.time" | awk '{print $NF}')" \
    "$(grep 'Maximum resident' "$work/$name.time" | awk '{print $NF}')" \
    "$(wc -l < "$work/${name}.trace" 2>/dev/null || echo)"
}
cp "$work/mt.trace" "$work/multitier.trace"
run multitier "$work/mt.trace" --quantum 0.01 --root client
run email "$work/email.trace" --quantum 5 --max-delay 3600
run relay "$work/relay.trace" --quantum 0.1 --max-delay 60
run day "$work/day.trace" --quantum 0.0001 --max-delay 0.1
python3 -c "import json,sys; [print(n, [ (p['nodes'], [round(d,4) for d in p['delays_s']], p['count']) for p in json.load(open(sys.argv[1]+'/'+n+'.json'))['paths']]) for n in ['multitier','email','relay','day']]" "$work"
