#!/bin/sh
# What stream segments cost on real traffic (docs/nesting.md, "The
# stream driver"): each trace of a real-stack capture folder (as
# bench/real_stack_accuracy.sh keeps them: MIX-LEVEL.trace and
# MIX-LEVEL.skewed.trace, with the true x-request-id as pathids; the
# .small.trace variants are left out) nested in
# memory and with --search stream in segments of each SIZE messages, its
# requests exported (OTLP) and scored by `bbprof eval RESULT --truth TRACE`;
# prints each run's request accuracy and share of path instances found, then
# their means per segment size.
#
#   bench/stream_segments_accuracy.sh DIR... [-- SIZE...]
#                                   (default sizes: 10000 20000 40000)
#
# Uses $BBPROF or build/release/cli/bbprof, and python3.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
bbprof=${BBPROF:-$here/build/release/cli/bbprof}
dirs=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do dirs="$dirs $1"; shift; done
[ $# -gt 0 ] && shift
sizes=${*:-10000 20000 40000}
work=$(mktemp -d "${TMPDIR:-/tmp}/stream-accuracy.XXXXXX")
trap 'rm -rf "$work"' EXIT

for d in $dirs; do
  for t in "$d"/*.trace; do
    case $t in *.small.trace) continue ;; esac  # the small-skew variant
    for s in memory $sizes; do
      if [ "$s" = memory ]; then f="--search memory"; else
        f="--search stream --segment-messages $s"; fi
      # shellcheck disable=SC2086
      "$bbprof" nest "$t" -q $f --json "$work/r.json" \
        --requests "$work/r.otlp.json" >/dev/null
      "$bbprof" eval "$work/r.json" --truth "$t" -q --json "$work/e.json" \
        >/dev/null
      python3 -c "import json, sys; e = json.load(open(sys.argv[1]))
print(sys.argv[2], sys.argv[3], e['request_accuracy'],
      e['instances']['correct'] / e['instances']['true'])" \
        "$work/e.json" "$s" "$t"
    done
  done
done | tee "$work/all.txt"
python3 - "$work/all.txt" <<'PY'
import collections, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    size, trace, requests, instances = line.split()
    runs[size].append((float(requests), float(instances)))
for size, r in runs.items():
    print(f"{size}: {len(r)} traces, request accuracy "
          f"{100 * sum(a for a, _ in r) / len(r):.2f}%, path instances found "
          f"{100 * sum(b for _, b in r) / len(r):.2f}%")
PY
