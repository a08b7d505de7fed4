#!/usr/bin/env bash
# CTest `walkthrough_compare`: the walkthrough's shape comparison (docs/walkthrough_compare.awk)
# accepts the output of other machines and still refuses an output that changed what the page
# teaches (docs/testing.md#the-walkthrough). The outputs are made from the page's own block for
# `urpe bench kernels`, step 8 of docs/walkthrough.md, with its machine lines as other machines
# print them: another CPU model, cache sizes, OpenBLAS kernel family and build, thread counts.
# Needs no build; exits 1 naming every case that went the wrong way.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
COMPARE="$ROOT/docs/walkthrough_compare.awk"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/urpe_compare_XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# The block under the page's bench kernels command, as run_walkthrough.sh reads it.
awk '/^```console/ { inblock = 1; next }
     /^```/ { inblock = 0; grab = 0; next }
     inblock && /^\$ / { grab = ($0 ~ /urpe bench kernels --device cpu/); next }
     grab' "$ROOT/docs/walkthrough.md" > "$WORK/expected"
grep -q '^CPU: ' "$WORK/expected" && grep -q '^BLAS: ' "$WORK/expected" || {
  echo "walkthrough_compare_check.sh: docs/walkthrough.md's bench kernels block has no CPU: and BLAS: lines" >&2
  exit 1
}
# An output with every piece of the excerpt, in order (the "…" lines stand for rows left out).
grep -v '^[[:space:]]*…[[:space:]]*$' "$WORK/expected" > "$WORK/page_output"

failures=0
# machine NAME CPU_LINE BLAS_LINE: the page's output as that machine prints it must pass.
machine() {
  awk -v cpu="$2" -v blas="$3" '/^CPU: / { print cpu; next } /^BLAS: / { print blas; next } { print }' \
    "$WORK/page_output" > "$WORK/actual"
  local diff
  if ! diff=$(awk -v expected="$WORK/expected" -f "$COMPARE" "$WORK/actual"); then
    echo "FAILED: the output of $1 should have the page's shape, but: $diff" >&2
    failures=$((failures + 1))
  fi
}
# changed NAME SED_SCRIPT: the page's output changed so must fail.
changed() {
  sed -e "$2" "$WORK/page_output" > "$WORK/actual"
  if cmp -s "$WORK/actual" "$WORK/page_output"; then
    echo "FAILED: case '$1' changes nothing in the page's output (its sed script no longer applies)" >&2
    failures=$((failures + 1))
  elif awk -v expected="$WORK/expected" -f "$COMPARE" "$WORK/actual" > /dev/null; then
    echo "FAILED: an output where $1 should not have the page's shape" >&2
    failures=$((failures + 1))
  fi
}

# ---- other machines: must pass ----
machine "an AMD EPYC without AVX-512 (OpenBLAS Zen, another L2)" \
  "CPU: AMD EPYC 7B13 64-Core Processor, 2 hardware threads, 2 OpenMP threads, caches L2 512K, L3 32768K" \
  "BLAS: OpenBLAS, 2 threads (OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY USE_OPENMP Zen MAX_THREADS=64)"
machine "an AVX-512 Xeon with one OpenMP thread and OpenBLAS's pthreads build (SkylakeX)" \
  "CPU: Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz, 16 hardware threads, 1 OpenMP threads, caches L2 1280K, L3 55296K" \
  "BLAS: OpenBLAS, 1 threads (OpenBLAS 0.3.26  DYNAMIC_ARCH NO_AFFINITY SkylakeX MAX_THREADS=128)"
machine "the development machine with OpenBLAS choosing Cooperlake" \
  "CPU: AMD EPYC, 2 hardware threads, 2 OpenMP threads, caches L2 1024K, L3 32768K" \
  "BLAS: OpenBLAS, 2 threads (OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY USE_OPENMP Cooperlake MAX_THREADS=64)"
machine "a virtual machine without cache sizes in sysfs, built without OpenBLAS" \
  "CPU: unknown, 4 hardware threads, 4 OpenMP threads, caches L2 unknown, L3 unknown" \
  "BLAS: none (blocked fallback GEMM)"

# ---- what the page teaches, changed: must fail ----
changed "the CPU line is gone" '/^CPU: /d'
changed "the BLAS line is gone" '/^BLAS: /d'
changed "the CPU line no longer says the OpenMP threads" 's/ OpenMP threads/ threads/'
changed "the CPU line no longer says the caches" 's/, caches L2 .*$//'
changed "the banner names another command" 's/^urpe bench kernels/urpe bench step/'
changed "the table lost its % ref column" 's/  % ref$//'
changed "a kernel row is renamed" 's/^URPE core fwd (Toeplitz B, C)/URPE core fwd (B, C)       /'
changed "a kernel row is gone" '/^URPE core bwd/d'
changed "the rates legend changed" 's/GB\/s of minimal traffic/GB\/s of traffic/'

# ---- the bench step header (`urpe bench step`): its machine facts are masked as well ----
printf '%s\n' "urpe cpu, AMD EPYC, 2 threads, BLAS: OpenBLAS Haswell, host code: -march=native" > "$WORK/step_expected"
printf '%s\n' "urpe cpu, Intel(R) Xeon(R) CPU @ 2.20GHz, 1 threads, BLAS: built-in blocked GEMM, host code: x86-64" > "$WORK/step_actual"
if ! awk -v expected="$WORK/step_expected" -f "$COMPARE" "$WORK/step_actual" > /dev/null; then
  echo "FAILED: bench step's header from another machine should have the same shape" >&2
  failures=$((failures + 1))
fi
printf '%s\n' "urpe cpu, AMD EPYC, 2 threads, host code: -march=native" > "$WORK/step_actual"
if awk -v expected="$WORK/step_expected" -f "$COMPARE" "$WORK/step_actual" > /dev/null; then
  echo "FAILED: bench step's header without its BLAS should not have the same shape" >&2
  failures=$((failures + 1))
fi

if [ "$failures" -gt 0 ]; then
  echo "walkthrough_compare_check.sh: $failures case(s) went the wrong way" >&2
  exit 1
fi
echo "walkthrough_compare_check.sh: 4 other machines' outputs pass; 9 changed outputs and a changed header fail"
