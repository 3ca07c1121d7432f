#!/usr/bin/env bash
# Nesting accuracy under clock skew of 50 us to 2 ms (paper section
# 7.5.6): the default (automatic per-edge windows) against hand-tuned fixed
# windows, the first-come-first-served baseline and the paper's algorithm
# (no refinement, no timeline passes), all in one run on the same traces.
# Each cell is "instance FN% (share of all messages on a correct path)" from
# 'bbprof eval' (bench/lib/nest_eval.sh). Skew is added with 'bbprof skewer'
# (every message stamped by its sender's clock). Markdown table; not a test.
# Usage: bench/nest_skew.sh [BBPROF] [WORKDIR]
#   env: SAMPLES (default "multitier-normal petstore-normal"; async-fanin has
#        its own scenarios), SEED (1), COLUMNS (default "auto w0 w0.0001
#        w0.0003 w0.001 w0.003 fcfs paper"; also wX for any X, notimeline)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build/release/cli/bbprof}
W=${2:-$(mktemp -d)}
SEED=${SEED:-1}
mkdir -p "$W"
. bench/lib/nest_eval.sh

# Scenarios: a name and skewer flags per sample.
scenarios() {
  case $1 in
    multitier-normal)
      echo "none|"
      echo "50us, 2 nodes|--offset WS1=-0.00005 --offset AUTH=0.00005"
      echo "300us, 3 nodes|--offset WS1=-0.0003 --offset AUTH=0.0002 --offset AP1=-0.0003"
      echo "1ms, 4 nodes|--offset WS1=-0.001 --offset WS2=0.0008 --offset AP2=-0.001 --offset DB=0.0005"
      echo "2ms, 4 nodes + 2ppm drift|--offset WS1=-0.002 --offset AUTH=0.0015 --offset AP1=-0.0007 --offset DB=-0.002 --drift AP2=2"
      ;;
    async-fanin)
      echo "none|"
      echo "1ms, 3 nodes|--offset COMPOSE=-0.001 --offset STORE=0.0008 --offset FE=0.0005"
      ;;
    *)
      echo "none|"
      echo "50us, 2 nodes|--offset TheShoppingClientController=-0.00005 --offset CatalogEJB=0.00005"
      echo "300us, 3 nodes|--offset TheShoppingClientController=-0.0003 --offset CatalogEJB=0.0002 --offset /template.jsp=-0.0003"
      echo "1ms, 4 nodes|--offset TheShoppingClientController=-0.001 --offset CatalogEJB=0.0008 --offset /template.jsp=-0.001 --offset ProductEJB=0.0005"
      echo "2ms, 4 nodes + 2ppm drift|--offset TheShoppingClientController=-0.002 --offset CatalogEJB=0.0015 --offset /template.jsp=-0.0007 --offset ProductEJB=-0.002 --drift CustomerEJB=2"
      ;;
  esac
}

COLUMNS_=${COLUMNS:-"auto w0 w0.0001 w0.0003 w0.001 w0.003 fcfs paper"}
flags() {
  case $1 in
    auto) echo "" ;;
    w*) echo "--skew-window ${1#w}" ;;
    fcfs) echo "--assign fcfs" ;;
    paper) echo "--refine-passes 0 --timeline-passes 0" ;;
    notimeline) echo "--timeline-passes 0" ;;
  esac
}

for sample in ${SAMPLES:-multitier-normal petstore-normal}; do
  t="$W/$sample.bbt"
  [ -f "$t" ] || "$B" maketrace "samples/$sample.conf" -o "$t" --seed "$SEED" -q
  echo
  echo "$sample (seed $SEED)"
  echo
  head="| skew |"
  sep="|---|"
  for c in $COLUMNS_; do head="$head $c |"; sep="$sep---|"; done
  echo "$head"
  echo "$sep"
  i=0
  while IFS='|' read -r name sk; do
    i=$((i + 1))
    st="$t"
    if [ -n "$sk" ]; then
      st="$W/$sample.s$i.bbt"
      # shellcheck disable=SC2086
      [ -f "$st" ] || "$B" skewer "$t" $sk -o "$st" -q
    fi
    row="| $name |"
    for c in $COLUMNS_; do
      # shellcheck disable=SC2046
      row="$row $(nest_eval_fn "$B" "$st" "$W/$sample.s$i.$c" $(flags "$c")) |"
    done
    echo "$row"
  done < <(scenarios "$sample")
done
