#!/usr/bin/env bash
# Installs the Debian packages bbprof needs to build, test and demo, and the
# npm packages its tests check exports with (under build/npm).
# Idempotent and quick when everything is already there.
set -euo pipefail

PACKAGES=(
  # build
  build-essential cmake ninja-build pkg-config
  # the asan preset builds with clang, and the fuzz targets link libFuzzer
  clang libfuzzer-14-dev
  # libraries
  libpcap-dev libfftw3-dev libboost-program-options-dev libgraphviz-dev
  nlohmann-json3-dev libzstd-dev zlib1g-dev libdeflate-dev libnghttp2-dev
  # nest's MPI driver (-DBBPROF_MPI=ON, as the release preset builds) and
  # its two-rank test
  openmpi-bin libopenmpi-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev python3 tshark tcpdump
  time  # /usr/bin/time -v: peak memory in bench/
  universal-ctags  # scripts/long_functions.sh
  # real servers for the end-to-end capture tests (loopback only); nodejs
  # also checks exports against their consumers' definitions (tests/nesting)
  nginx-light redis-server dnsmasq-base memcached nodejs
  # the real stack's thread-pool (Java), goroutine (Go) and gRPC (grpcio)
  # tiers, compiled or run at test time (tests/e2e/real_stack.py)
  openjdk-17-jdk-headless golang-go python3-grpcio
  # the HTML report's test in a real headless browser (tests/viz) and the
  # screenshots in docs/
  chromium
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm comes with a NodeSource nodejs; Debian ships it as a package of its own,
# which conflicts with NodeSource's, so it is asked for only when absent.
command -v npm >/dev/null 2>&1 || missing+=(npm)
install_npm() {
  # The official OTLP protobuf definitions, compiled by protobufjs: the test
  # of 'nest --requests x.otlp.json' (tests/nesting/otlp_check.js) parses
  # the export with them. This version still ships the compiled root.js.
  local prefix
  prefix="$(cd "$(dirname "$0")/.." && pwd)/build/npm"
  [ -f "$prefix/node_modules/@opentelemetry/otlp-proto-exporter-base/package.json" ] && return 0
  mkdir -p "$prefix"
  echo "install-deps: npm install @opentelemetry/otlp-proto-exporter-base into $prefix" >&2
  npm install --prefix "$prefix" --no-audit --no-fund --ignore-scripts --silent \
    @opentelemetry/otlp-proto-exporter-base@0.51.1 >/dev/null
}

if [ ${#missing[@]} -eq 0 ]; then
  install_npm
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# tshark asks whether non-root users may capture; answer no without a prompt.
echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections 2>/dev/null || true
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
install_npm
