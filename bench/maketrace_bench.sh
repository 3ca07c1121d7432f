#!/bin/sh
# Generation speed of `bbprof maketrace`, in messages per second, to a binary
# (.bbt) and a text trace, each compared in the same run with `cat` of the
# file it produced (the cost of merely moving those bytes). The machine is
# shared and noisy: the ratios are what we claim, not the absolute numbers.
#
#   bench/maketrace_bench.sh [MESSAGES] [CONFIG]
#
# Defaults: 5000000 messages of samples/multitier-parallelism-high.conf
# (mean per-node parallelism about 45). Uses $BBPROF or
# build/release/cli/bbprof; scratch files go to ${TMPDIR:-/tmp}.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
bbprof=${BBPROF:-$here/build/release/cli/bbprof}
genbench=${GENBENCH:-$(dirname "$bbprof")/../bench/maketrace_generator_bench}
messages=${1:-5000000}
config=${2:-$here/samples/multitier-parallelism-high.conf}
work=$(mktemp -d "${TMPDIR:-/tmp}/maketrace-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

. "$here/bench/lib/best_time.sh"

for ext in bbt trace; do
  out=$work/gen.$ext
  g=$(best_time "$bbprof" maketrace "$config" -o "$out" --messages "$messages" -q)
  n=$(grep -a -o 'written=[0-9]*' "$out" | tail -1 | cut -d= -f2 || true)
  [ -n "$n" ] || n=$messages
  size=$(stat -c %s "$out")
  c=$(best_time sh -c "cat '$out' > /dev/null")
  printf '%-6s %10s msgs %6.1f MB  maketrace %.3f s = %5.2f M msg/s   cat %.3f s   ratio %.1f\n' \
    "$ext" "$n" "$(echo "$size / 1000000" | bc -l)" "$g" \
    "$(echo "$n / $g / 1000000" | bc -l)" "$c" "$(echo "$g / $c" | bc -l)"
done

# The same text generation to a pipe, without the file system: the cost of
# generating and formatting alone.
g=$(best_time sh -c "'$bbprof' maketrace '$config' -o - --messages $messages -q > /dev/null")
printf 'text to /dev/null via stdout: maketrace %.3f s = %5.2f M msg/s\n' "$g" \
  "$(echo "$messages / $g / 1000000" | bc -l)"

# The generator alone (no formatting or writing), if its target was built.
if [ -x "$genbench" ]; then "$genbench" "$config" "$messages"; fi
