#!/usr/bin/env bash
# Request accuracy of nest on a real stack with ground truth:
# nginx, two load-balanced Python apps, a Node.js event-loop app, a Go tier,
# a Java thread-pool tier, a gRPC tier, Redis and memcached on loopback
# (docs/e2e.md), captured live with --truth-header X-Request-Id.
# Measures the saturation throughput of each route mix first, then runs 10%,
# 30%, 60% and 85% of it; scores each capture as captured and skewed as if
# taken on several hosts ("yes": offsets 50 us to 2 ms, drift; "yes+1ms":
# the same with timestamps cut to 1 ms; "small": offsets 50 us to 200 us,
# no drift), with default nest,
# --timeline-passes 0, the paper's algorithm (--timeline-passes 0
# --skew-window 0), a hand-set --skew-window 0.004 and first-come-first-served
# (--assign fcfs) if this nest has it; with BBPROF_BASE=PATH, also the
# default nest of that binary (e.g. a copy of main's build), in the same run.
# Prints a markdown table (docs/benchmarks.md, "Real stack accuracy"). Needs
# root (live capture). Keeps its captures in WORKDIR when one is given;
# --rescore WORKDIR scores those captures again without servers or root.
#   Usage: sudo bench/real_stack_accuracy.sh [WORKDIR]
#          bench/real_stack_accuracy.sh --rescore WORKDIR
set -euo pipefail
cd "$(dirname "$0")/.."
BBPROF=${BBPROF:-build/release/cli/bbprof}
if [[ "${1:-}" == --rescore ]]; then
  exec python3 tests/e2e/real_stack.py "$BBPROF" --rescore "${@:2}"
fi
exec python3 tests/e2e/real_stack.py "$BBPROF" --bench "$@"
