#!/usr/bin/env bash
# One set of ONNX's backend conformance suites (issue 38) through tunehub's CLI: onnx_suite.py does the work
# (see its header); this wrapper gives it the binary ($TUNEHUB), the committed floor and known failures, a
# CSV ($TH_ONNX_SUITE_CSV) and a tmpfs work dir when there is one. Exits 77 only when Debian's
# libonnx-testdata is not installed.
# Usage: onnx_suite.sh SET [onnx_suite.py flags...]   (SET: node, pytorch-converted, pytorch-operator, simple)
here=$(cd "$(dirname "$0")" && pwd)
SET=${1:?usage: onnx_suite.sh SET [flags]}
shift
: "${TUNEHUB:?TUNEHUB must name the tunehub binary}"
work=${TMPDIR:-/tmp}
[[ -d /dev/shm && -w /dev/shm ]] && work=/dev/shm
exec /usr/bin/python3 "$here/onnx_suite.py" --tunehub "$TUNEHUB" --sets "$SET" \
  --jobs "${TH_ONNX_SUITE_JOBS:-3}" --floor "$here/onnx_suite_floor.txt" --known "$here/onnx_suite_known.txt" \
  --csv "${TH_ONNX_SUITE_CSV:-$work/onnx-suite-$SET.csv}" --work "$work" "$@"
