#!/bin/sh
# Spread delays (section 5.2.2, docs/convolution.md "How v is chosen"): each
# trace searched with the paper's fixed v of one quantum (--tolerance
# quantum), with the default per-spike choice, and with per-spike windows
# for every spread spike (--tolerance auto), one run after the other, printing the
# time, peak RSS and every path with its hop delays and count, and the
# instances the email-relay paths should carry (from the trace itself).
# Needs a release build:
#   cmake --preset release && cmake --build --preset release -j2
# Usage: bench/convolve_spread.sh [BUILD_DIR]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BBPROF:-${1:-$root/build/release}/cli/bbprof}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" maketrace "$root/samples/email-relay.conf" -o "$work/relay.bbt" --quiet
"$bin" maketrace "$root/samples/multitier-normal.conf" -o "$work/mt.bbt" --quiet
python3 "$root/bench/convolve_gen.py" email "$work/email.trace"
python3 "$root/bench/convolve_gen.py" day "$work/day.trace"
"$bin" convert "$work/relay.bbt" "$work/relay.trace" --quiet
echo "email-relay instances (first hop of each tracelet):"
awk '$2 == "MSG" && ($3 == "2" || $3 == "3") { n[$3 "->" $4]++ }
     END { for (k in n) print "  " k, n[k] }' "$work/relay.trace" | sort
# run NAME INPUT MU FLAGS...: fixed v, the default, then per-spike windows.
run() {
  name=$1 input=$2 mu=$3
  shift 3
  for mode in fixed default spread; do
    tol="--tolerance auto"
    [ "$mode" = fixed ] && tol="--tolerance quantum"
    [ "$mode" = default ] && tol=""
    # shellcheck disable=SC2086
    /usr/bin/time -v "$bin" convolve "$input" --quantum "$mu" "$@" $tol \
      --json "$work/$name-$mode.json" 2>"$work/$name-$mode.time" >/dev/null
    printf '%-10s %-7s %8ss %7s KB\n' "$name" "$mode" \
      "$(grep 'Elapsed' "$work/$name-$mode.time" | awk '{print $NF}' | sed 's/^0://')" \
      "$(grep 'Maximum resident' "$work/$name-$mode.time" | awk '{print $NF}')"
    python3 -c "
import json, sys
j = json.load(open(sys.argv[1]))
print('  variance_s', j['params']['variance_s'])
for p in j['paths']:
    print('  %8d  %s  %s' % (p['count'], '->'.join(p['nodes']),
          ' '.join('%.4g' % d for d in p['delays_s'][1:])))" "$work/$name-$mode.json"
  done
}
run relay "$work/relay.bbt" 0.1 --max-delay 60
run multitier "$work/mt.bbt" 0.01
run mt-1ms "$work/mt.bbt" 0.001
run email "$work/email.trace" 5 --max-delay 3600
run day "$work/day.trace" 0.0001 --max-delay 0.1
