#!/usr/bin/env bash
# The README's demo: installs what is needed, builds bbprof, generates the
# paper's multi-tier system (Figure 10) with 200 ms added at WS2, finds its
# causal path patterns with the nesting algorithm, and draws them.
# Everything lands in out/demo/.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
echo "=== building bbprof (release)" >&2
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target bbprof >/dev/null
BBPROF=build/release/cli/bbprof

OUT=out/demo
rm -rf "$OUT"
mkdir -p "$OUT"

echo "=== 1. a synthetic multi-tier trace with ground truth (samples/multitier-added-delay.conf)" >&2
"$BBPROF" maketrace samples/multitier-added-delay.conf -o "$OUT/multitier.trace" --seed 1

echo "=== 2. what is in it" >&2
"$BBPROF" stats "$OUT/multitier.trace"

echo "=== 3. causal path patterns, ranked (nesting algorithm, section 5.1)" >&2
# Every request goes to a Jaeger UI JSON file too (load it with the UI's
# "JSON File" upload); eval scores the parent choices from it.
"$BBPROF" nest "$OUT/multitier.trace" --json "$OUT/result.json" --svg "$OUT/svg" \
  --requests "$OUT/requests.jaeger.json" --report "$OUT/report.html"

echo "=== 4. how accurate was that? (scored against the trace's ground truth)" >&2
"$BBPROF" eval "$OUT/result.json" --truth "$OUT/multitier.trace" --max-n 10

echo >&2
echo "Every request is in $OUT/requests.jaeger.json: open it in the Jaeger UI" >&2
echo "(Search, then 'JSON File'); one SVG per pattern is in $OUT/svg/." >&2
echo "The report (one HTML file, works offline): open it in a browser:" >&2
echo "$(pwd)/$OUT/report.html"
