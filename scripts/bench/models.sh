#!/bin/bash
# End-to-end model benchmark: tunehub (llvm, fallback configs) vs PyTorch (torchvision) vs ONNX Runtime
# (onnxruntime-node), all on $THREADS threads (default 2), against the FP32 FMA peak measured here.
#
# usage: scripts/bench/models.sh [--networks "resnet-18 ..."] [--batches "1 10"] [--threads 2] [--repeat 20]
#
# Needs the built binary ($TUNEHUB, default build/server/tunehub), /usr/bin/python3 with torch+torchvision
# (apt-get installs python3-torch python3-torchvision if missing) and node/npm (npm install --ignore-scripts
# in scripts/bench if node_modules is missing). Writes ONNX files, bundles and models.csv to scripts/bench/out.
# Run on an otherwise idle machine.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TUNEHUB=${TUNEHUB:-$ROOT/build/server/tunehub}
PY=/usr/bin/python3
NETWORKS="resnet-18 resnet-50 vgg-11 mobilenet-v2 squeezenet_v1.1 inception_v3"
BATCHES="1 10"
THREADS=2
REPEAT=20
while [ $# -gt 0 ]; do
  case "$1" in
    --networks) NETWORKS=$2; shift 2 ;;
    --batches) BATCHES=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "models.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
OUT=$HERE/out
mkdir -p "$OUT"
DATA=$OUT/data
mkdir -p "$DATA"
log() { echo "[models.sh $(date +%H:%M:%S)] $*" >&2; }

# ---- prerequisites ----
[ -x "$TUNEHUB" ] || { echo "models.sh: $TUNEHUB not built" >&2; exit 1; }
if ! "$PY" -c 'import torch, torchvision' 2>/dev/null; then
  log "installing python3-torch python3-torchvision"
  SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update && $SUDO apt-get install -y python3-torch python3-torchvision
fi
HAVE_ORT=1
if [ ! -d "$HERE/node_modules/onnxruntime-node" ]; then
  log "npm install --ignore-scripts in scripts/bench"
  (cd "$HERE" && npm install --ignore-scripts --no-audit --no-fund) || HAVE_ORT=0
fi
if [ "$HAVE_ORT" = 1 ] && ! (cd "$HERE" && node -e "require('onnxruntime-node')") >/dev/null 2>&1; then
  log "onnxruntime-node does not load (binding missing under node_modules/onnxruntime-node/bin?); ORT column skipped"
  ls -d "$HERE"/node_modules/onnxruntime-node/bin/napi-v*/linux/x64 >&2 2>/dev/null || true
  HAVE_ORT=0
fi
log "torch $("$PY" -c 'import torch; print(torch.__version__)'), onnxruntime-node $( [ "$HAVE_ORT" = 1 ] && node -p "require('$HERE/node_modules/onnxruntime-node/package.json').version" || echo none)"

# ---- FP32 FMA peak ----
PEAK_SRC=$OUT/fma_peak.c
cat > "$PEAK_SRC" <<'CEOF'
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#define ITERS 100000000L
#ifdef __AVX512F__
typedef __m512 V; enum { W = 16 };
#define SET1 _mm512_set1_ps
#define FMA _mm512_fmadd_ps
static float sum(V v) { return _mm512_reduce_add_ps(v); }
#else
typedef __m256 V; enum { W = 8 };
#define SET1 _mm256_set1_ps
#define FMA _mm256_fmadd_ps
static float sum(V v) { float f[8]; _mm256_storeu_ps(f, v); return f[0] + f[7]; }
#endif
enum { ACC = 12 };
static volatile float sink;
static void *work(void *arg) {
  long n = *(long *)arg;
  /* 12 named accumulators (not an array: at -O2 GCC would keep an array in memory) */
  V a = SET1(0.999999f), b = SET1(1e-7f);
  V x0 = SET1(0), x1 = SET1(1), x2 = SET1(2), x3 = SET1(3), x4 = SET1(4), x5 = SET1(5);
  V x6 = SET1(6), x7 = SET1(7), x8 = SET1(8), x9 = SET1(9), x10 = SET1(10), x11 = SET1(11);
  for (long i = 0; i < n; i++) {
    x0 = FMA(x0, a, b); x1 = FMA(x1, a, b); x2 = FMA(x2, a, b); x3 = FMA(x3, a, b);
    x4 = FMA(x4, a, b); x5 = FMA(x5, a, b); x6 = FMA(x6, a, b); x7 = FMA(x7, a, b);
    x8 = FMA(x8, a, b); x9 = FMA(x9, a, b); x10 = FMA(x10, a, b); x11 = FMA(x11, a, b);
  }
  sink = sum(x0) + sum(x1) + sum(x2) + sum(x3) + sum(x4) + sum(x5) + sum(x6) + sum(x7) + sum(x8) +
         sum(x9) + sum(x10) + sum(x11);
  return NULL;
}
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static double run(int threads, long n) {
  pthread_t th[64];
  double t0 = now();
  for (int i = 0; i < threads; i++) pthread_create(&th[i], NULL, work, &n);
  for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
  return 2.0 * W * ACC * (double)n * threads / (now() - t0) / 1e9;
}
int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : ITERS;
  run(1, n / 10);
  for (int t = 1; t <= 2; t++) {
    double best = 0;
    for (int r = 0; r < 3; r++) { double g = run(t, n); if (g > best) best = g; }
    printf("peak_%dt=%.2f\n", t, best);
  }
  printf("isa=%s\n", W == 16 ? "avx512f" : "avx2+fma");
  return 0;
}
CEOF
MARCH=-march=native
grep -q avx512f /proc/cpuinfo || MARCH="-march=native -mno-avx512f"
log "measuring FMA peak ($(grep -q avx512f /proc/cpuinfo && echo AVX-512 || echo AVX2))"
${CC:-cc} -O2 $MARCH -pthread "$PEAK_SRC" -o "$OUT/fma_peak"
PEAK_OUT=$("$OUT/fma_peak")
PEAK1=$(echo "$PEAK_OUT" | sed -n 's/^peak_1t=//p')
PEAK2=$(echo "$PEAK_OUT" | sed -n 's/^peak_2t=//p')
log "FMA peak $(echo "$PEAK_OUT" | sed -n 's/^isa=//p'): 1 thread $PEAK1 GFLOP/s, 2 threads $PEAK2 GFLOP/s"

# ---- per-network GFLOPs (batch 1) from the registry ----
NETLIST=$("$TUNEHUB" networks --data "$DATA")
gflops_of() { echo "$NETLIST" | awk -v n="$1" '$1 == n { print $3 }'; }
input_of() { echo "$NETLIST" | awk -v n="$1" '$1 == n { print $2 }'; }

CSV=$OUT/models.csv
echo "network,batch,tunehub_build_s,tunehub_ms,torch_ms,ort_ms,tunehub_over_torch,tunehub_over_ort,gflop,tunehub_peak_pct,torch_peak_pct,ort_peak_pct,peak_2t_gflops" > "$CSV"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }'; }
share() { awk -v g="$1" -v ms="$2" -v p="$PEAK2" 'BEGIN { if (ms == "" || ms == "-" || ms == 0 || p == "") print "-"; else printf "%.1f", 100 * g / (ms / 1e3) / p }'; }

for NET in $NETWORKS; do
  G1=$(gflops_of "$NET")
  [ -n "$G1" ] || { log "$NET: not in 'tunehub networks', skipped"; continue; }
  IN=$(input_of "$NET"); SIZE=${IN##*x}
  for B in $BATCHES; do
    G=$(awk -v g="$G1" -v b="$B" 'BEGIN { printf "%.2f", g * b }')
    TAG=${NET}_b$B
    # tunehub
    log "$TAG: tunehub build"
    TBUILD=-; TMS=-
    T0=$(date +%s.%N)
    if "$TUNEHUB" build llvm "$NET" "$B" -o "$OUT/$TAG.tar" --data "$DATA" > "$OUT/$TAG.build.log" 2>&1; then
      TBUILD=$(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
      log "$TAG: built in ${TBUILD}s; tunehub run --repeat $REPEAT"
      if RUNOUT=$(TH_NUM_THREADS=$THREADS "$TUNEHUB" run "$OUT/$TAG.tar" --repeat "$REPEAT" 2>&1); then
        echo "$RUNOUT" >&2
        TMS=$(echo "$RUNOUT" | sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' | tail -1)
        [ -n "$TMS" ] || TMS=-
      else
        log "$TAG: tunehub run failed: $RUNOUT"
      fi
    else
      log "$TAG: tunehub build failed (see $OUT/$TAG.build.log)"; tail -5 "$OUT/$TAG.build.log" >&2
    fi
    # torch (+ ONNX export)
    log "$TAG: torch"
    PMS=-
    ONNX=$OUT/$TAG.onnx
    if POUT=$("$PY" "$HERE/models_torch.py" "$NET" "$B" "$THREADS" "$REPEAT" "$ONNX" 2> "$OUT/$TAG.torch.log"); then
      PMS=$(echo "$POUT" | sed -n 's/^median_ms=//p'); grep -E '^torch ' "$OUT/$TAG.torch.log" >&2 || true
    else
      log "$TAG: torch failed"; tail -5 "$OUT/$TAG.torch.log" >&2
    fi
    # ORT
    OMS=-
    if [ "$HAVE_ORT" = 1 ] && [ -s "$ONNX" ]; then
      log "$TAG: onnxruntime"
      if OOUT=$(cd "$HERE" && node models_ort.js "$ONNX" "$THREADS" "$REPEAT" "$B,3,$SIZE,$SIZE" 2> "$OUT/$TAG.ort.log"); then
        OMS=$(echo "$OOUT" | sed -n 's/^median_ms=//p'); cat "$OUT/$TAG.ort.log" >&2
      else
        log "$TAG: ORT failed"; tail -5 "$OUT/$TAG.ort.log" >&2
      fi
    fi
    echo "$NET,$B,$TBUILD,$TMS,$PMS,$OMS,$(ratio "$TMS" "$PMS"),$(ratio "$TMS" "$OMS"),$G,$(share "$G" "$TMS"),$(share "$G" "$PMS"),$(share "$G" "$OMS"),$PEAK2" >> "$CSV"
  done
done

echo
echo "FP32 FMA peak: 1 thread $PEAK1 GFLOP/s, 2 threads $PEAK2 GFLOP/s; $THREADS threads, median of $REPEAT runs"
awk -F, 'NR == 1 { printf "%-16s %5s %8s %10s %10s %10s %8s %8s %8s %7s %7s %7s\n", "network", "batch", "build_s", "tunehub_ms", "torch_ms", "ort_ms", "th/torch", "th/ort", "GFLOP", "th%pk", "pt%pk", "ort%pk"; next }
  { printf "%-16s %5s %8s %10s %10s %10s %8s %8s %8s %7s %7s %7s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12 }' "$CSV"
echo "CSV: $CSV"
