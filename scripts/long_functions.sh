#!/usr/bin/env bash
# Lists the functions of more than N lines (default 100) outside tests/,
# bench/ and fuzz/, longest first: "LINES FILE:LINE NAME". The project keeps
# every function within 100 lines (CONTRIBUTING.md). Needs universal-ctags.
#   scripts/long_functions.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100}
git ls-files '*.cc' '*.h' | grep -v '^\(tests\|bench\|fuzz\)/' |
  xargs ctags-universal --c++-kinds=fp --fields=+ne --output-format=u-ctags -f - 2>/dev/null |
  awk -F'\t' -v n="$n" '{
    line = ""; end = ""
    for (i = 4; i <= NF; i++) {
      if ($i ~ /^line:/) line = substr($i, 6)
      if ($i ~ /^end:/) end = substr($i, 5)
    }
    if (line != "" && end != "" && end - line + 1 > n)
      printf "%5d %s:%s %s\n", end - line + 1, $2, line, $1
  }' | sort -rn
