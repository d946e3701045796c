#!/usr/bin/env bash
# scripts/bench/gpu.sh end to end without a GPU, so that a lent device never spends its minutes on the script
# (issue 41): `pack` of this build (every pipeline in gpu.sh reads its input to the end: `ldd --version | head
# -1` died of SIGPIPE under pipefail one pack in three), `run --dry-run` (the plan), then `run` in two calls
# against a fake nvidia-smi on PATH, the unit tests' fake libcuda.so.1 (th_fakecuda) with kernels that do
# nothing, and a stub PyTorch peer in place of gpu_torch.py (a python3 on PATH that hands that script to the
# stub and everything else to the real python3). The rows are squeezenet_v1.1:1 and nosuchnet:1 (a network
# whose builds and PyTorch row fail: the notes say why). The first call stops at its --deadline-s (the stub
# sleeps after the first row until gpu.sh's timeout ends it, or the builds leave too little time for
# PyTorch); the second goes on from there: nothing the first call measured is measured again, the stub is
# asked only for the rows it has not answered, and the table, gpu.csv and gpu-notes.txt are complete, the
# tuning left out of the small budget.
# Environment: BUILD (the build folder to pack), TH_FAKECUDA_DIR (the fake libcuda.so.1's folder).
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
GPU_SH=$ROOT/scripts/bench/gpu.sh
[[ -f "${TH_FAKECUDA_DIR:-}/libcuda.so.1" ]] || { echo "SKIP: no CUDA build (no fake libcuda.so.1)"; exit 77; }
if ldconfig -p 2>/dev/null | awk '$1 == "libcuda.so.1" { f = 1 } END { exit !f }'; then
  echo "SKIP: this machine's driver has a libcuda.so.1 in the loader's cache: gpu.sh would take it over the fake"
  exit 77
fi

# Every pipeline whose reader may stop before its writer is done (head, grep -q/-m, an awk that exits) kills
# the writer with SIGPIPE, and under `set -o pipefail` the script with it, now and then: none may be left.
bad=$(grep -nE '\|[[:space:]]*(head\b|grep[[:space:]]+-[a-zA-Z]*[qm]|awk[^|]*[{;][[:space:]]*exit\b)' "$GPU_SH" || true)
[[ -z "$bad" ]] || fail "gpu.sh has pipelines whose reader stops early (SIGPIPE under pipefail):
$bad"

# ---- pack ----
rc=0
bash "$GPU_SH" pack "$TMP/pack" --xz-level 0 >"$TMP/pack.out" 2>&1 || rc=$?
cat "$TMP/pack.out"
[[ $rc -eq 0 ]] || fail "gpu.sh pack exited $rc"
grep -q '^glibc [0-9][0-9.]* ' "$TMP/pack/MANIFEST.txt" \
  || fail "the manifest has no glibc version: $(cat "$TMP/pack/MANIFEST.txt")"
grep -q '^tests [1-9]' "$TMP/pack/MANIFEST.txt" || fail "the manifest lists no gpu test"
grep -q '^  bin/tunehub ' "$TMP/pack/MANIFEST.txt" || fail "the manifest lists no tunehub"

# ---- the fakes ----
mkdir -p "$TMP/bin"
cat >"$TMP/bin/nvidia-smi" <<'EOF'
#!/bin/bash
# a fake nvidia-smi: eight GPUs, as on a large machine (more than one line for every query)
for i in 0 1 2 3 4 5 6 7; do
  case "$*" in
    -L) echo "GPU $i: NVIDIA H200 (UUID: GPU-fake-$i)" ;;
    *--query-gpu=driver_version*) echo "570.86.15" ;;
    *--query-gpu=compute_cap*) echo "9.0" ;;
  esac
done
EOF
real_py=$(command -v python3) || fail "no python3"
cat >"$TMP/bin/python3" <<EOF
#!/bin/bash
case "\${1:-}" in */gpu_torch.py) shift; exec bash "$TMP/torch_stub.sh" "\$@" ;; esac
exec "$real_py" "\$@"
EOF
# The stub: gpu_torch.py's output for each row (--out lines "net batch mode h2h dev note", "torch ..." lines on
# stderr); a network it does not know fails as a row does in PyTorch. While $TMP/torch_sleep exists (the first
# gpu.sh call), it sleeps after one row.
cat >"$TMP/torch_stub.sh" <<EOF
#!/bin/bash
rows="" out=""
while [ \$# -gt 0 ]; do
  case "\$1" in --rows) rows=\$2; shift 2 ;; --out) out=\$2; shift 2 ;; *) shift ;; esac
done
echo "\$rows" >> "$TMP/torch_calls.txt"
echo "torch 2.9.0+stub, cuDNN 91002, NVIDIA H200" >&2
for row in \$rows; do
  net=\${row%:*} b=\${row#*:}
  if [ "\$net" = nosuchnet ]; then
    why="KeyError: no network nosuchnet"
    printf '%s\t%s\t%s\t-\t-\t%s\n' "\$net" "\$b" fp32 "\$why" "\$net" "\$b" tf32 "\$why" >> "\$out"
    echo "torch \$net b\$b failed: KeyError: no network nosuchnet" >&2
  else
    printf '%s\t%s\t%s\t%s\t%s\t-\n' "\$net" "\$b" fp32 4.000 3.000 "\$net" "\$b" tf32 2.000 1.500 >> "\$out"
    echo "torch \$net b\$b fp32: median 4.000 ms host to host, 3.000 ms on the device (30 runs)" >&2
  fi
  [ ! -f "$TMP/torch_sleep" ] || exec sleep 600
done
EOF
chmod +x "$TMP/bin/nvidia-smi" "$TMP/bin/python3"
# the fake driver's kernel library (TH_FAKECU_KERNELS): every kernel does nothing
cat >"$TMP/noop.c" <<'EOF'
int th_emu_launch(const char *n, void **p, const unsigned *g, const unsigned *b);
int th_emu_launch(const char *n, void **p, const unsigned *g, const unsigned *b) {
  (void)n, (void)p, (void)g, (void)b;
  return 0;
}
EOF
cc -shared -fPIC -o "$TMP/noop.so" "$TMP/noop.c" || fail "cannot build the no-op kernel library"
export PATH=$TMP/bin:$PATH LD_LIBRARY_PATH=$TH_FAKECUDA_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TH_FAKECU_KERNELS=$TMP/noop.so
unset OUT

W=$TMP/work
run_gpu() {
  bash "$GPU_SH" run --pack "$TMP/pack" --work "$W" --out "$TMP/out" --rows "squeezenet_v1.1:1 nosuchnet:1" \
    --skip-tests --budget-s 120 "$@"
}
# res KEY COL: the values recorded for KEY COL, one a line
res() { awk -F'\t' -v k="$1" -v c="$2" '$1 == k && $2 == c { print $3 }' "$W/results.tsv"; }

# ---- the plan (--dry-run): no device needed; it unpacks the pack into WORK, which the calls below reuse ----
rc=0
bash "$GPU_SH" run --pack "$TMP/pack" --work "$W" --rows "squeezenet_v1.1:1 nosuchnet:1" --budget-s 120 \
  --dry-run >"$TMP/dry.out" 2>&1 || rc=$?
cat "$TMP/dry.out"
[[ $rc -eq 0 ]] || fail "the dry run exited $rc"
grep -q '^  rows: squeezenet_v1.1:1 nosuchnet:1 $' "$TMP/dry.out" || fail "the plan does not list the rows given"
grep -q '^    squeezenet_v1.1:1: not tuned (' "$TMP/dry.out" || fail "the plan tunes within 120 s"
[[ ! -s "$W/results.tsv" ]] || fail "the dry run recorded results: $(cat "$W/results.tsv")"

# ---- the first call: stops at its deadline ----
t0=$(date +%s)
rc=0
touch "$TMP/torch_sleep"
run_gpu --deadline-s 80 >"$TMP/run1.out" 2>"$TMP/run1.err" || rc=$?
echo "--- first call (exit $rc, $(($(date +%s) - t0)) s) ---"
cat "$TMP/run1.err" "$TMP/run1.out"
[[ $rc -eq 3 ]] || fail "the first call exited $rc, want 3 (stopped at its deadline)"
grep -q '^stopped before .*(--deadline-s 80) is near; run the same command again' "$W/notes.txt" \
  || fail "the first call's notes do not say where it stopped: $(cat "$W/notes.txt")"
grep -q 'NVIDIA H200 (UUID: GPU-fake-0); driver 570.86.15' "$TMP/run1.err" || fail "the device line is not the first GPU's"
[[ "$(res squeezenet_v1.1:1 th_fp32_fb)" =~ ^[0-9.]+$ ]] || fail "the first call timed no fp32 fallback bundle"
# how far the first call got before its deadline depends on the machine's load: the builds it did
{ grep -o 'fb builds: [^ ]*' "$TMP/run1.err" || true; } | sort >"$TMP/fb1.txt"
torch_left=""
for k in squeezenet_v1.1:1 nosuchnet:1; do [[ -n "$(res "$k" torch_fp32)" ]] || torch_left+="${torch_left:+ }$k"; done
echo "rows PyTorch has not answered after the first call: '$torch_left'"
cp "$W/results.tsv" "$TMP/results1.tsv"

# ---- the second call: goes on where the first stopped ----
rm -f "$TMP/torch_sleep"
rc=0
run_gpu --deadline-s 200 >"$TMP/run2.out" 2>"$TMP/run2.err" || rc=$?
echo "--- second call (exit $rc) ---"
cat "$TMP/run2.err" "$TMP/run2.out"
[[ $rc -eq 0 ]] || fail "the second call exited $rc"
{ grep -o 'fb builds: [^ ]*' "$TMP/run2.err" || true; } | sort >"$TMP/fb2.txt"
[[ -z "$(comm -12 "$TMP/fb1.txt" "$TMP/fb2.txt")" ]] ||
  fail "the second call built again what the first built: $(comm -12 "$TMP/fb1.txt" "$TMP/fb2.txt" | tr '\n' ' ')"
[[ "$(sort -u "$TMP/fb1.txt" "$TMP/fb2.txt" | wc -l)" == 4 ]] ||
  fail "the two calls built $(sort -u "$TMP/fb1.txt" "$TMP/fb2.txt" | tr '\n' ' '), want the 4 fallback bundles"
[[ "$(sed -n '$p' "$TMP/torch_calls.txt")" == "$torch_left" ]] \
  || fail "PyTorch's last call asked for '$(sed -n '$p' "$TMP/torch_calls.txt")', want the rows left: '$torch_left'"
head -n "$(wc -l <"$TMP/results1.tsv")" "$W/results.tsv" | cmp -s - "$TMP/results1.tsv" \
  || fail "the second call rewrote the first call's results"
dup=$(awk -F'\t' '{ n[$1 " " $2]++ } END { for (k in n) if (n[k] > 1) print k }' "$W/results.tsv")
[[ -z "$dup" ]] || fail "measured twice across the calls: $dup"

# the table
grep -q '^network  *batch | *fp32 fb ' "$TMP/run2.out" || fail "no table header"
grep -q 'against PyTorch 2.9.0+stub eager' "$TMP/run2.out" || fail "the table does not name the PyTorch version"
grep -qE '^squeezenet_v1.1 +1 \| +[0-9.]+ +- \| +[0-9.]+ +- \| +4.000 +2.000 \| +[0-9.]+ +[0-9.]+$' "$TMP/run2.out" \
  || fail "squeezenet's row in the table: $(grep '^squeezenet' "$TMP/run2.out")"
grep -qE '^nosuchnet +1 \|( +- +- \|){3} +- +-$' "$TMP/run2.out" \
  || fail "nosuchnet's row: $(grep '^nosuchnet' "$TMP/run2.out")"
grep -q "CSV: $TMP/out/gpu.csv" "$TMP/run2.out" || fail "the table does not name the CSV"

# the CSV: one line a row, the ratio the tunehub figure over PyTorch's
csv=$TMP/out/gpu.csv
[[ "$(wc -l <"$csv")" == 3 ]] || fail "gpu.csv has $(wc -l <"$csv") lines, want a header and 2 rows: $(cat "$csv")"
head -1 "$csv" | grep -q '^network,batch,th_fp32_fallback_ms,' || fail "gpu.csv's header: $(head -1 "$csv")"
"$real_py" - "$csv" <<'EOF' || fail "gpu.csv: $(cat "$csv")"
import csv, sys
rows = {r["network"]: r for r in csv.DictReader(open(sys.argv[1]))}
s, n = rows["squeezenet_v1.1"], rows["nosuchnet"]
assert s["batch"] == "1" and s["torch_fp32_ms"] == "4.000" and s["torch_tf32_ms"] == "2.000", s
assert s["torch_fp32_device_ms"] == "3.000" and s["torch_tf32_device_ms"] == "1.500", s
fb32, fb_tf = float(s["th_fp32_fallback_ms"]), float(s["th_tf32_fallback_ms"])
assert fb32 > 0 and fb_tf > 0, s
assert s["th_fp32_tuned_ms"] == "-" and s["th_tf32_tuned_ms"] == "-" and s["tuned_trials_per_task"] == "-", s
assert abs(float(s["th_fp32_over_torch_fp32"]) - fb32 / 4) < 0.006, s
assert abs(float(s["th_tf32_over_torch_tf32"]) - fb_tf / 2) < 0.006, s
assert all(n[c] == "-" for c in n if c.endswith("_ms") or "_over_" in c), n
assert "th_fp32_fb: build failed:" in n["notes"] and "th_tf32_fb: build failed:" in n["notes"], n
assert "torch_fp32: KeyError: no network nosuchnet" in n["notes"], n
print("gpu.csv:", s, n, sep="\n  ")
EOF

# the notes: the first call's stop is history; the tuning was left out of the 120 s budget, row by row
notes=$TMP/out/gpu-notes.txt
[[ -f "$notes" ]] || fail "no gpu-notes.txt beside the CSV"
! grep -q '^stopped before' "$notes" || fail "the notes still say the run stopped: $(cat "$notes")"
for k in squeezenet_v1.1:1 nosuchnet:1; do
  grep -q "^$k: not tuned (" "$notes" || fail "the notes do not say why $k was not tuned: $(cat "$notes")"
done
grep -q 'nosuchnet:1 th_fp32_fb: build failed' "$TMP/run2.out" || fail "the table does not say why nosuchnet has no figure"
# ---- records carried across leases: a row whose fp32 tasks all have a committed record (the H200's,
# tests/data/records-h200-sm_90.jsonl, taken for the device's compute capability 9.0) is built tuned without
# trials (its 30 s budget leaves no trials for the tf32 tasks, which have no record: those take fallbacks),
# and the run exports its store's best records for the next lease ----
W=$TMP/work2
rc=0
bash "$GPU_SH" run --pack "$TMP/pack" --work "$W" --out "$TMP/out2" --rows "resnet-18:1" --skip-tests \
  --budget-s 30 --deadline-s 300 >"$TMP/run3.out" 2>"$TMP/run3.err" || rc=$?
echo "--- records call (exit $rc) ---"
cat "$TMP/run3.err" "$TMP/run3.out"
[[ $rc -eq 0 ]] || fail "the records call exited $rc"
grep -q 'records: records-h200-sm_90.jsonl: imported 57 records' "$W/notes.txt" \
  || fail "the committed records were not imported: $(cat "$W/notes.txt")"
[[ "$(res resnet-18:1 tuned)" == imported ]] || fail "resnet-18:1 was not built from its records: $(res resnet-18:1 tuned)"
[[ "$(res resnet-18:1 th_fp32_tuned)" =~ ^[0-9.]+$ ]] || fail "no tuned fp32 figure for resnet-18:1"
! grep -q 'tune resnet-18:1 fp32' "$TMP/run3.err" || fail "resnet-18:1's fp32 tasks were tuned again"
"$real_py" - "$TMP/out2/records-sm_90.jsonl" <<'EOF' || fail "the exported records: $(head -c 400 "$TMP/out2/records-sm_90.jsonl")"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
head = json.loads(lines[0])
assert head["tunehub_records"] == 1 and head["count"] == len(lines) - 1 >= 57, head
assert all(json.loads(l)["target"] == "cuda -arch=sm_90" for l in lines[1:])
print("exported", head["count"], "records")
EOF

echo "PASS integration.gpu_script"
