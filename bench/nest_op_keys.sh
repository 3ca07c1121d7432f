#!/usr/bin/env bash
# Op-keyed scoreboards (docs/nesting.md): instance false negatives of nest
# with --op-keys on and off, with and without the timeline passes, on
# maketrace traces whose calls carry operation names (seed 1), scored by
# eval in the same run. Usage: bench/nest_op_keys.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BBPROF=${BBPROF:-build/release/cli/bbprof}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
printf '| trace | timeline passes | instance FN, op keys on | off | patterns inferred, on | off |\n'
printf '|---|---|---|---|---|---|\n'
for conf in samples/two-operations.conf bench/data/two-operations-busy.conf \
            samples/multitier-ops.conf bench/data/multitier-parallelism-medium-ops.conf; do
  name=$(basename "$conf" .conf)
  "$BBPROF" maketrace "$conf" -o "$WORK/$name.bbt" --seed 1 -q
  for tl in 2 0; do
    row="| $name | $tl"
    fn=() pats=()
    for keys in on off; do
      "$BBPROF" nest "$WORK/$name.bbt" --op-keys $keys --timeline-passes $tl \
        --json "$WORK/r.json" -q >/dev/null
      "$BBPROF" eval "$WORK/r.json" --truth "$WORK/$name.bbt" --json "$WORK/e.json" -q >/dev/null
      fn+=("$(python3 -c 'import json,sys; e=json.load(open(sys.argv[1])); print("%.2f%%" % (100*e["instances"]["false_negative_rate"]))' "$WORK/e.json")")
      pats+=("$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["patterns"]))' "$WORK/r.json")")
    done
    echo "$row | ${fn[0]} | ${fn[1]} | ${pats[0]} | ${pats[1]} |"
  done
done
