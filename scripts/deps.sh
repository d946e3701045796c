#!/usr/bin/env bash
# Installs what tunehub needs on a fresh Debian 12 machine that has only gcc, cmake and git. Safe to run again:
# it installs only the packages that are missing. Pass --test to add what the test suite needs.
set -euo pipefail
pkgs=(pkg-config libmicrohttpd-dev libsqlite3-dev libjansson-dev libarchive-dev libxgboost-dev llvm-16-dev
      libonnx-dev protobuf-c-compiler libprotobuf-c-dev libpq-dev libssl-dev curl)
if [[ "${1:-}" == "--test" ]]; then
  pkgs+=(sqlite3 jq python3-torch python3-torchvision python3-numpy chromium wrk slowhttptest clang-16 libclang-rt-16-dev skopeo postgresql-15 prometheus openssl
        libonnx-testdata python3-onnx clang-format libopenblas0-pthread
        python3-venv python3-pip python3-setuptools)
  # libopenblas0-pthread: Debian's python3-torch runs its linear layers in whatever libblas.so.3 is selected,
  # and the reference BLAS that comes with it does 1.3 GFLOP/s here: the torch side of the bert and vit
  # conformance tests took 40 s a forward pass (OpenBLAS becomes the selected libblas.so.3 when installed)
  # Node.js may come from elsewhere (e.g. a newer build with its own npm); Debian's conflicts with it, so
  # install Debian's only when there is no node/npm at all.
  command -v node >/dev/null || pkgs+=(nodejs)
  command -v npm >/dev/null || pkgs+=(npm)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if (( ${#missing[@]} )); then
  echo "tunehub: installing ${missing[*]}"
  SUDO=""
  [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
