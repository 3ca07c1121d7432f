#!/usr/bin/env bash
# Runs one libFuzzer target of fuzz/ (docs/fuzzing.md) and reports its
# figures: executions, executions per second, coverage (cov: edges, ft:
# features), corpus size and crashes.
#
#   scripts/fuzz.sh TARGET SECONDS          a long run; the corpus grows in
#                                            $BBPROF_FUZZ_DIR/TARGET (default
#                                            ~/.cache/bbprof-fuzz), outside the
#                                            repository, and crashes land in
#                                            $BBPROF_FUZZ_DIR/TARGET-crashes/
#   scripts/fuzz.sh --ci TARGET SECONDS     what the test suite runs: a fresh
#                                            corpus in the build folder
#   scripts/fuzz.sh --list                  the targets
# Options: --build DIR (default build/asan; built there if missing);
#   --cpu: SECONDS are the fuzzer's own CPU seconds, not wall-clock, so that a
#   run on a shared machine (or under nice) is an honest SECONDS of fuzzing.
# Every run first replays the seeds (made by fuzz/make_seeds.py) and the
# regression inputs of fuzz/regressions/TARGET/; exit 1 on any crash, hang,
# leak or UB.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$ROOT/build/asan"
CI=0
LIST=0
CPU=0
while [ $# -gt 0 ]; do
  case "$1" in
    --ci) CI=1; shift ;;
    --build) BUILD="$(cd "$2" && pwd)"; shift 2 ;;
    --list) LIST=1; shift ;;
    --cpu) CPU=1; shift ;;
    -h|--help) sed -n '2,20s/^# \{0,1\}//p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ "$LIST" = 1 ]; then
  sed -n 's/^bbprof_add_fuzzer(\([a-z_0-9]*\) .*/\1/p' "$ROOT/fuzz/CMakeLists.txt" | grep -v '^\$'
  for d in $(sed -n 's/^foreach(decoder \(.*\))$/\1/p' "$ROOT/fuzz/CMakeLists.txt"); do
    echo "decoder_${d//-/_}"
  done
  exit 0
fi
if [ $# -ne 2 ] || ! [[ "$2" =~ ^[0-9]+$ ]]; then
  echo "usage: scripts/fuzz.sh [--ci] [--cpu] [--build DIR] TARGET SECONDS" >&2
  exit 2
fi
TARGET="$1"
SECONDS_TO_RUN="$2"
BIN="$BUILD/fuzz/fuzz_$TARGET"
if [ ! -x "$BIN" ] || [ ! -x "$BUILD/cli/bbprof" ]; then
  [ "$CI" = 1 ] && { echo "fuzz.sh: $BIN is not built" >&2; exit 1; }
  (cd "$ROOT" && cmake --preset asan >/dev/null &&
   cmake --build "$BUILD" --target "fuzz_$TARGET" bbprof)
fi

case "$TARGET" in
  result_json) MAX_LEN=65536 ;;
  *) MAX_LEN=16384 ;;
esac

SEEDS="$BUILD/fuzz/seeds/$TARGET"
if [ "$CI" = 1 ]; then
  WORK="$BUILD/fuzz/ci/$TARGET"
  rm -rf "$WORK" "$SEEDS"
  CORPUS="$WORK/corpus"
  CRASHES="$WORK/crashes"
else
  DIR="${BBPROF_FUZZ_DIR:-$HOME/.cache/bbprof-fuzz}"
  CORPUS="$DIR/$TARGET"
  CRASHES="$DIR/$TARGET-crashes"
fi
mkdir -p "$CORPUS" "$CRASHES"
if [ ! -d "$SEEDS" ]; then
  python3 "$ROOT/fuzz/make_seeds.py" --bbprof "$BUILD/cli/bbprof" \
    --target "$TARGET" --out "$SEEDS.tmp"
  mv "$SEEDS.tmp" "$SEEDS"
fi
REGRESSIONS="$ROOT/fuzz/regressions/$TARGET"
dirs=("$CORPUS" "$SEEDS")
[ -d "$REGRESSIONS" ] && dirs+=("$REGRESSIONS")

# Graphviz and fontconfig keep process-lifetime caches (tests/lsan.supp).
export LSAN_OPTIONS="suppressions=$ROOT/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
LOG="$CORPUS/../$TARGET.log"
[ "$CI" = 1 ] && LOG="$WORK/fuzz.log"
before=$(find "$CRASHES" -type f | wc -l)
start=$(date +%s)
status=0
# -close_fd_mask=3: the targets' own output (a cut capture's warning) would
# drown the log; sanitizer reports still reach it.
args=(-timeout=10 -rss_limit_mb=2048 -max_len="$MAX_LEN" -print_final_stats=1
      -close_fd_mask=3 -artifact_prefix="$CRASHES/" "${dirs[@]}")
cpu_used=""
if [ "$CPU" = 1 ]; then
  # libFuzzer only knows wall-clock limits: watch the process's CPU time
  # (utime + stime of /proc/PID/stat, in clock ticks) and interrupt it when
  # it has had SECONDS. On SIGINT libFuzzer prints its final stats and exits
  # with 72 (fixed in libFuzzer; a crash is 1, a timeout 70, a leak or OOM
  # its own code), after logging "run interrupted".
  ticks=$(getconf CLK_TCK)
  "$BIN" "${args[@]}" >"$LOG" 2>&1 &
  pid=$!
  cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
  while kill -0 "$pid" 2>/dev/null; do
    used=$(cpu_ticks "$pid")
    if [ "$used" -ge $(( SECONDS_TO_RUN * ticks )) ]; then
      cpu_used=$(( used / ticks ))
      kill -INT "$pid" 2>/dev/null || true
      break
    fi
    sleep 1
  done
  wait "$pid" || status=$?
  [ "$status" = 72 ] && [ -n "$cpu_used" ] &&
    grep -q "libFuzzer: run interrupted" "$LOG" && status=0
else
  "$BIN" -max_total_time="$SECONDS_TO_RUN" "${args[@]}" >"$LOG" 2>&1 || status=$?
fi
elapsed=$(( $(date +%s) - start ))

execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$LOG" | tail -1)
last=$(grep -E '^#[0-9]+' "$LOG" | tail -1 || true)
cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
corpus=$(find "$CORPUS" -type f | wc -l)
crashes=$(( $(find "$CRASHES" -type f | wc -l) - before ))
rate=0
[ -n "$execs" ] && [ "$elapsed" -gt 0 ] && rate=$(( execs / elapsed ))
cpu_note=""
[ -n "$cpu_used" ] && cpu_note=" (${cpu_used} CPU s)"
echo "fuzz $TARGET: ${elapsed}s${cpu_note}, ${execs:-0} executions (${rate}/s), cov ${cov:-?}," \
     "ft ${ft:-?}, corpus $corpus new inputs + $(find "$SEEDS" -type f | wc -l) seeds," \
     "$crashes crash(es) (exit $status)"
if [ "$status" -ne 0 ] || [ "$crashes" -ne 0 ]; then
  grep -E 'ERROR|SUMMARY|invariant|Test unit written|^    #[0-9]' "$LOG" | head -40 >&2 || true
  echo "fuzz.sh: log in $LOG; reproduce with: $BIN FILE (from $CRASHES/)" >&2
  exit 1
fi
