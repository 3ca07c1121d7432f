#!/usr/bin/env bash
# Accuracy of the nesting algorithm on the paper's scenarios (section 7.5),
# at default parameters: generates each sample with maketrace (seed 1),
# runs nest, scores it with eval against the ground truth, and prints one
# table row per sample. Usage: bench/nest_accuracy.sh [SAMPLE.conf ...]
set -euo pipefail
cd "$(dirname "$0")/.."
BBPROF=${BBPROF:-build/release/cli/bbprof}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
samples=("$@")
if [ ${#samples[@]} -eq 0 ]; then
  samples=(children-parallel children-0-2 children-d-cc penalty-breaker
           multitier-normal multitier-added-delay multitier-parallelism-medium
           multitier-parallelism-high petstore-normal)
fi
printf '| sample | messages | parallelism | instance FN | instance FP | pattern FN | worst top-N FN rate (N<=30) | N with FN > 1/N | latency error (weighted) |\n'
printf '|---|---|---|---|---|---|---|---|---|\n'
for s in "${samples[@]}"; do
  s=${s%.conf}; s=${s#samples/}
  "$BBPROF" maketrace "samples/$s.conf" -o "$WORK/$s.bbt" --seed 1 -q
  "$BBPROF" nest "$WORK/$s.bbt" --json "$WORK/$s.json" --requests "$WORK/$s.otlp.json" -q >/dev/null
  "$BBPROF" eval "$WORK/$s.json" --truth "$WORK/$s.bbt" --json "$WORK/$s.eval.json" -q >/dev/null
  python3 - "$WORK/$s.json" "$WORK/$s.eval.json" "$s" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); e = json.load(open(sys.argv[2])); name = sys.argv[3]
curve = e["top_n"]["curve"]
worst = max((p["rate"] for p in curve), default=0.0)
over = [p["n"] for p in curve if p["false_negatives"] > 1]
print(f"| {name} | {r['input']['messages']:,} | {r['input']['mean_parallelism']:.2f} "
      f"| {100*e['instances']['false_negative_rate']:.2f}% | {100*e['instances']['false_positive_rate']:.2f}% "
      f"| {e['patterns']['false_negatives']} of {e['patterns']['true']} | {worst:.3f} "
      f"| {','.join(map(str, over)) or 'none'} | {100*e['latency']['relative_error_weighted']:.2f}% |")
PY
done
