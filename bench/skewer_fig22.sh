#!/usr/bin/env bash
# Figure 22 of the paper (section 7.5.6): nesting accuracy under clock skew.
# Generates the multi-tier trace (samples/multitier-normal.conf, the one
# bench/nest_figures.sh uses), makes WS2's clock 0..60 ms fast (and slow,
# "rev") with 'bbprof skewer --offset WS2=S' (each message stamped by its
# sender's clock, as when every host sniffs its own traffic), runs nest with
# no compensation, with a 30 ms skew window ("comp") and with the window plus
# smoothing ("comp+smooth"), and scores each with 'bbprof eval' against the
# ground truth. Prints, per skew, the false-negative path-instance rate and
# in parentheses the share of ALL the trace's messages that nest ascribed to
# a correct path: under skew a return can precede its call, nest cannot pair
# them, and eval's truth then covers only the pairable messages, so the FN
# rate alone flatters the skewed runs. Markdown table; not a test.
# Usage: bench/skewer_fig22.sh [BBPROF] [WORKDIR]
#   env: SAMPLE (default multitier-normal), SMOOTH (default 2), WINDOW (0.03),
#        NODE (default WS2), SEED (default 1)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build/release/cli/bbprof}
W=${2:-$(mktemp -d)}
SAMPLE=${SAMPLE:-multitier-normal}
SMOOTH=${SMOOTH:-2}
WINDOW=${WINDOW:-0.03}
NODE=${NODE:-WS2}
SEED=${SEED:-1}
mkdir -p "$W"
t="$W/$SAMPLE.bbt"
[ -f "$t" ] || "$B" maketrace "samples/$SAMPLE.conf" -o "$t" --seed "$SEED" -q

. bench/lib/nest_eval.sh
fn() {  # fn TRACE NAME NEST_FLAGS...: prints "FN% (messages on correct paths %)"
  local trace=$1 name=$2
  shift 2
  nest_eval_fn "$B" "$trace" "$W/$name" "$@"
}

echo "sample $SAMPLE (seed $SEED), skew at $NODE, skew window $WINDOW s, smoothing $SMOOTH bins"
echo
echo "| $NODE clock | no comp | comp (window) | comp+smooth | rev, no comp | rev, comp | rev, comp+smooth |"
echo "|---|---|---|---|---|---|---|"
for ms in 0 10 20 30 40 50 60; do
  row="| ${ms} ms"
  for sign in "" "-"; do
    s=$(python3 -c "print('%s%.3f' % ('$sign', $ms/1000))")
    if [ "$ms" = 0 ]; then
      st="$t"
    else
      st="$W/skew$s.bbt"
      "$B" skewer "$t" --offset "$NODE=$s" -o "$st" -q
    fi
    row="$row | $(fn "$st" "n$s" --skew-window 0 --smooth 0)"
    row="$row | $(fn "$st" "c$s" --skew-window "$WINDOW" --smooth 0)"
    row="$row | $(fn "$st" "cs$s" --skew-window "$WINDOW" --smooth "$SMOOTH")"
  done
  echo "$row |"
done
