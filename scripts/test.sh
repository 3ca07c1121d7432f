#!/usr/bin/env bash
# The test command of the README and of CI: installs what is needed, builds
# with warnings as errors, and runs every test twice: in an optimised build,
# and in a build under AddressSanitizer + UndefinedBehaviorSanitizer.
#   scripts/test.sh            both builds
#   scripts/test.sh release    only the optimised build (quicker, for development)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

JOBS=$(nproc)
presets=("${@:-release asan}")
# shellcheck disable=SC2206
presets=(${presets[*]})
for preset in "${presets[@]}"; do
  echo "=== [$preset] configure and build" >&2
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$JOBS"
  echo "=== [$preset] test" >&2
  ctest --preset "$preset" -j "$JOBS" --timeout 600
done
