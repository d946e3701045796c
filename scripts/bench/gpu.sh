#!/bin/bash
# The GPU benchmark in two phases, for a device machine that has a GPU but no package manager and no network:
#
#   scripts/bench/gpu.sh pack [DIR] [--xz-level 9]
#                                        here, after the build: the tunehub binary, the `gpu` test binaries,
#                                        the libraries they need that a CUDA image may lack, the Python peers
#                                        and a manifest, in DIR/tunehub-gpu.tar.xz (default DIR .gpu-pack;
#                                        --xz-level 0: seconds instead of minutes, a bigger archive)
#   scripts/bench/gpu.sh daemon [--pack DIR] [--work DIR] [--out DIR] [--trials 4] [--wait-s 240] [--key NET/BATCH]
#                                        on the device, after `run` or alone: the daemon's own path once:
#                                        `tunehub serve` on a fresh store, GET /models/cuda/resnet-18/100
#                                        (the miss queues a job: version 1, the quick build), then ?tuned=1
#                                        (version 2, tuned with --trials a task), each bundle timed with
#                                        tunehub run; DIR/gpu-daemon.txt says what happened, with the times
#   scripts/bench/gpu.sh run [--pack DIR] [--budget-s 900] [--deadline-s 540] [--quick] [--dry-run]
#                            [--skip-tests] [--trials N] [--out DIR] [--work DIR] [--rows "NET:BATCH ..."]
#                            [--records "FILE ..."]
#                                        on the device, in the repository root, with DIR carried along: the
#                                        `gpu` tests, fallback bundles (fp32, and tf32 where `tunehub build`
#                                        takes --precision), tuning within the budget, and tunehub against
#                                        PyTorch eager with cuDNN (TF32 off, then on), as one table and
#                                        DIR/gpu.csv (DIR: $OUT when set, else WORK/out)
#
# A command on the device may run 10 minutes, so `run` keeps its state in WORK (default .gpu-work, beside the
# carried pack: a carried path is replaced on each call) and stops before --deadline-s seconds, saying so;
# the same command again goes on where it stopped while the machine is warm. Tuning accumulates across
# leases: the first call imports the committed records of the device's arch (tests/data/records-*-sm_XX.jsonl,
# or --records), a row whose every task has a record is built tuned without trials ("imported"), and the
# run exports the best records of its store to DIR/records-sm_XX.jsonl, to be committed for the next lease. --budget-s is the whole run's
# time (every call together); tuning gets what the other steps leave. --dry-run prints the plan and needs
# no device. --rows replaces the thesis rows (tuned in the thesis order, then in the order given). Nothing
# is printed that was not measured in this run: a figure not measured is "-".
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
ME=$(basename "$0")
log() { echo "[$ME $(date +%H:%M:%S)] $*" >&2; }
die() { echo "$ME: $*" >&2; exit 1; }

# The rows of the thesis table (network:batch), and the order in which tuning spends the budget on them.
ROWS="resnet-18:1 resnet-18:10 resnet-18:100 resnet-18:200 resnet-18:256 vgg-11:2 mobilenet:100
      inception_v3:50 squeezenet_v1.1:1 resnet-152:1 vit:1 vit:10 vit:256 bert:1 bert:5 bert:10 bert:15"
TUNE_ORDER="resnet-18:1 bert:1 vit:1 mobilenet:100 squeezenet_v1.1:1 resnet-152:1 vgg-11:2 inception_v3:50
            resnet-18:10 bert:10 vit:10 resnet-18:100 bert:5 bert:15 resnet-18:200 resnet-18:256 vit:256"
QUICK_ROWS="resnet-18:1 bert:1"
# Planning assumptions, replaced by what this run measures as soon as it has measured it (seconds).
EST_TESTS_S=300  # the gpu tests, 6 at a time
EST_BUILD_S=30   # one `tunehub build cuda` (NVRTC, the link, the weights), 4 at a time
EST_RUN_S=8      # one `tunehub run --repeat`
EST_TORCH_S=10   # one row in PyTorch, both modes
EST_TRIAL_S=0.5  # one tuning trial, verification included
EST_TASKS=20     # tasks of a network before its fallback build says
MIN_TRIALS=8

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }  # the comment atop this file

# ============================================================================================== pack ====

# pack__libs BIN...: the resolved paths of the shared libraries the binaries need, less the C and C++
# runtimes every Linux has and anything of CUDA's (libcuda comes with the device's driver, NVRTC with its
# toolkit).
pack__libs() {
  local b
  for b in "$@"; do
    ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
  done | sort -u | while read -r name path; do
    case "$name" in
      linux-vdso*|ld-linux*|libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*) ;;
      libutil.so.*|libstdc++.so.*|libgcc_s.so.*) ;;
      libcuda.so*|libnvrtc*|libcudart*|libnvJitLink*) ;;
      *) echo "$name $path" ;;
    esac
  done
}

cmd_pack() {
  local dir=$ROOT/.gpu-pack level=9
  while [ $# -gt 0 ]; do
    case "$1" in
      --xz-level) level=$2; shift 2 ;;
      -*) die "pack: unknown argument '$1' (--help)" ;;
      *) dir=$1; shift ;;
    esac
  done
  case "$level" in [0-9]) ;; *) die "pack: --xz-level '$level' is not one of 0..9" ;; esac
  local build=${BUILD:-$ROOT/build}
  local tunehub=$build/server/tunehub
  [ -x "$tunehub" ] || die "pack: $tunehub is not built (cmake -S . -B build && cmake --build build)"
  local help
  help=$("$tunehub" help 2>&1 || true)
  case "$help" in *"cuda (NVIDIA GPU)"*) ;; *) die "pack: $tunehub has no cuda framework" ;; esac
  grep -q '^TH_HAVE_CUDA\|^CUDA_NVRTC_LIBRARY:FILEPATH=/' "$build/CMakeCache.txt" ||
    die "pack: $build was configured without NVRTC: the gpu tests are not built"
  PACK_STAGE=$(mktemp -d)
  trap 'rm -rf "$PACK_STAGE"' EXIT
  local stage=$PACK_STAGE
  mkdir -p "$stage/bin" "$stage/lib" "$stage/scripts"
  # the gpu tests as ctest runs them: name, timeout, executable, arguments
  (cd "$build" && ctest -N -L gpu --show-only=json-v1) | python3 -c '
import json, os, sys
for t in json.load(sys.stdin)["tests"]:
    p = {x["name"]: x["value"] for x in t.get("properties", [])}
    cmd = t["command"]
    print("\t".join([t["name"], str(int(p.get("TIMEOUT", 1500))), os.path.basename(cmd[0])] + cmd[1:]))
' > "$stage/tests.tsv"
  local ntests
  ntests=$(wc -l < "$stage/tests.tsv")
  [ "$ntests" -gt 0 ] || die "pack: ctest lists no test labelled gpu in $build"
  local bins=("$tunehub") exe
  while read -r exe; do
    [ -x "$build/tests/$exe" ] || die "pack: $build/tests/$exe is not built (cmake --build build --target $exe)"
    bins+=("$build/tests/$exe")
  done < <(cut -f3 "$stage/tests.tsv" | sort -u)
  for exe in "${bins[@]}"; do
    cp "$exe" "$stage/bin/"
    strip --strip-debug "$stage/bin/$(basename "$exe")"
  done
  local name path
  pack__libs "${bins[@]}" > "$stage/libs.txt"
  while read -r name path; do
    cp -L "$path" "$stage/lib/$name"
    strip --strip-unneeded "$stage/lib/$name" 2>/dev/null || true
  done < "$stage/libs.txt"
  cp "$HERE/gpu_torch.py" "$HERE/models_torch.py" "$ROOT/tests/unit/conformance_torch.py" "$stage/scripts/"
  local nvrtc glibc commit
  nvrtc=$(readelf -d "$tunehub" | sed -n 's/.*NEEDED.*\[\(libnvrtc[^]]*\)\].*/\1/p')
  glibc=$(ldd --version | awk 'NR == 1 { print $NF }')
  commit=$(git -C "$ROOT" rev-parse HEAD)$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo "+changes")
  {
    echo "tunehub gpu pack"
    echo "commit $commit"
    echo "made $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(sed -n 's/^PRETTY_NAME="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' /etc/os-release) ($(uname -m))"
    echo "glibc $glibc (the device needs this or newer, and libstdc++ of gcc $(gcc -dumpversion 2>/dev/null || echo '?') or newer)"
    echo "nvrtc $nvrtc (from the device's CUDA toolkit; built with CUDA $(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p'))"
    echo "libcuda.so.1 from the device's driver (dlopen'ed at run time)"
    echo "a C compiler (\$CC, else cc) on the device: tunehub build cuda links model.so with it, and the gpu"
    echo "tests' network cases build bundles"
    echo "tests $ntests (tests.tsv: name, timeout, executable, arguments, as ctest runs them)"
    echo "files:"
    (cd "$stage" && find bin lib scripts -type f -printf '  %p %s\n' | sort)
  } > "$stage/MANIFEST"
  mkdir -p "$dir"
  log "pack: compressing $(du -sh "$stage" | cut -f1) with xz"
  tar -C "$stage" -cf - . | xz "-$level" -T2 > "$dir/tunehub-gpu.tar.xz.tmp"
  mv "$dir/tunehub-gpu.tar.xz.tmp" "$dir/tunehub-gpu.tar.xz"
  cp "$stage/MANIFEST" "$dir/MANIFEST.txt"
  local bytes
  bytes=$(stat -c %s "$dir/tunehub-gpu.tar.xz")
  echo "$ME pack: $dir/tunehub-gpu.tar.xz, $(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }') MiB:" \
    "$(find "$stage/bin" -type f -printf '%f ')+ $(wc -l < "$stage/libs.txt") libraries, $ntests gpu tests"
  [ "$bytes" -le $((60 * 1048576)) ] ||
    die "pack: $bytes bytes is over 60 MiB: with the working tree it would not fit a 64 MiB transfer"
  echo "$ME pack: on the device, with $(realpath --relative-to="$ROOT" "$dir") carried: scripts/bench/gpu.sh run --pack $(realpath --relative-to="$ROOT" "$dir")"
}

# =============================================================================================== run ====

PACK=$ROOT/.gpu-pack
WORK=$ROOT/.gpu-work
OUTDIR=${OUT:-}
BUDGET_S=900
DEADLINE_S=540
QUICK=0
ROWS_ARG=""
DRY=0
SKIP_TESTS=0
TRIALS=32
REPEAT=30
RECORDS_ARG=""
ARCH="" # the device's sm_XX, from nvidia-smi; "" when it does not say
# how many gpu tests and fallback builds run at once: from the machine's cores (6 and 4 on 16), or
# GPU_TEST_JOBS and GPU_BUILD_JOBS
NCPU=$(nproc 2>/dev/null || echo 4)
TEST_JOBS=${GPU_TEST_JOBS:-$(( NCPU * 3 / 8 > 0 ? NCPU * 3 / 8 : 1 ))}
BUILD_JOBS=${GPU_BUILD_JOBS:-$(( NCPU / 4 > 0 ? NCPU / 4 : 1 ))}

T_CALL=$(date +%s)
call_left() { echo $((DEADLINE_S - ($(date +%s) - T_CALL))); }

# ---- state: results.tsv (KEY COL VALUE NOTE, the last line wins) and spent.tsv (STEP SECONDS) ----
res_get() { awk -F'\t' -v k="$1" -v c="$2" '$1 == k && $2 == c { v = $3 } END { print v }' "$WORK/results.tsv" 2>/dev/null; }
res_note() { awk -F'\t' -v k="$1" -v c="$2" '$1 == k && $2 == c { v = $4 } END { print v }' "$WORK/results.tsv" 2>/dev/null; }
res_set() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4:--}" >> "$WORK/results.tsv"; }
spent_add() { printf '%s\t%s\n' "$1" "$2" >> "$WORK/spent.tsv"; }
# (est_* lines are per-item times for the estimates, already inside another step's wall time)
spent_total() { awk -F'\t' '$1 !~ /^est_/ { s += $2 } END { printf "%d\n", s }' "$WORK/spent.tsv" 2>/dev/null; }
# spent_mean STEP DEFAULT: the mean seconds of STEP's items so far, else DEFAULT
spent_mean() {
  awk -F'\t' -v s="$1" -v d="$2" '$1 == s { t += $2; n++ } END { if (n) printf "%.1f\n", t / n; else print d }' \
    "$WORK/spent.tsv" 2>/dev/null || echo "$2"
}
note() { echo "$*" >> "$WORK/notes.txt"; log "$*"; }

# stop_for_deadline WHAT: the call's deadline is near: print the table so far and exit 3.
stop_for_deadline() {
  note "stopped before $1: the call's deadline (--deadline-s $DEADLINE_S) is near; run the same command again to go on"
  print_table
  records_out
  exit 3
}

# ---- the pack on the device ----
# Unpacks $PACK once per pack into WORK/pack-<hash>; points TH_LD at the libraries this system lacks.
prepare_pack() {
  local tarball=$PACK/tunehub-gpu.tar.xz
  [ -f "$tarball" ] ||
    die "no pack at $tarball: run 'scripts/bench/gpu.sh pack DIR' where tunehub was built, and carry DIR (--pack DIR)"
  local h
  h=$(sha256sum "$tarball" | cut -c1-12)
  P=$WORK/pack-$h
  if [ ! -f "$P/MANIFEST" ]; then
    rm -rf "$P.tmp" && mkdir -p "$P.tmp"
    if command -v xz >/dev/null; then
      tar -C "$P.tmp" -xJf "$tarball"
    else # no xz: Python's lzma
      python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$tarball" "$P.tmp"
    fi
    mv "$P.tmp" "$P"
  fi
  # The system's copy of a library where it has one (the compiler and Python inherit this path too), the
  # pack's where it has none; the pack's alone if the mix does not load.
  mkdir -p "$P/missing"
  local f have
  have=$(ldconfig -p 2>/dev/null | awk 'NR > 1 { print $1 }' || true)
  for f in "$P"/lib/*; do
    if grep -qxF "$(basename "$f")" <<< "$have"; then rm -f "$P/missing/$(basename "$f")"
    else ln -sf "$f" "$P/missing/$(basename "$f")"; fi
  done
  TH_LD=$P/missing
  if ! th_env "$P/bin/tunehub" version >/dev/null 2>&1; then
    TH_LD=$P/lib
    if ! th_env "$P/bin/tunehub" version >/dev/null 2>&1; then
      th_env ldd "$P/bin/tunehub" | grep -i 'not found' >&2 || true
      th_env "$P/bin/tunehub" version >&2 || true
      die "the packed tunehub does not load here (above: what is missing); $(sed -n 's/^glibc/needs glibc/p' "$P/MANIFEST")"
    fi
    log "the system's libraries did not suit the packed tunehub; it uses the pack's own ($P/lib)"
  fi
  TUNEHUB=$P/bin/tunehub
}

# th_env CMD...: CMD with the pack's libraries and the CUDA libraries found on this machine on its path.
th_env() { LD_LIBRARY_PATH=$TH_LD${CUDA_LD:+:$CUDA_LD}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$@"; }

# find_lib SONAME DIR...: the folder of SONAME: the loader's cache, else the first folder of
# LD_LIBRARY_PATH, then of DIR..., that holds it
find_lib() {
  local so=$1 d path
  shift
  d=$(ldconfig -p 2>/dev/null | awk -v s="$so" '$1 == s && d == "" { d = $NF } END { print d }' || true)
  if [ -n "$d" ]; then dirname "$d"; return 0; fi
  IFS=: read -r -a path <<< "${LD_LIBRARY_PATH:-}"
  for d in "${path[@]}" "$@"; do
    [ -n "$d" ] || continue
    if [ -e "$d/$so" ]; then echo "$d"; return 0; fi
  done
  return 1
}

# The device, its driver and NVRTC, and a C compiler; dies with the reason when there is no device.
check_device() {
  local smi
  smi=$(command -v nvidia-smi || true)
  [ -n "$smi" ] || [ ! -x /usr/local/nvidia/bin/nvidia-smi ] || smi=/usr/local/nvidia/bin/nvidia-smi
  [ -n "$smi" ] || die "no CUDA device: nvidia-smi is not installed (no NVIDIA driver on this machine)"
  local gpus
  gpus=$("$smi" -L 2>&1) || die "no CUDA device: nvidia-smi -L failed: $gpus"
  grep -q '^GPU ' <<< "$gpus" || die "no CUDA device: nvidia-smi found none ($gpus)"
  log "${gpus%%$'\n'*}; $("$smi" --query-gpu=driver_version --format=csv,noheader | sed -n '1s/^/driver /p')"
  ARCH=$("$smi" --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | sed -n '1s/^\([0-9]*\)\.\([0-9]\)$/sm_\1\2/p' || true)
  local cu nv site
  cu=$(find_lib libcuda.so.1 /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64) ||
    die "nvidia-smi sees a GPU but libcuda.so.1 is nowhere (ldconfig, /usr/local/nvidia/lib64, /usr/lib*)"
  local want
  want=$(sed -n 's/^nvrtc \(libnvrtc[^ ]*\).*/\1/p' "$P/MANIFEST")
  site=$(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null || true)
  local dirs=(/usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-*/lib64) s
  for s in $site; do dirs+=("$s/nvidia/cu13/lib" "$s/nvidia/cuda_nvrtc/lib"); done
  nv=$(find_lib "$want" "${dirs[@]}") ||
    die "no $want (NVRTC of the CUDA major version tunehub was built with) in the loader's cache or ${dirs[*]}"
  CUDA_LD=$cu:$nv
  log "libcuda.so.1 in $cu, $want in $nv"
  CC_OK=1
  local cc=${CC:-}
  if [ -z "$cc" ]; then cc=$(command -v cc || command -v gcc || command -v clang || true); fi
  if [ -z "$cc" ]; then
    CC_OK=0
  else
    export CC=$cc
    local t
    t=$(mktemp -d)
    printf '#include <dlfcn.h>\n#include <math.h>\n#include <pthread.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\nint th_probe(void) { return (int)sqrt(4.0); }\n' > "$t/p.c"
    "$CC" -shared -fPIC -O2 -o "$t/p.so" "$t/p.c" -lm >"$t/log" 2>&1 || CC_OK=0
    [ "$CC_OK" = 1 ] || sed 's/^/  /' "$t/log" >&2
    rm -rf "$t"
  fi
  if [ "$CC_OK" = 0 ]; then
    note "NO C COMPILER that links a shared library here (CC=${CC:-unset}, cc, gcc, clang): tunehub build cuda links model.so with it, so no tunehub figure and no network test can be measured; the template tests and PyTorch still run"
  else
    log "C compiler: $CC ($("$CC" --version | sed -n 1p))"
  fi
}

# ---- the plan ----

# rows_of: the rows of this run
rows_of() {
  local r=$ROWS
  [ "$QUICK" = 0 ] || r=$QUICK_ROWS
  [ -z "$ROWS_ARG" ] || r=$ROWS_ARG
  tr -s '[:space:]' '\n' <<< "$r" | sed '/^$/d'
}
# help_has TEXT: this tunehub's help mentions TEXT (a flag or a command it has)
help_has() {
  local help
  help=$(th_env "$TUNEHUB" help 2>&1 || true)
  case "$help" in *"$1"*) return 0 ;; *) return 1 ;; esac
}
precisions() { if [ "$TF32" = 1 ]; then echo "fp32 tf32"; else echo fp32; fi; }

# tasks KEY PREC: the tasks `tunehub tune --precision PREC` tunes for KEY: the distinct workloads of its
# PREC fallback build (a tf32 build's, before that build, are taken as the fp32 build's), else the
# planning assumption
tasks() {
  local m=$WORK/manifests/${1/:/_b}.$2.json
  [ -f "$m" ] || m=$WORK/manifests/${1/:/_b}.fp32.json
  if [ -f "$m" ]; then
    python3 -c 'import json, sys; print(len({l["workload"] for l in json.load(open(sys.argv[1]))["layers"]}))' "$m"
  else
    echo "$EST_TASKS"
  fi
}

# covered KEY PREC: how many of those tasks have a best record for this device's arch in the tuning store
# (imported or tuned earlier); 0 without a store, a manifest, an arch or `tunehub records`
covered() {
  local m=$WORK/manifests/${1/:/_b}.$2.json
  [ -n "$ARCH" ] && [ -f "$WORK/tune-data/tunehub.db" ] && [ -n "${TUNEHUB:-}" ] && [ -f "$m" ] ||
    { echo 0; return 0; }
  local net=${1%:*} b=${1#*:}
  th_env "$TUNEHUB" records export --data "$WORK/tune-data" --framework cuda --target "$ARCH" \
    --network "$net" --batch "$b" --best 2>/dev/null < /dev/null |
    python3 -c '
import json, sys
want = {l["workload"] for l in json.load(open(sys.argv[1]))["layers"]}
have = {json.loads(l).get("workload") for l in list(sys.stdin)[1:]}
print(len(want & have))' "$m" || echo 0
}
# untuned KEY: the precisions of KEY with a workload that has no record yet
untuned() {
  local prec t
  for prec in $(precisions); do
    t=$(tasks "$1" "$prec")
    [ "$t" -gt 0 ] && [ "$(covered "$1" "$prec")" -ge "$t" ] || echo "$prec"
  done
}

# step_records_in: once per run, the committed records of this arch into the tuning store
step_records_in() {
  [ ! -f "$WORK/records-in.done" ] || return 0
  if [ -z "$ARCH" ] || ! help_has "records import"; then
    note "no records imported: $([ -z "$ARCH" ] && echo "nvidia-smi gave no compute capability" || echo "this tunehub has no 'records' command")"
    : > "$WORK/records-in.done"
    return 0
  fi
  local files=$RECORDS_ARG f out
  [ -n "$files" ] || files=$(ls "$ROOT"/tests/data/records-*-"$ARCH".jsonl 2>/dev/null || true)
  mkdir -p "$WORK/tune-data"
  for f in $files; do
    if out=$(th_env "$TUNEHUB" records import "$f" --data "$WORK/tune-data" 2>&1 < /dev/null); then
      note "records: $(basename "$f"): ${out##*$'\n'}"
    else
      note "records: $(basename "$f") was refused: ${out##*$'\n'}"
    fi
  done
  [ -n "$files" ] || note "records: none committed for $ARCH (tests/data/records-*-$ARCH.jsonl)"
  : > "$WORK/records-in.done"
}

# records_out: the best records of the tuning store, for the next lease to start from
records_out() {
  [ -n "$ARCH" ] && [ -f "$WORK/tune-data/tunehub.db" ] && help_has "records import" || return 0
  local f=$OUTDIR/records-$ARCH.jsonl
  if th_env "$TUNEHUB" records export --data "$WORK/tune-data" --framework cuda --target "$ARCH" --best -o "$f" \
    > /dev/null 2>&1 < /dev/null; then
    echo "records: $(($(wc -l < "$f") - 1)) best records of $ARCH in $f (commit as tests/data/records-<gpu>-$ARCH.jsonl)"
  fi
}

# plan_tuning SECONDS: "KEY TRIALS" per key tuned within SECONDS, in TUNE_ORDER; the rest to stderr
plan_tuning() {
  local left=$1 trial_s key n t cost over pending
  trial_s=$(spent_mean est_trial "$EST_TRIAL_S")
  over=$(awk -v b="$(spent_mean est_build "$EST_BUILD_S")" -v r="$(spent_mean run "$EST_RUN_S")" -v p="$(precisions | wc -w)" \
    'BEGIN { printf "%d\n", p * (b + r) }')
  local rows seen=" "
  rows=" $(rows_of | tr '\n' ' ') "
  # shellcheck disable=SC2046 # the rows are words
  for key in $TUNE_ORDER $(rows_of); do
    case "$rows" in *" $key "*) ;; *) continue ;; esac
    case "$seen" in *" $key "*) continue ;; esac
    seen="$seen$key "
    pending=$(untuned "$key")
    if [ -z "$pending" ]; then
      echo "$key 0 0" # every task has a record: built tuned, no trials
      continue
    fi
    t=0
    for prec in $pending; do t=$((t + $(tasks "$key" "$prec"))); done
    n=$(awk -v l="$left" -v o="$over" -v t="$t" -v s="$trial_s" -v max="$TRIALS" \
      'BEGIN { n = int((l - o) / (t * s)); if (n > max) n = max; print (n < 0 ? 0 : n) }')
    if [ "$n" -lt "$MIN_TRIALS" ] && [ "$(wc -w <<< "$pending")" -lt "$(precisions | wc -w)" ]; then
      echo "$key 0 0" # no budget for the rest, but some precision has every record: built tuned with those
      continue
    fi
    if [ "$n" -lt "$MIN_TRIALS" ]; then
      echo "$key: not tuned (${left}s of the budget left; $MIN_TRIALS trials of $t tasks need about $(awk -v t="$t" -v s="$trial_s" -v o="$over" -v m="$MIN_TRIALS" 'BEGIN { printf "%d", t * s * m + o }')s)" >&2
      continue
    fi
    cost=$(awk -v n="$n" -v t="$t" -v s="$trial_s" -v o="$over" 'BEGIN { printf "%d", n * t * s + o }')
    echo "$key $n $cost"
    left=$((left - cost))
  done
}

print_plan() {
  local rows nrows nprec
  rows=$(rows_of)
  nrows=$(wc -w <<< "$rows")
  nprec=$(precisions | wc -w)
  echo "plan (budget ${BUDGET_S}s over every call, ${DEADLINE_S}s a call; estimates are assumptions until measured):"
  echo "  rows: $(tr '\n' ' ' <<< "$rows")"
  if [ "$TF32" = 1 ]; then echo "  precisions: fp32 tf32"
  else echo "  precisions: fp32 only: this tunehub's help has no --precision, so the tf32 columns stay empty"; fi
  if [ "$SKIP_TESTS" = 1 ]; then echo "  gpu tests: skipped (--skip-tests)"
  else echo "  gpu tests: $(wc -l < "$P/tests.tsv") cases, $TEST_JOBS at a time, with TH_TEST_GPU_REQUIRED=1 (~${EST_TESTS_S}s)"; fi
  echo "  fallback builds: $((nrows * nprec)) ($BUILD_JOBS at a time, ~${EST_BUILD_S}s each), each timed with tunehub run --repeat $REPEAT"
  echo "  PyTorch eager: $nrows rows x TF32 off/on, median of $REPEAT after warm-up, CUDA events"
  local fixed tune_s
  fixed=$(awk -v t="$([ "$SKIP_TESTS" = 1 ] && echo 0 || echo "$EST_TESTS_S")" -v n="$((nrows * nprec))" \
    -v b="$EST_BUILD_S" -v r="$EST_RUN_S" -v rows="$nrows" -v p="$EST_TORCH_S" \
    -v bj="$BUILD_JOBS" 'BEGIN { printf "%d", t + n * b / bj + n * r + rows * p }')
  tune_s=$((BUDGET_S - fixed))
  echo "  tuning: ${tune_s}s left for it (budget less ~${fixed}s of the rest), at most $TRIALS trials a task:"
  plan_tuning "$tune_s" 2>&1 | sed 's/^/    /' | awk '
    NF == 3 && $2 == 0 { printf "    %s: built tuned from its records, without trials\n", $1; next }
    NF == 3 && $2 ~ /^[0-9]+$/ { printf "    %s: %s trials a task, ~%ss\n", $1, $2, $3; next } { print }'
}

# ---- the steps ----

step_tests() {
  [ "$SKIP_TESTS" = 0 ] || return 0
  mkdir -p "$WORK/tests"
  local name timeout exe args pending=() running=0
  while IFS=$'\t' read -r name timeout exe args; do
    [ -f "$WORK/tests/$name.rc" ] || pending+=("$name")
  done < "$P/tests.tsv"
  [ ${#pending[@]} -gt 0 ] || return 0
  log "gpu tests: ${#pending[@]} cases"
  local t0 left
  t0=$(date +%s)
  for name in "${pending[@]}"; do
    left=$(($(call_left) - 30))
    [ "$left" -gt 60 ] || break
    IFS=$'\t' read -r _ timeout exe args < <(awk -F'\t' -v n="$name" '$1 == n' "$P/tests.tsv")
    local lim=$((timeout < left ? timeout : left))
    (
      cd "$WORK/tests"
      rc=0
      # shellcheck disable=SC2086 # args are the case's arguments, word-split as ctest passes them
      TH_TEST_GPU_REQUIRED=1 th_env timeout "$lim" "$P/bin/$exe" $args > "$name.log" 2>&1 || rc=$?
      if [ "$rc" = 124 ] && [ "$lim" -lt "$timeout" ]; then
        echo "interrupted by the call's deadline after ${lim}s: runs again on the next call" >> "$name.log"
      else
        echo "$rc" > "$name.rc"
      fi
    ) &
    running=$((running + 1))
    if [ "$running" -ge "$TEST_JOBS" ]; then wait -n || true; running=$((running - 1)); fi
  done
  wait || true
  spent_add tests $(($(date +%s) - t0))
}

tests_summary() {
  if [ "$SKIP_TESTS" = 1 ]; then echo "gpu tests: not run (--skip-tests)"; return 0; fi
  local name pass=0 fail=0 skip=0 notrun=0 failed=""
  while IFS=$'\t' read -r name _; do
    if [ ! -f "$WORK/tests/$name.rc" ]; then notrun=$((notrun + 1)); continue; fi
    case $(cat "$WORK/tests/$name.rc") in
      0) pass=$((pass + 1)) ;;
      77) skip=$((skip + 1)); failed="$failed $name(skipped)" ;;
      *) fail=$((fail + 1)); failed="$failed $name" ;;
    esac
  done < "$P/tests.tsv"
  echo "gpu tests: $pass passed, $fail failed, $skip skipped, $notrun not run${failed:+ (not passed:$failed)}"
}

# build_one KEY PREC KIND: tunehub build cuda into WORK/bundles (KIND fb: an empty store; tuned: the tuning store)
build_one() {
  local key=$1 prec=$2 kind=$3 net=${1%:*} b=${1#*:} tag data
  tag=${net}_b${b}.$prec.$kind
  if [ "$kind" = fb ]; then data=$WORK/fb-data/$tag; else data=$WORK/tune-data; fi
  mkdir -p "$WORK/bundles" "$data" "$WORK/manifests"
  local pflag=()
  [ "$prec" = fp32 ] || pflag=(--precision "$prec")
  local t0 rc=0
  t0=$(date +%s)
  th_env "$TUNEHUB" build cuda "$net" "$b" -o "$WORK/bundles/$tag.tar" --data "$data" "${pflag[@]}" \
    > "$WORK/bundles/$tag.build.log" 2>&1 < /dev/null || rc=$?
  echo "est_build $(($(date +%s) - t0))" > "$WORK/bundles/$tag.spent"
  if [ "$rc" != 0 ]; then
    rm -f "$WORK/bundles/$tag.tar"
    return 0
  fi
  [ "$kind" = tuned ] || rm -rf "$data"
  # a "tuned" bundle without one tuned layer would be a fallback figure in the tuned column
  if [ "$kind" = tuned ] && ! tar -xOf "$WORK/bundles/$tag.tar" manifest.json |
    python3 -c 'import json, sys; sys.exit(0 if json.load(sys.stdin).get("tuned") else 1)'; then
    echo "the tuned build has no layer with a tuned config (did every trial fail? $WORK/tune.${net}_b$b.$prec.log)" > "$WORK/bundles/$tag.untuned"
  fi
  if [ "$kind" = fb ]; then tar -xOf "$WORK/bundles/$tag.tar" manifest.json > "$WORK/manifests/${net}_b${b}.$prec.json"; fi
}

# time_one KEY PREC KIND: tunehub run of the bundle, its median into the results; the bundle is removed
time_one() {
  local key=$1 prec=$2 kind=$3 tag out ms t0
  tag=${key%:*}_b${key#*:}.$prec.$kind
  local col=th_${prec}_$kind
  if [ ! -f "$WORK/bundles/$tag.tar" ]; then
    res_set "$key" "$col" - "build failed: $(tail -1 "$WORK/bundles/$tag.build.log" 2>/dev/null | cut -c1-160)"
    return 0
  fi
  if [ -f "$WORK/bundles/$tag.untuned" ]; then
    res_set "$key" "$col" - "$(cat "$WORK/bundles/$tag.untuned")"
    rm -f "$WORK/bundles/$tag.tar" "$WORK/bundles/$tag.untuned"
    return 0
  fi
  t0=$(date +%s)
  if out=$(th_env "$TUNEHUB" run "$WORK/bundles/$tag.tar" --repeat "$REPEAT" 2>&1 < /dev/null); then
    ms=$(echo "$out" | sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' | tail -1)
    res_set "$key" "$col" "${ms:--}" "$([ -n "$ms" ] || echo "no median in: $(echo "$out" | tail -1)")"
  else
    res_set "$key" "$col" - "run failed: $(echo "$out" | tail -1 | cut -c1-160)"
  fi
  spent_add run $(($(date +%s) - t0))
  rm -f "$WORK/bundles/$tag.tar"
}

# step_bundles KIND KEY...: builds (fallbacks 4 at a time, each in a store of its own; tuned ones one at a
# time from the tuning store) and times (one at a time) what has no result yet
step_bundles() {
  local kind=$1 key prec todo=() par=1
  [ "$kind" = tuned ] || par=$BUILD_JOBS
  shift
  for key in "$@"; do
    for prec in $(precisions); do
      [ -n "$(res_get "$key" "th_${prec}_$kind")" ] || todo+=("$key/$prec")
    done
  done
  [ ${#todo[@]} -gt 0 ] || return 0
  if [ "$CC_OK" = 0 ]; then
    for key in "${todo[@]}"; do res_set "${key%/*}" "th_${key#*/}_$kind" - "no C compiler here"; done
    return 0
  fi
  local i=0 item
  while [ $i -lt ${#todo[@]} ]; do
    local batch=("${todo[@]:i:par}") est t0
    est=$(awk -v b="$(spent_mean est_build "$EST_BUILD_S")" -v r="$(spent_mean run "$EST_RUN_S")" -v n=${#batch[@]} \
      'BEGIN { printf "%d", b + n * r }')
    [ "$(call_left)" -gt "$est" ] || stop_for_deadline "the $kind builds of ${batch[*]}"
    log "$kind builds: ${batch[*]}"
    t0=$(date +%s)
    for item in "${batch[@]}"; do build_one "${item%/*}" "${item#*/}" "$kind" & done
    wait
    spent_add builds $(($(date +%s) - t0))
    for item in "${batch[@]}"; do
      local tag=${item%/*}
      tag=${tag%:*}_b${tag#*:}.${item#*/}.$kind
      # shellcheck disable=SC2046 # "est_build SECONDS": two words
      [ ! -f "$WORK/bundles/$tag.spent" ] || spent_add $(cat "$WORK/bundles/$tag.spent")
      time_one "${item%/*}" "${item#*/}" "$kind"
    done
    i=$((i + par))
  done
}

step_torch() {
  local key todo=()
  for key in $(rows_of); do [ -n "$(res_get "$key" torch_fp32)" ] || todo+=("$key"); done
  [ ${#todo[@]} -gt 0 ] || return 0
  local left t0
  left=$(($(call_left) - 20))
  [ "$left" -gt "$EST_TORCH_S" ] || stop_for_deadline "PyTorch"
  log "PyTorch eager: ${todo[*]}"
  t0=$(date +%s)
  : > "$WORK/torch.tsv"
  local rc=0
  PYTHONUNBUFFERED=1 timeout "$left" python3 "$P/scripts/gpu_torch.py" --rows "${todo[*]}" --repeat "$REPEAT" \
    --out "$WORK/torch.tsv" 2> "$WORK/torch.log" || rc=$?
  grep '^torch ' "$WORK/torch.log" >&2 || true
  local net b mode h2h dev why
  while IFS=$'\t' read -r net b mode h2h dev why; do
    res_set "$net:$b" "torch_$mode" "$h2h" "$why"
    res_set "$net:$b" "torch_${mode}_dev" "$dev" "$why"
  done < "$WORK/torch.tsv"
  local n
  n=$(cut -f1,2 "$WORK/torch.tsv" | sort -u | wc -l)
  spent_add torch $(($(date +%s) - t0))
  [ "$n" -eq 0 ] || spent_add est_torch_row $((($(date +%s) - t0) / n))
  if [ "$rc" = 124 ]; then stop_for_deadline "the rest of PyTorch"; fi
  if [ "$rc" != 0 ]; then
    tail -5 "$WORK/torch.log" >&2
    note "PyTorch failed (exit $rc; $WORK/torch.log): its columns stay empty"
    for key in "${todo[@]}"; do
      [ -n "$(res_get "$key" torch_fp32)" ] || res_set "$key" torch_fp32 - "gpu_torch.py exit $rc"
    done
  fi
}

step_tune() {
  [ "$CC_OK" = 1 ] || return 0
  local left plan key n cost
  # planned once, when the tuning starts; a later call follows the same plan
  if [ ! -f "$WORK/tune-plan.txt" ]; then
    left=$((BUDGET_S - $(spent_total)))
    plan_tuning "$left" > "$WORK/tune-plan.txt" 2>> "$WORK/notes.txt"
    log "tuning plan (${left}s of the budget left):"
    awk '{ printf "  %s: %s trials a task, ~%ss\n", $1, $2, $3 }' "$WORK/tune-plan.txt" >&2
  fi
  plan=$(cat "$WORK/tune-plan.txt")
  while read -r key n cost; do
    [ -n "$key" ] || continue
    case "$(res_get "$key" tuned)" in
      "") ;;
      -) continue ;;                                 # left out of the budget
      *) step_bundles tuned "$key"; continue ;;      # tuned by an earlier call: its builds, if not done
    esac
    if [ "$n" = 0 ]; then # records for every task of some precision (tests/data, an earlier lease): no trials
      local left_out
      left_out=$(untuned "$key" | tr '\n' ' ')
      res_set "$key" tuned imported "${left_out:+no records for its $left_out tasks (fallbacks there); }every other task had a record"
      step_bundles tuned "$key"
      continue
    fi
    local net=${key%:*} b=${key#*:} prec lim t0 trials_done=0
    lim=$(($(call_left) - 60))
    [ "$lim" -gt 60 ] || stop_for_deadline "tuning $key"
    for prec in $(untuned "$key"); do # a precision whose every task has a record is not tuned again
      local pflag=() t=0 rc=0
      [ "$prec" = fp32 ] || pflag=(--precision "$prec")
      t=$(tasks "$key" "$prec")
      [ "$t" -gt 0 ] || continue
      lim=$(($(call_left) - 60))
      log "tune $key $prec: $t tasks x $n trials (at most ${lim}s in this call)"
      t0=$(date +%s)
      mkdir -p "$WORK/tune-data"
      th_env timeout -s INT "$lim" "$TUNEHUB" tune cuda "$net" "$b" --trials "$n" --data "$WORK/tune-data" "${pflag[@]}" \
        > "$WORK/tune.${net}_b$b.$prec.log" 2>&1 < /dev/null || rc=$?
      local secs=$(($(date +%s) - t0))
      tail -3 "$WORK/tune.${net}_b$b.$prec.log" >&2
      if [ "$rc" = 124 ]; then note "tune $key $prec stopped at the call's deadline after ${secs}s; the next call resumes it"; stop_for_deadline "the rest of tuning $key"; fi
      [ "$rc" = 0 ] || note "tune $key $prec exited $rc after ${secs}s ($WORK/tune.${net}_b$b.$prec.log); the build takes what it stored"
      spent_add tune "$secs"
      trials_done=$((trials_done + t * n))
      [ "$secs" -eq 0 ] || [ "$rc" != 0 ] || spent_add est_trial "$(awk -v s="$secs" -v n=$((t * n)) 'BEGIN { printf "%.2f", s / n }')"
    done
    res_set "$key" tuned "$n" "$trials_done trials"
    step_bundles tuned "$key"
  done <<< "$plan"
}

# ---- the table ----
print_table() {
  [ -n "$OUTDIR" ] || OUTDIR=$WORK/out
  mkdir -p "$OUTDIR"
  local csv=$OUTDIR/gpu.csv key
  echo "network,batch,th_fp32_fallback_ms,th_fp32_tuned_ms,th_tf32_fallback_ms,th_tf32_tuned_ms,torch_fp32_ms,torch_tf32_ms,th_fp32_over_torch_fp32,th_tf32_over_torch_tf32,torch_fp32_device_ms,torch_tf32_device_ms,tuned_trials_per_task,notes" > "$csv"
  for key in $(rows_of); do
    local v=() c
    for c in th_fp32_fb th_fp32_tuned th_tf32_fb th_tf32_tuned torch_fp32 torch_tf32 torch_fp32_dev torch_tf32_dev tuned; do
      local x
      x=$(res_get "$key" "$c")
      v+=("${x:--}")
    done
    local f32=${v[1]} t32=${v[3]}
    [ "$f32" != - ] || f32=${v[0]}
    [ "$t32" != - ] || t32=${v[2]}
    local notes=""
    for c in th_fp32_fb th_fp32_tuned th_tf32_fb th_tf32_tuned torch_fp32; do
      local n
      n=$(res_note "$key" "$c")
      [ -z "$n" ] || [ "$n" = - ] || notes="$notes$c: $n; "
    done
    printf '%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,"%s"\n' "${key%:*}" "${key#*:}" "${v[0]}" "${v[1]}" "${v[2]}" "${v[3]}" \
      "${v[4]}" "${v[5]}" "$(ratio "$f32" "${v[4]}")" "$(ratio "$t32" "${v[5]}")" "${v[6]}" "${v[7]}" "${v[8]}" \
      "${notes//\"/\'}" >> "$csv"
  done
  echo
  [ ! -f "$WORK/tests.txt" ] || cat "$WORK/tests.txt"
  echo "tunehub (cuda bundles, tunehub run: host to host) against PyTorch $(sed -n '/^torch [^,]*,/{s/^torch \([^,]*\),.*/\1/p;q;}' "$WORK/torch.log" 2>/dev/null) eager with cuDNN (host to host, CUDA events); median ms; ratio = tunehub best / torch (tuned where tuned), below 1: tunehub faster"
  awk -F, 'NR == 1 { printf "%-16s %5s | %9s %9s | %9s %9s | %9s %9s | %7s %7s\n", "network", "batch", "fp32 fb", "tuned", "tf32 fb", "tuned", "torch32", "torchtf", "fp32 x", "tf32 x"; next }
    { printf "%-16s %5s | %9s %9s | %9s %9s | %9s %9s | %7s %7s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 }' "$csv"
  [ ! -s "$WORK/notes.txt" ] || { echo "notes:"; sed 's/^/  /' "$WORK/notes.txt"; }
  # why a figure is missing, row by row
  awk -F'\t' '$2 !~ /_dev$/ { v[$1 " " $2] = $3; w[$1 " " $2] = $4 }
    END { for (k in v) if (v[k] == "-" && w[k] != "-") print "  " k ": " w[k] }' "$WORK/results.tsv" | sort
  cp "$WORK/notes.txt" "$OUTDIR/gpu-notes.txt" 2>/dev/null || true
  [ ! -f "$WORK/tests.txt" ] || cp "$WORK/tests.txt" "$OUTDIR/gpu-tests.txt"
  echo "CSV: $csv"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || a == "" || b == "" || b == 0) print "-"; else printf "%.2f", a / b }'; }

cmd_run() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --pack) PACK=$(realpath -m "$2"); shift 2 ;;
      --work) WORK=$(realpath -m "$2"); shift 2 ;;
      --out) OUTDIR=$(realpath -m "$2"); shift 2 ;;
      --budget-s) BUDGET_S=$2; shift 2 ;;
      --deadline-s) DEADLINE_S=$2; shift 2 ;;
      --trials) TRIALS=$2; shift 2 ;;
      --quick) QUICK=1; REPEAT=10; TRIALS=8; shift ;;
      --rows) ROWS_ARG=$2; shift 2 ;;
      --records) RECORDS_ARG=$2; shift 2 ;;
      --dry-run) DRY=1; shift ;;
      --skip-tests) SKIP_TESTS=1; shift ;;
      -h|--help) usage; exit 0 ;;
      *) die "run: unknown argument '$1' (--help)" ;;
    esac
  done
  local key
  for key in $ROWS_ARG; do
    [[ "$key" =~ ^[A-Za-z0-9_.-]+:[1-9][0-9]*$ ]] || die "run: --rows: '$key' is not NET:BATCH (resnet-18:1)"
  done
  mkdir -p "$WORK"
  touch "$WORK/results.tsv" "$WORK/spent.tsv" "$WORK/notes.txt"
  prepare_pack
  TF32=0
  if help_has --precision; then TF32=1; fi
  if [ "$DRY" = 1 ]; then
    log "dry run: $(sed -n 2p "$P/MANIFEST"); nothing is built, tuned or timed"
    print_plan
    return 0
  fi
  check_device
  if help_has --precision; then TF32=1; fi  # (with the device's CUDA libraries on the path now)
  # an earlier call's stop at its deadline is history once this call goes on
  sed -i '/^stopped before /d' "$WORK/notes.txt"
  if [ "$TF32" = 0 ] && ! grep -q 'no --precision' "$WORK/notes.txt"; then
    note "tf32 skipped: this tunehub has no --precision (tunehub help): the tf32 columns stay empty"
  fi
  step_records_in
  print_plan >&2
  local t0
  t0=$(date +%s)
  step_tests
  tests_summary > "$WORK/tests.txt"
  cat "$WORK/tests.txt" >&2
  [ "$SKIP_TESTS" = 1 ] || [ "$(find "$WORK/tests" -name '*.rc' 2>/dev/null | wc -l)" -ge "$(wc -l < "$P/tests.tsv")" ] ||
    stop_for_deadline "the rest of the gpu tests"
  # shellcheck disable=SC2046 # the rows are words
  step_bundles fb $(rows_of)
  step_torch
  step_tune
  for key in $(rows_of); do
    [ -n "$(res_get "$key" tuned)" ] || res_set "$key" tuned - "not tuned: out of the budget (see the plan)"
  done
  log "this call: $(($(date +%s) - t0))s; the run so far: $(spent_total)s of the ${BUDGET_S}s budget"
  print_table
  records_out
  grep -q ' 0 failed' "$WORK/tests.txt" || [ "$SKIP_TESTS" = 1 ] || { echo "$ME: the gpu tests did not all pass" >&2; exit 1; }
}

# ============================================================================================ daemon ====

# http_get URL BODY HEADERS: GET with Python's urllib (no curl needed); prints the status code
http_get() {
  python3 - "$1" "$2" "$3" <<'PY'
import sys, urllib.request, urllib.error
url, body, hdrs = sys.argv[1:4]
try:
    r = urllib.request.urlopen(url, timeout=900)
    code, data, h = r.status, r.read(), r.headers
except urllib.error.HTTPError as e:
    code, data, h = e.code, e.read(), e.headers
except Exception as e:  # refused, reset: not an HTTP answer
    code, data, h = 0, str(e).encode(), {}
open(body, "wb").write(data)
open(hdrs, "w").write("".join("%s: %s\n" % kv for kv in h.items()))
print(code)
PY
}

cmd_daemon() {
  local trials=4 wait_s=240 key=resnet-18/100
  while [ $# -gt 0 ]; do
    case "$1" in
      --pack) PACK=$(realpath -m "$2"); shift 2 ;;
      --work) WORK=$(realpath -m "$2"); shift 2 ;;
      --out) OUTDIR=$(realpath -m "$2"); shift 2 ;;
      --trials) trials=$2; shift 2 ;;
      --wait-s) wait_s=$2; shift 2 ;;
      --key) key=$2; shift 2 ;;
      -h|--help) usage; exit 0 ;;
      *) die "daemon: unknown argument '$1' (--help)" ;;
    esac
  done
  [[ "$key" =~ ^[A-Za-z0-9_.-]+/[1-9][0-9]*$ ]] || die "daemon: --key '$key' is not NET/BATCH (resnet-18/100)"
  mkdir -p "$WORK"
  [ -n "$OUTDIR" ] || OUTDIR=$WORK/out
  mkdir -p "$OUTDIR"
  prepare_pack
  check_device
  [ "$CC_OK" = 1 ] || die "daemon: no C compiler here: the daemon's builds link model.so with it"
  local d=$WORK/daemon port=18093 rep=$OUTDIR/gpu-daemon.txt
  rm -rf "$d" && mkdir -p "$d"
  : > "$rep"
  dlog() { echo "$*" | tee -a "$rep" >&2; }
  th_env "$TUNEHUB" serve --listen "127.0.0.1:$port" --data "$d/data" --miss-trials "$trials" \
    > "$d/serve.log" 2>&1 < /dev/null &
  local pid=$! i code
  # shellcheck disable=SC2064 # the pid is known now
  trap "kill $pid 2>/dev/null; wait $pid 2>/dev/null" EXIT
  for i in $(seq 1 100); do
    code=$(http_get "http://127.0.0.1:$port/healthz" "$d/h.body" "$d/h.hdrs")
    [ "$code" != 200 ] || break
    kill -0 "$pid" 2>/dev/null || { tail -20 "$d/serve.log" >&2; die "daemon: tunehub serve exited"; }
    sleep 0.2
  done
  [ "$code" = 200 ] || die "daemon: /healthz answered $code after 20 s"
  dlog "tunehub serve on a fresh store ($d/data), --miss-trials $trials; GET /models/cuda/$key"
  local t0 t1 v tuned ms out step
  for step in quick tuned; do
    local q="?wait=$wait_s"
    [ "$step" = quick ] || q="?tuned=1&wait=$wait_s"
    t0=$(date +%s.%N)
    code=$(http_get "http://127.0.0.1:$port/models/cuda/$key$q" "$d/$step.tar" "$d/$step.hdrs")
    t1=$(date +%s.%N)
    v=$(sed -n 's/^X-Tunehub-Version: *//Ip' "$d/$step.hdrs" | tr -d '\r')
    tuned=$(sed -n 's/^X-Tunehub-Tuned: *//Ip' "$d/$step.hdrs" | tr -d '\r')
    dlog "  GET /models/cuda/$key$q: $code after $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s, version ${v:--}, tuned ${tuned:--}, $(stat -c %s "$d/$step.tar") bytes"
    if [ "$code" != 200 ]; then
      dlog "    answer: $(head -c 600 "$d/$step.tar")"
      break
    fi
    if out=$(th_env "$TUNEHUB" run "$d/$step.tar" --repeat 30 2>&1 < /dev/null); then
      ms=$(echo "$out" | sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' | tail -1)
      dlog "    tunehub run --repeat 30: median ${ms:--} ms"
    else
      dlog "    tunehub run failed: $(echo "$out" | tail -3)"
    fi
  done
  http_get "http://127.0.0.1:$port/models/cuda/$key/versions" "$d/versions.json" "$d/v.hdrs" > /dev/null
  http_get "http://127.0.0.1:$port/jobs" "$d/jobs.json" "$d/j.hdrs" > /dev/null
  dlog "  versions: $(head -c 1500 "$d/versions.json")"
  dlog "  jobs: $(head -c 1500 "$d/jobs.json")"
  dlog "  the daemon's log, last lines:"
  tail -15 "$d/serve.log" | sed 's/^/    /' | tee -a "$rep" >&2
  echo "report: $rep"
}

case "${1:-}" in
  pack) shift; cmd_pack "$@" ;;
  daemon) shift; cmd_daemon "$@" ;;
  run) shift; cmd_run "$@" ;;
  -h|--help|"") usage; [ -n "${1:-}" ] || exit 2 ;;
  *) die "unknown command '$1': pack, run or daemon (--help)" ;;
esac
