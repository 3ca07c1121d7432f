#!/bin/sh
# One process, two threads and two MPI ranks on the same trace, in one run
# (docs/benchmarks.md, "nest streamed"): a multitier trace of N
# messages from maketrace (samples/multitier-long.conf, binary), nested with
# --search stream by one process on one thread, by one process on two
# threads, and by `mpirun -np 2` ranks of one thread each (over loopback),
# alternated R times; wall and user seconds and peak memory (the largest
# rank's, /usr/bin/time per rank) of each run, how many messages rank 0
# decoded, and whether the three give the same bytes.
#
#   bench/nest_mpi_bench.sh [N [R]]      (default 20000000 messages, 3 rounds)
#
# Needs a bbprof built with -DBBPROF_MPI=ON ($BBPROF or
# build/release/cli/bbprof, as the release preset builds) and mpirun.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
bbprof=${BBPROF:-$here/build/release/cli/bbprof}
n=${1:-20000000}
rounds=${2:-3}
work=$(mktemp -d "${TMPDIR:-/tmp}/nest-mpi.XXXXXX")
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi="mpirun -np 2 --oversubscribe --mca btl self,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo"

"$bbprof" maketrace "$here/samples/multitier-long.conf" -q --seed 1 \
  --messages "$n" -o "$work/t.bbt"
t="$work/t.bbt"
for r in $(seq "$rounds"); do
  /usr/bin/time -f "one process, 1 thread: %e s wall, %U s user, %M KB peak" \
    "$bbprof" nest "$t" -q --search stream --threads 1 --json "$work/one.json" >/dev/null
  /usr/bin/time -f "one process, 2 threads: %e s wall, %U s user, %M KB peak" \
    "$bbprof" nest "$t" -q --search stream --threads 2 --json "$work/two.json" >/dev/null
  # Without -q: rank 0 says how much of the trace it decoded (each rank
  # reads only its own segments' blocks of a binary trace).
  # shellcheck disable=SC2086
  /usr/bin/time -f "two MPI ranks, 1 thread each: %e s wall (mpirun)" \
    $mpi /usr/bin/time -f "  a rank: %U s user, %M KB peak" \
    "$bbprof" nest "$t" --threads 1 --json "$work/mpi.json" 2>&1 >/dev/null |
    grep -E "rank|wall" | sed 's/^bbprof nest: /  /'
done
for f in two mpi; do
  cmp -s "$work/one.json" "$work/$f.json" && echo "$f: the bytes of one process" ||
    echo "$f: DIFFERENT from one process"
done
