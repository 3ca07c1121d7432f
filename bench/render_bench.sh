#!/usr/bin/env bash
# Render benchmark: a generated 500-pattern nesting result drawn as SVG (one
# file per pattern, and one page), as dot text, and as PNG.
#   bench/render_bench.sh [PATTERNS]      (default 500)
# Uses build/release/cli/bbprof unless BBPROF is set. Prints wall seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
BBPROF=${BBPROF:-build/release/cli/bbprof}
N=${1:-500}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 bench/render_gen.py "$N" > "$tmp/result.json"
nodes=$(python3 -c "import json,sys
d=json.load(open(sys.argv[1]))
def c(n): return 1+sum(c(x) for x in n['children'])
print(sum(c(p['root']) for p in d['patterns']))" "$tmp/result.json")
echo "patterns=$N nodes=$nodes"
run() {
  local label=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  "$BBPROF" render "$tmp/result.json" -q "$@"
  t1=$(date +%s.%N)
  printf '%-28s %6.2f s\n' "$label" "$(echo "$t1 - $t0" | bc)"
}
run "dot, per pattern"  -f dot -o "$tmp/dot"
run "svg, per pattern"  -f svg -o "$tmp/svg"
run "svg, one page"     -f svg --one-page -o "$tmp/page"
run "png, per pattern"  -f png -o "$tmp/png"
# Baseline in the same run: the dot program laying out the same 500 graphs
# (one process, all files), and writing them without fsync.
t0=$(date +%s.%N); dot -Tsvg -O "$tmp"/dot/pattern-*.dot; t1=$(date +%s.%N)
printf '%-28s %6.2f s\n' "baseline: dot -Tsvg -O" "$(echo "$t1 - $t0" | bc)"
ls "$tmp/svg" | wc -l | xargs echo "svg files:"
du -sh "$tmp/page/patterns.svg" | cut -f1 | xargs echo "one-page svg size:"
