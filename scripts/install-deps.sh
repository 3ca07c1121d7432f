#!/usr/bin/env bash
# Installs the Debian packages bbprof needs to build, test and demo.
# Idempotent and quick when everything is already there.
set -euo pipefail

PACKAGES=(
  # build
  build-essential cmake ninja-build pkg-config
  # libraries
  libpcap-dev libfftw3-dev libboost-program-options-dev libgraphviz-dev
  nlohmann-json3-dev libzstd-dev zlib1g-dev libdeflate-dev libnghttp2-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev python3 tshark tcpdump
  # real servers for the end-to-end capture tests (loopback only)
  nginx-light redis-server dnsmasq-base memcached nodejs
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
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
