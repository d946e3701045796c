#!/usr/bin/env bash
# Integration tests of the client side of issue 40 against the real daemon on 127.0.0.1:
#   auto    ?target=auto: the target chosen from X-Tunehub-CPU-Features / X-Tunehub-CPU / X-Tunehub-CUDA-Arch,
#           with X-Tunehub-Target and X-Tunehub-Target-Reason; an AVX2-only machine gets an x86-64-v3 bundle
#           whose manifest needs no AVX-512, this machine's own /proc/cpuinfo flags get native; bad input 400s
#           and queues nothing.
#   client  the Python package (python/) installed offline into a fresh venv and driven by
#           tests/integration/python_client.py.
# Usage: python_client.sh auto|client.
source "$(dirname "$0")/lib.sh"
CASE=${1:?usage: python_client.sh auto|client}
NET=squeezenet_v1.1
M=/models/llvm/$NET/1
# a Haswell's /proc/cpuinfo flags (AVX2, FMA, BMI2; no AVX-512), plus a name no spelling knows
HASWELL="fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr sse sse2 ss
ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc arch_perfmon pebs bts rep_good nopl xtopology nonstop_tsc cpuid
aperfmperf pni pclmulqdq dtes64 monitor ds_cpl vmx est tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid sse4_1 sse4_2 x2apic
movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm cpuid_fault epb invpcid_single pti ssbd ibrs
ibpb stibp tpr_shadow vnmi flexpriority ept vpid ept_ad fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid xsaveopt
dtherm ida arat pln pts md_clear flush_l1d frobnicate"
HASWELL=$(echo $HASWELL | tr ' ' ',')
njobs() { curl -fsS "$BASE/jobs" | jq '.jobs | length'; }

case "$CASE" in
auto)
  start_daemon
  # without a header naming the client's machine: 400 that names both headers, nothing queued
  expect_status 400 "$BASE$M?target=auto"
  body_has invalid_target; body_has X-Tunehub-CPU-Features; body_has X-Tunehub-CPU
  expect_status 400 -H 'X-Tunehub-CPU: pentium-9000' "$BASE$M?target=auto"
  body_has "unknown client CPU 'pentium-9000'"; body_has haswell
  expect_status 400 -H 'X-Tunehub-CPU-Features: avx2' "$BASE/models/cuda/$NET/1?target=auto"
  body_has X-Tunehub-CUDA-Arch
  expect_status 400 -H 'X-Tunehub-CUDA-Arch: sm_50' "$BASE/models/cuda/$NET/1?target=auto"
  body_has "unknown client CUDA arch 'sm_50'"; body_has sm_70
  [[ "$(njobs)" == 0 ]] || fail "a refused target=auto queued a job"
  # cuda: the client's arch when the backend builds it (HEAD never queues: 404 with the choice)
  expect_status 404 -I -H 'X-Tunehub-CUDA-Arch: sm_86' "$BASE/models/cuda/$NET/1?target=auto"
  [[ "$(header X-Tunehub-Target)" == sm_86 ]] || fail "cuda auto chose '$(header X-Tunehub-Target)', not sm_86"
  # this machine's own flags: native
  FLAGS=$(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2 | xargs | tr ' ' ',')
  expect_status 404 -I -H "X-Tunehub-CPU-Features: $FLAGS" "$BASE$M?target=auto"
  [[ "$(header X-Tunehub-Target)" == native ]] \
    || fail "this machine's flags chose '$(header X-Tunehub-Target)' ($(header X-Tunehub-Target-Reason)), not native"
  # the LLVM spellings are taken too: a Haswell by LLVM's names, and by its CPU name
  expect_status 404 -I -H "X-Tunehub-CPU: haswell" "$BASE$M?target=auto"
  [[ "$(header X-Tunehub-Target)" == x86-64-v3 ]] || fail "CPU haswell chose '$(header X-Tunehub-Target)'"
  expect_status 404 -I -H "X-Tunehub-CPU-Features: sse3,ssse3,sse4.1,sse4.2,popcnt,cx16,sahf" "$BASE$M?target=auto"
  [[ "$(header X-Tunehub-Target)" == x86-64-v2 ]] || fail "a v2 list chose '$(header X-Tunehub-Target)'"
  expect_status 404 -I -H "X-Tunehub-CPU-Features: sse,sse2" "$BASE$M?target=auto"
  [[ "$(header X-Tunehub-Target)" == x86-64 ]] || fail "a baseline list chose '$(header X-Tunehub-Target)'"
  [[ "$(njobs)" == 0 ]] || fail "HEAD queued a job"
  # an AVX2-only machine: built and served for x86-64-v3, a bundle that needs no AVX-512
  expect_status 200 -H "X-Tunehub-CPU-Features: $HASWELL" "$BASE$M?target=auto&wait=600"
  [[ "$(header X-Tunehub-Target)" == x86-64-v3 ]] || fail "the AVX2 machine got '$(header X-Tunehub-Target)'"
  REASON=$(header X-Tunehub-Target-Reason)
  [[ "$REASON" == *"x86-64-v3 covered"* && "$REASON" == *"ignored unknown features: "*frobnicate* ]] \
    || fail "reason: $REASON"
  if grep -q avx512f /proc/cpuinfo; then [[ "$REASON" == *"client lacks "*avx512f* ]] || fail "reason: $REASON"; fi
  [[ "$(header Content-Disposition)" == *"${NET}_llvm-x86-64-v3_b1_v1.tar"* ]] || fail "$(header Content-Disposition)"
  tar -xOf "$TMP/body" manifest.json >"$TMP/manifest.json"
  jq -e '.target.required_features | test("avx2") and (test("avx512") | not)' "$TMP/manifest.json" >/dev/null \
    || fail "the v3 bundle's features: $(jq -c .target "$TMP/manifest.json")"
  # the manifest route takes auto too, and answers the same version
  expect_status 200 -H "X-Tunehub-CPU-Features: $HASWELL" "$BASE$M/manifest?target=auto"
  jq_ok '.target.cpu == "x86-64-v3"'
  ;;
client)
  # a fresh venv that sees Debian's numpy; the package built from a copy (pip writes build files beside it)
  /usr/bin/python3 -m venv --system-site-packages "$TMP/venv" || fail "python3 -m venv failed (python3-venv)"
  cp -r "$TH_SRC/python" "$TMP/src"
  "$TMP/venv/bin/pip" install --no-build-isolation --no-index --no-deps -q "$TMP/src" >"$TMP/pip.log" 2>&1 \
    || { cat "$TMP/pip.log"; fail "pip install --no-build-isolation ./python failed offline"; }
  echo "s3cret-token-123" >"$TMP/token"
  start_daemon --token-file "$TMP/token"
  mkdir -p "$TMP/work"
  XDG_CACHE_HOME="$TMP/cache" "$TMP/venv/bin/python" "$(dirname "$0")/python_client.py" "$BASE" "$TUNEHUB" \
    "$TMP/work" "$DATA" "$TMP/venv/bin" "$TMP/token" || fail "python_client.py failed"
  ;;
*) fail "unknown case $CASE" ;;
esac
echo "python_client $CASE: ok"
