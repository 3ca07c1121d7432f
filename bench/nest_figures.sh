#!/usr/bin/env bash
# Accuracy and speed of `bbprof nest` on the maketrace samples (paper
# sections 7.5 and Table 1). Not a test: prints a Markdown table for
# docs/benchmarks.md. Usage: bench/nest_figures.sh [BBPROF] [WORKDIR]
# The machine is shared and noisy: compare numbers from one run only.
# nest runs on one thread (--threads 1; the default, auto, takes the usable
# cores), so its wall time and peak memory are one core's, as documented.
set -euo pipefail
B=${1:-build/release/cli/bbprof}
W=${2:-$(mktemp -d)}
S=$(dirname "$0")/../samples
mkdir -p "$W"
echo "| sample | messages | parallelism | patterns (true/inferred) | instance FN | instance FP | message err | top-N FN (N=1,5,10,30) | latency err (weighted/max) | nest wall s | nest peak MB |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for name in ${SAMPLES:-children-parallel children-0-2 children-d-cc penalty-breaker multitier-normal multitier-added-delay multitier-parallelism-high multitier-long}; do
  t="$W/$name.bbt"
  [ -f "$t" ] || "$B" maketrace "$S/$name.conf" -o "$t" -q
  /usr/bin/time -f "%e %M" -o "$W/$name.time" "$B" nest "$t" --threads 1 --json "$W/$name.json" --requests "$W/$name.otlp.json" -q > "$W/$name.txt"
  "$B" eval "$W/$name.json" --truth "$t" --json "$W/$name.eval.json" -q > /dev/null
  read -r wall kb < "$W/$name.time"
  python3 - "$W/$name.json" "$W/$name.eval.json" "$name" "$wall" "$kb" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); e = json.load(open(sys.argv[2]))
name, wall, kb = sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
tn = {p["n"]: p for p in e["top_n"]["curve"]}
def fn(n):
    p = tn.get(n)
    return "-" if p is None else "%d" % p["false_negatives_tolerant"]
print("| %s | %d | %.2f | %d/%d | %.2f%% | %.2f%% | %.2f%% | %s | %.2f%% / %.2f%% | %.2f | %.0f |" % (
    name, r["input"]["messages"], r["input"]["mean_parallelism"],
    e["patterns"]["true"], e["patterns"]["inferred"],
    100 * e["instances"]["false_negative_rate"], 100 * e["instances"]["false_positive_rate"],
    100 * e["messages"]["error_rate"], ",".join(fn(n) for n in (1, 5, 10, 30)),
    100 * e["latency"]["relative_error_weighted"], 100 * e["latency"]["relative_error_max"],
    wall, kb / 1024))
PY
done
