#!/bin/sh
# nest --requests in bounded memory (docs/benchmarks.md, "nest
# streamed"): a multitier trace of N messages from maketrace
# (samples/multitier-long.conf, binary), nested with --search stream on one
# thread without an export, with --requests as CSV and as OTLP, on two
# threads with CSV, with `mpirun -np 2` (one thread a rank; needs a bbprof
# built with -DBBPROF_MPI=ON, as the release preset builds, and mpirun;
# MPI=0 leaves it out), and in memory with CSV;
# wall and user seconds and peak memory (/usr/bin/time) of each, the bytes
# written, and whether every streamed CSV holds the same bytes and the
# in-memory one the same request ids.
#
#   bench/nest_requests_bench.sh [N]      (default 20000000 messages)
#
# Uses $BBPROF or build/release/cli/bbprof; the trace, the exports and the
# spool go to ${TMPDIR:-/tmp} (about 6 GB for the default N, most of it the
# OTLP file) and are removed at the end.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
bbprof=${BBPROF:-$here/build/release/cli/bbprof}
n=${1:-20000000}
work=$(mktemp -d "${TMPDIR:-/tmp}/nest-requests.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$bbprof" maketrace "$here/samples/multitier-long.conf" -q --seed 1 \
  --messages "$n" -o "$work/t.bbt"
t="$work/t.bbt"

run() {  # label, then nest's arguments
  label=$1
  shift
  /usr/bin/time -f "$label: %e s wall, %U s user, %M KB peak" \
    "$bbprof" nest "$t" -q "$@" 2>&1 >/dev/null | grep -v '^bbprof nest: clock skew'
}
size() { echo "  wrote $(stat -c %s "$1") bytes"; }

run "stream, 1 thread, no export" --search stream --threads 1 --json "$work/j.json"
run "stream, 1 thread, --requests CSV" --search stream --threads 1 \
  --requests "$work/s1.csv"
size "$work/s1.csv"
run "stream, 1 thread, --requests OTLP" --search stream --threads 1 \
  --requests "$work/s1.otlp.json"
size "$work/s1.otlp.json"
rm -f "$work/s1.otlp.json"
run "stream, 2 threads, --requests CSV" --search stream --threads 2 \
  --requests "$work/s2.csv"
if [ "${MPI:-1}" = 1 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  start=$(date +%s.%N)
  mpirun -np 2 --oversubscribe --mca btl self,tcp --mca btl_tcp_if_include lo \
    --mca oob_tcp_if_include lo \
    /usr/bin/time -f "  a rank: %U s user, %M KB peak" \
    "$bbprof" nest "$t" -q --threads 1 --requests "$work/mpi.csv" 2>&1 >/dev/null |
    grep '^  a rank'
  end=$(date +%s.%N)
  echo "mpirun -np 2, 1 thread a rank, --requests CSV: $(awk "BEGIN { printf \"%.2f\", $end - $start }") s wall"
fi
run "memory, 1 thread, --requests CSV" --search memory --threads 1 \
  --requests "$work/m.csv"

for f in s2.csv mpi.csv; do
  [ -f "$work/$f" ] || continue
  cmp -s "$work/s1.csv" "$work/$f" && echo "$f: the bytes of one thread" ||
    echo "$f: DIFFERENT bytes"
done
python3 - "$work" <<'EOF'
import csv, os, sys
work = sys.argv[1]
def ids(name):
    with open(os.path.join(work, name), newline="") as f:
        rows = csv.reader(f)
        next(rows)
        return [r[0] for r in rows]
s, m = ids("s1.csv"), ids("m.csv")
print("requests: streamed %d, in memory %d, ids in common %d" %
      (len(s), len(m), len(set(s) & set(m))))
EOF
