#!/bin/sh
# What the stream driver's default segments cost on a real capture longer
# than one segment (docs/nesting.md, "The stream driver"). Takes
# the traces of a folder written by
#   sudo python3 tests/e2e/real_stack.py BBPROF --long SECONDS DIR
# (long.trace as captured and long.skewed.trace, the true x-request-id as
# pathids), nests each in memory, with nest's defaults (which stream a file
# over 64 MiB, in segments of 2,097,152 messages) and with --search stream
# in segments of each SIZE messages; exports the requests (OTLP), scores them
# with `bbprof eval RESULT --truth TRACE` and prints, per run: the request
# accuracy, the share of true path instances found, nest's wall and user
# seconds and peak memory, and the share of the run's latency in the ten
# largest patterns that differ from the in-memory run's.
#
#   bench/stream_long_accuracy.sh DIR [SIZE...]   (default: 1048576 524288)
#
# Uses $BBPROF or build/release/cli/bbprof, python3 and /usr/bin/time.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
bbprof=${BBPROF:-$here/build/release/cli/bbprof}
dir=$1
shift
sizes=${*:-1048576 524288}
work=$(mktemp -d "${TMPDIR:-/tmp}/stream-long.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "| trace | messages | run | request accuracy | path instances found | wall s | user s | peak MB | calls carried | largest pattern share gap (points) |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for t in "$dir"/long.trace "$dir"/long.skewed.trace; do
  [ -f "$t" ] || continue
  messages=$(grep -vc '^#' "$t")
  for run in memory default $sizes; do
    case $run in
      memory) flags="--search memory" ;;
      default) flags="" ;;
      *) flags="--search stream --segment-messages $run" ;;
    esac
    # shellcheck disable=SC2086
    /usr/bin/time -f "%e %U %M" -o "$work/time" "$bbprof" nest "$t" $flags \
      --json "$work/$run.json" --requests "$work/$run.otlp.json" \
      2>"$work/$run.err" >/dev/null
    "$bbprof" eval "$work/$run.json" --truth "$t" -q --json "$work/e.json" \
      >/dev/null
    python3 - "$work" "$run" "$t" "$messages" <<'PY'
import json, os, re, sys
work, run, trace, messages = sys.argv[1:5]
e = json.load(open(os.path.join(work, "e.json")))
wall, user, kb = open(os.path.join(work, "time")).read().split()
err = open(os.path.join(work, run + ".err")).read()
m = re.search(r"(\d[\d,]*) calls? still open carried", err)
carried = m.group(1) if m else "-"

def shares(path):
    r = json.load(open(path))
    total = sum(p["total_latency_s"] for p in r["patterns"]) or 1
    return {p["signature"]: 100 * p["total_latency_s"] / total
            for p in r["patterns"]}

gap = "-"
if run != "memory":
    mem, this = shares(os.path.join(work, "memory.json")), shares(
        os.path.join(work, run + ".json"))
    top = sorted(mem, key=mem.get, reverse=True)[:10]
    gap = "%.2f" % max(abs(mem[s] - this.get(s, 0.0)) for s in top)
name = {"memory": "in memory", "default": "defaults"}.get(
    run, "segments of %s" % run)
print("| %s | %s | %s | %.2f%% | %.2f%% | %s | %s | %d | %s | %s |" % (
    os.path.basename(trace), f"{int(messages):,}", name,
    100 * e["request_accuracy"],
    100 * e["instances"]["correct"] / e["instances"]["true"], wall, user,
    int(kb) // 1024, carried, gap))
PY
  done
done
