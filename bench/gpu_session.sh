#!/usr/bin/env bash
# The calls on a lent GPU machine (bench/cuda_notes.md). Several steps may share one call
# (`bench/gpu_session.sh build parity sanitize`, with DEADLINE set to stay inside the device
# tool's 10-minute limit):
#   bench/gpu_session.sh build      configure + build the CUDA tree (cmake directly: the machine
#                                   has no package registry, so `make deps` could not install)
#   bench/gpu_session.sh parity     the CUDA-vs-CPU parity suite twice (bit-identical table
#                                   gradients between runs), the CUDA training suite, then every
#                                   ctest suite
#   bench/gpu_session.sh core       after a change to the attention kernels: parity twice, memcheck
#                                   and racecheck on the attention cases, the kernel table
#   bench/gpu_session.sh carried    with BUILD=gpu_bin (binaries built here and carried): parity
#                                   twice and the host-sync count, the suites that need no build
#   bench/gpu_session.sh sanitize   compute-sanitizer memcheck, racecheck, initcheck, synccheck
#   bench/gpu_session.sh bench      urpe bench kernels --device cuda, FP32 then --tf32
#   bench/gpu_session.sh ncu        Nsight Compute on the URPE core kernels of the bench
#   bench/gpu_session.sh ncu_times  every kernel's GPU time over one attention bench (n = 1024)
#   bench/gpu_session.sh attention_tc  the fused attention on the tensor cores (after build): its
#                                   parity suites twice (same bits across runs), memcheck and
#                                   racecheck, the bench at the issue's shapes beside PyTorch,
#                                   one Nsight Compute report per tensor-core kernel; ~5 min on
#                                   an H100 (bench/cuda_notes.md has the plan and predictions)
#   bench/gpu_session.sh attention_tc_pipeline  the tensor-core kernels' pipelined variants
#                                   (--tc-pipeline, cp.async staging: the forward, dQ and dK/dV)
#                                   against today's, after `build`: their bit-for-bit tests on the
#                                   GPU (forward O, L; backward dQ, dK, dV, dB, dC), memcheck and
#                                   racecheck of them, then `urpe bench attention` (forward and
#                                   forward + backward rows) at d 64, B 8, H 16, n 1k/4k, causal
#                                   and not, TF32 and BF16, pipeline off/on in alternating rounds,
#                                   and a table of on/off per row; ~3 min on an H100. Rehearsed on
#                                   the simulator build:
#                                     ATTENTION_TC_SMOKE=1 BUILD=build URPE_BIN=./build/urpe-cudasim \
#                                       TC_SUITE=./build/test_cuda_sim_flash_tensor_core \
#                                       bench/gpu_session.sh attention_tc_pipeline
#   bench/gpu_session.sh tc_rows_ab  the BF16 forward with two 16-row blocks per warp (--tc-rows 2)
#                                   against one: its bit-for-bit case on the GPU, memcheck and
#                                   racecheck of it, then alternating rounds at d 64, B 8, H 16,
#                                   n 1k/4k/16k, causal and not, each row stating rows 1|2
#   bench/gpu_session.sh tc_counters  one ncu report each of dK/dV (TF32, BF16: the bank-conflict
#                                   fix), the pipelined TF32 forward and the two-row BF16 forward
#                                   (single-buffered and pipelined), with text summaries; ~2 min
#   bench/gpu_session.sh attention_ab  today's tensor-core kernels against a urpe built before a
#                                   change that has no switch (URPE_BEFORE=...): the TC suite twice,
#                                   then the fused rows at d 64, n 1k/4k, TF32/BF16, causal and
#                                   not, before/after in alternating rounds, and after/before per row
#   bench/gpu_session.sh nccl       the NCCL path of data-parallel training: test_cuda_nccl (one
#                                   rank on one GPU, two ranks when two GPUs and mpirun are there)
#                                   against the MPI/CPU path; with mpirun and two GPUs, a 2-rank
#                                   device=cuda training run (plain and sharded) beside 1 rank
#   bench/gpu_session.sh compare    urpe against PyTorch eager on the same GPU: the bench training
#                                   step, Table 5, the attention alone (tools/torch_reference.py,
#                                   bench/torch_attention.py)
#   bench/gpu_session.sh families   each family's bench step (encoder, txl, graphormer) beside its
#                                   PyTorch twin, eager and torch.compile, two alternating rounds
#                                   (tools/torch_bench.py --device cuda)
#   bench/gpu_session.sh presets    one measured step of each --scale paper preset: `urpe profile`
#                                   of steps 3..6 (step time, peak memory, the per-op table);
#                                   PRESETS_PRECISION=bf16 runs them in BF16 (logs presets_bf16/);
#                                   then txl-base-paper at L = 4 and 8 (Table 4; PRESETS_TXL_DEPTHS=0: not)
#   bench/gpu_session.sh nsight     docs/profiling.md's Nsight recipe as written: ncu on step 41 of
#                                   pi-paper filtered by kernel name, then by NVTX range
#   bench/gpu_session.sh precision  fp32 against tf32 against bf16 (issue 36): `urpe profile` of
#                                   the PI preset and the encoder at Table 5's size (12 layers,
#                                   d 768, batch 32, n = 512) in each precision, two alternating
#                                   rounds; per run the step time, peak memory and the GEMM rows
#                                   (linear, matmul, cast) of the per-op table; at the end
#                                   bench/precision_table.py's table (precision_table.md)
#   bench/gpu_session.sh precision_torch  PyTorch on the same Table 5 model (tools/torch_bench.py):
#                                   fp32, tf32, bf16 under torch.autocast eager, bf16 compiled; the
#                                   median step and peak memory beside `precision`'s. Rehearsed
#                                   without a GPU: PRECISION_SMOKE=1 PRECISION_TORCH_DEVICE=cpu
#                                   PRECISION_ROUNDS=1 bench/gpu_session.sh precision_torch
#   bench/gpu_session.sh gemm_dtypes  issue 36's GEMMs by dtype: `urpe bench peaks --device cuda`
#                                   (FP32, TF32, BF16→FP32 as linear calls it, BF16→BF16; β 0
#                                   and 1; 8192³ and the Table 5 encoder's linear shapes) beside
#                                   bench/torch_gemm.py (torch.matmul/addmm/F.linear at the same
#                                   shapes in fp32, tf32, bf16), two alternating rounds; under a
#                                   minute after `build`. Rehearsed on the simulator build
#                                   (GEMM_DTYPES_SMOKE=1: smoke sizes, PyTorch's rows listed by
#                                   --dry-run):
#                                     GEMM_DTYPES_SMOKE=1 BUILD=build URPE_BIN=./build/urpe-cudasim \
#                                       bench/gpu_session.sh gemm_dtypes
#   bench/gpu_session.sh syncs      issue 37's host synchronisations: their count in a steady step
#                                   of each family (test_cuda_syncs), then the GPU idle share of a
#                                   steady step (3..6) of each paper preset and where it lies
#                                   (bench/profile_gaps.py); 2026-11-26's record is the before.
#                                   As long as `presets` (the same runs) plus the suite, after
#                                   `build`; use DEADLINE. Rehearsed on the simulator
#                                   build with tiny presets (SYNCS_SMOKE=1, binaries named by
#                                   URPE_BIN and SYNCS_SUITE):
#                                     SYNCS_SMOKE=1 BUILD=build URPE_BIN=./build/urpe-cudasim \
#                                       SYNCS_SUITE=./build/test_cuda_sim_syncs bench/gpu_session.sh syncs
#   bench/gpu_session.sh graphormer_step  issue 37's Graphormer step (after `build`, ~2 min on an
#                                   H200): `urpe profile` steps 3..6 of the ZINC and PCQM4M paper
#                                   presets with where the GPU's idle time lies (bench/profile_gaps.py),
#                                   then the bench step beside tools/torch_bench.py eager and
#                                   torch.compile (GRAPHORMER_COMPILE=0 leaves compile out).
#                                   Rehearsed on the simulator build with tiny sizes
#                                   (GRAPHORMER_SMOKE=1; PyTorch's lines printed, not run, where
#                                   torch is missing):
#                                     GRAPHORMER_SMOKE=1 BUILD=build URPE_BIN=./build/urpe-cudasim \
#                                       bench/gpu_session.sh graphormer_step
#   bench/gpu_session.sh capture    issue 37's captured training step (docs/cuda.md#cuda-graphs;
#                                   after `build`, a few minutes): test_cuda_graphs (eager against
#                                   the replayed step, bit for bit, on the GPU's own capture), the
#                                   encoder's bench step eager
#                                   against cuda_graph=on in alternating rounds in one process
#                                   (materialized and fused attention), then pi-paper (one
#                                   micro-batch of 128: the switch needs accum_steps = 1) trained
#                                   60 steps with cuda_graph off and on, twice alternating: the
#                                   tokens/s of steps 41..60 and the train losses, which must be
#                                   the same. `urpe profile` refuses the switch (its per-op hooks
#                                   see no op of a replayed step), so no idle share is measured.
#                                   Rehearsed on the simulator build (CAPTURE_SMOKE=1: tiny sizes):
#                                     CAPTURE_SMOKE=1 BUILD=build URPE_BIN=./build/urpe-cudasim \
#                                       CAPTURE_SUITE=./build/test_cuda_sim_graphs bench/gpu_session.sh capture
#   bench/gpu_session.sh capture_graphormer  issue 37's Graphormer step captured (cuda_graph = on,
#                                   its batches padded to one shape: fixed_shapes; after `build`,
#                                   ~3 min on an H100): test_cuda_graphs' Graphormer case (eager
#                                   against replayed, bit for bit, on the GPU's own capture); the
#                                   bench step eager against replayed in alternating rounds with
#                                   the ops' GPU time and the idle share (1 − ops / step); then per
#                                   preset (graphormer-slim-urpe, graphormer-pcqm4m-urpe) `urpe
#                                   profile` of eager steps 3..6 with fixed_shapes (Σ self time of
#                                   the ops: the GPU work of the captured step) and 40-step runs
#                                   with the batch's own padding, fixed_shapes eager and
#                                   cuda_graph=on, two alternating rounds: each run's step time
#                                   from the last train row (steps 21..40, replays only) and
#                                   idle ≈ 1 − ops / step. Rehearsed on the simulator build:
#                                     CAPTURE_SMOKE=1 BUILD=build URPE_BIN=./build/urpe-cudasim \
#                                       CAPTURE_SUITE=./build/test_cuda_sim_graphs bench/gpu_session.sh capture_graphormer
#   bench/gpu_session.sh profile    urpe's per-op profile of the bench step on the GPU (peaks, then
#                                   `urpe profile --device cuda`), torch.profiler on the same step,
#                                   and Nsight Systems' kernel/NVTX sums of the same window when
#                                   nsys is there (docs/profiling.md)
# Logs go to $OUT (the folder the device tool brings back) or ./gpu_logs; the last lines of each
# step are printed so the tool's reply carries them.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-cuda}
mkdir -p "${OUT:-gpu_logs}"
LOGS=$(cd "${OUT:-gpu_logs}" && pwd)

# The machine's peaks (urpe bench peaks --device cuda), measured once per call by the first command
# that needs them (profile, presets) and kept with the logs.
export URPE_PEAKS_CACHE="$LOGS/peaks.json"

# DEADLINE (seconds since the epoch, optional): no step runs past it, so one device call that
# chains several steps still ends inside the tool's limit with its logs written.
DEADLINE=${DEADLINE:-0}
step() {  # step NAME COMMAND...: runs COMMAND, log in $LOGS/NAME.log, prints its tail
  local name=$1
  shift
  local limit=${STEP_TIMEOUT:-900}
  if [ "$DEADLINE" -gt 0 ]; then
    local left=$((DEADLINE - $(date +%s)))
    if [ "$left" -lt 10 ]; then
      echo "== $name: not run (deadline reached)"
      return 124
    fi
    [ "$left" -lt "$limit" ] && limit=$left
  fi
  echo "== $name: $* (limit ${limit}s)"
  local start=$(date +%s)
  timeout --kill-after=5 "$limit" "$@" >"$LOGS/$name.log" 2>&1
  local rc=$?
  tail -n 25 "$LOGS/$name.log"
  echo "== $name: exit $rc after $(($(date +%s) - start))s"
  return $rc
}

# The fused attention on the tensor cores (issue 35), one call after `build`. Rehearsed without a
# GPU on the simulator build with tiny shapes (ATTENTION_TC_SMOKE=1, the binaries named by
# URPE_BIN / TC_SUITE / PARITY_SUITE, and stand-ins for ncu and compute-sanitizer on PATH):
#   ATTENTION_TC_SMOKE=1 BUILD=build URPE_BIN=./build/urpe-cudasim \
#     TC_SUITE=./build/test_cuda_sim_flash_tensor_core PARITY_SUITE=./build/test_cuda_sim_parity \
#     bench/gpu_session.sh attention_tc
# The shapes and binaries of attention_tc, as variables of the caller (bash's dynamic scope).
attention_tc_shapes() {
  urpe=${URPE_BIN:-./$BUILD/urpe} tc_suite=${TC_SUITE:-./$BUILD/test_cuda_flash_tensor_core}
  parity_suite=${PARITY_SUITE:-./$BUILD/test_cuda_parity}
  fused_cases='*fused*'  # the scalar fused kernels' parity cases (FP32: the reference path)
  torch_check=""
  # Shapes: the issue's targets, or tiny ones for the rehearsal (same commands, same options).
  b32="--batch 32 --heads 4 --head-dim 32 --lengths 1024" t5="--batch 32 --heads 12 --head-dim 64 --lengths 128,256,512"
  d64="--batch 8 --heads 16 --head-dim 64 --lengths 1024,4096,16384" long="--batch 8 --heads 16 --head-dim 64 --lengths 16384,32768"
  # The BF16 rows: d 64 without 16k (its TF32 rows took most of the 29 + 19 s), to keep
  # attention_tc_measure + attention_tc_check near 4 minutes on an H200.
  d64_bf16="--batch 8 --heads 16 --head-dim 64 --lengths 1024,4096"
  flex_n="--batch 8 --heads 16 --head-dim 64 --lengths 1024,4096" ncu_shape="--batch 8 --heads 16 --head-dim 64 --lengths 4096"
  reps=10 long_reps=2 sz=""
  # ATTENTION_TC_PEERS=0 skips attention_tc_measure's PyTorch rows (SDPA, PyTorch's materialized
  # URPE): they do not depend on urpe's kernels, and a call that re-measures urpe after a kernel
  # change compares with the record that holds them on the same kind of card (H200: 2026-11-26).
  # FlexAttention (attention_tc_check): ATTENTION_TC_FLEX=0 skips it (measured on the H200 2026-11-27b).
  peers=${ATTENTION_TC_PEERS:-1}
  if [ "${ATTENTION_TC_SMOKE:-0}" = 1 ]; then
    b32="--batch 1 --heads 2 --head-dim 32 --lengths 70"; t5="--batch 1 --heads 2 --head-dim 64 --lengths 40,70"
    d64="--batch 1 --heads 2 --head-dim 64 --lengths 64,130"; d64_bf16="$d64"; long="--batch 1 --heads 1 --head-dim 64 --lengths 200"
    flex_n="$d64"; ncu_shape="--batch 1 --heads 2 --head-dim 64 --lengths 70"; reps=1; long_reps=1
    torch_check="--dry-run"
    sz="--sizes smoke"  # the TF32 reference GEMM at 256³ (8192³ would take hours simulated)
  fi
}

# The tensor-core suite ($tc_suite) twice, logs PREFIX_parity1/2: each run prints every case's
# gradient bits (TF32 cases' "gradient bits", BF16 cases' "bf16 bits"); the two runs' must match.
tc_parity_twice() {
  local prefix=$1
  step "${prefix}_parity1" "$tc_suite"
  step "${prefix}_parity2" "$tc_suite"
  grep -E '^(gradient|bf16) bits' "$LOGS/${prefix}_parity1.log" >"$LOGS/${prefix}_bits1.txt"
  grep -E '^(gradient|bf16) bits' "$LOGS/${prefix}_parity2.log" >"$LOGS/${prefix}_bits2.txt"
  if [ -s "$LOGS/${prefix}_bits1.txt" ] && cmp -s "$LOGS/${prefix}_bits1.txt" "$LOGS/${prefix}_bits2.txt"; then
    echo "== ${prefix}_bits: the two runs' gradients are bit-identical ($(wc -l <"$LOGS/${prefix}_bits1.txt") cases)"
  else
    echo "== ${prefix}_bits: MISMATCH or missing between the two runs (${prefix}_bits1.txt, ${prefix}_bits2.txt)"
  fi
}

# attention_tc (issue 35): parity, bench against PyTorch, Nsight Compute and the sanitizers of the
# tensor-core fused attention; attention_tc_measure is its first half (parity and the bench).
attention_tc_measure() {
  attention_tc_shapes
  tc_parity_twice tc
  # The bench at the targets, each urpe row beside its PyTorch peers (same shapes, TF32 as stated).
  # shellcheck disable=SC2086
  {
    step bench_b32_tf32 "$urpe" bench attention --device cuda $b32 --tf32 --repeats $reps $sz
    [ "$peers" = 1 ] && step torch_b32_tf32 python3 bench/torch_attention.py --device cuda $b32 --tf32 --repeats $reps \
      --paths materialized,sdpa+bias,sdpa,sdpa_bf16 $torch_check
    step bench_table5_tf32 "$urpe" bench attention --device cuda $t5 --tf32 --repeats $reps $sz
    step bench_d64_tf32 "$urpe" bench attention --device cuda $d64 --tf32 --attention fused --repeats $reps $sz
    [ "$peers" = 1 ] && step torch_d64_tf32 python3 bench/torch_attention.py --device cuda $d64 --tf32 --repeats $reps \
      --paths sdpa,sdpa_bf16 $torch_check
    step bench_d64_causal_tf32 "$urpe" bench attention --device cuda $d64 --tf32 --causal --attention fused --repeats $reps $sz
    [ "$peers" = 1 ] && step torch_d64_causal_tf32 python3 bench/torch_attention.py --device cuda $d64 --tf32 --causal --repeats $reps \
      --paths sdpa,sdpa_bf16 $torch_check
    step bench_long_tf32 "$urpe" bench attention --device cuda $long --tf32 --attention fused --repeats $long_reps $sz
    step bench_b32_fp32 "$urpe" bench attention --device cuda $b32 --repeats $reps $sz
    # BF16 tiles (precision=bf16's fused attention), the TF32 rows' shapes but 16k.
    step bench_b32_bf16 "$urpe" bench attention --device cuda $b32 --math bf16 --attention fused --repeats $reps $sz
    step bench_d64_bf16 "$urpe" bench attention --device cuda $d64_bf16 --math bf16 --attention fused --repeats $reps $sz
    step bench_d64_causal_bf16 "$urpe" bench attention --device cuda $d64_bf16 --math bf16 --causal --attention fused \
      --repeats $reps $sz
  }
  return 0
}

# The second half of attention_tc: the peers that only PyTorch has (FlexAttention), Nsight Compute,
# the sanitizers and the scalar fused kernels' parity. A call short of device time runs
# `attention_tc_measure`, other steps, then this, under one DEADLINE.
attention_tc_check() {
  attention_tc_shapes
  # shellcheck disable=SC2086
  {
    [ "${ATTENTION_TC_FLEX:-1}" = 1 ] && step torch_flex_tf32 python3 bench/torch_attention.py --device cuda $flex_n --tf32 --repeats $reps \
      --paths flex,sdpa+bias $torch_check
    # Nsight Compute, one launch each: the forward, then the backward's dQ and dK/dV kernels.
    step ncu_tc_fwd ncu --clock-control none --set full -k regex:urpe_flash_tc_forward_kernel --launch-count 1 \
      -o "$LOGS/tc_fwd" -f "$urpe" bench attention --device cuda $ncu_shape --tf32 --attention fused --repeats 1 $sz
    step ncu_tc_bwd ncu --clock-control none --set full -k regex:"urpe_flash_tc_backward_(dq|dkdv)_kernel" \
      --launch-count 2 -o "$LOGS/tc_bwd" -f "$urpe" bench attention --device cuda $ncu_shape --tf32 --attention fused --repeats 1 $sz
    # The same kernels on BF16 tiles (their names are the TF32 ones; --math picks the instantiation).
    step ncu_tc_fwd_bf16 ncu --clock-control none --set full -k regex:urpe_flash_tc_forward_kernel --launch-count 1 \
      -o "$LOGS/tc_fwd_bf16" -f "$urpe" bench attention --device cuda $ncu_shape --math bf16 --attention fused --repeats 1 $sz
    step ncu_tc_bwd_bf16 ncu --clock-control none --set full -k regex:"urpe_flash_tc_backward_(dq|dkdv)_kernel" \
      --launch-count 2 -o "$LOGS/tc_bwd_bf16" -f "$urpe" bench attention --device cuda $ncu_shape --math bf16 --attention fused \
      --repeats 1 $sz
  }
  [ -f "$LOGS/tc_fwd_bf16.ncu-rep" ] && step ncu_tc_fwd_bf16_summary ncu --import "$LOGS/tc_fwd_bf16.ncu-rep" --page details
  [ -f "$LOGS/tc_bwd_bf16.ncu-rep" ] && step ncu_tc_bwd_bf16_summary ncu --import "$LOGS/tc_bwd_bf16.ncu-rep" --page details
  [ -f "$LOGS/tc_fwd.ncu-rep" ] && step ncu_tc_fwd_summary ncu --import "$LOGS/tc_fwd.ncu-rep" --page details
  [ -f "$LOGS/tc_bwd.ncu-rep" ] && step ncu_tc_bwd_summary ncu --import "$LOGS/tc_bwd.ncu-rep" --page details
  # compute-sanitizer memcheck on the tensor-core suite (every kernel, small shapes), the scalar
  # fused kernels' parity twice; racecheck, the slowest, runs last.
  STEP_TIMEOUT=120 step tc_memcheck compute-sanitizer --tool memcheck --error-exitcode 1 "$tc_suite"
  step fused_parity1 "$parity_suite" "--test-case=$fused_cases"
  step fused_parity2 "$parity_suite" "--test-case=$fused_cases"
  STEP_TIMEOUT=150 step tc_racecheck compute-sanitizer --tool racecheck --error-exitcode 1 "$tc_suite"
  STEP_TIMEOUT=90 step fused_racecheck compute-sanitizer --tool racecheck --error-exitcode 1 "$parity_suite" \
    "--test-case=$fused_cases"
  return 0
}

# Two settings of the fused rows timed side by side, the A/B of issue 35's kernel changes:
# alternate_rounds PREFIX A B SETUP runs `urpe bench attention` at $shape (the caller's local,
# with $rounds, $preps and optionally $maths, default "tf32 bf16"), TF32 and BF16 tiles, causal and not, for sides A (the baseline) and
# B, in alternating rounds (round 1 A then B, round 2 B then A, so drift over the call cancels).
# SETUP SIDE is the caller's function that sets side_binary and side_options for a side; side
# names have no underscore. Logs PREFIX_<math>[_causal]_<side>_r<round>; then PREFIX_summary.txt
# (the fused rows of every run: n, direction, ms, TFLOP/s, pipe, rows, run; rows "-" from a
# binary older than --tc-rows) and PREFIX_ratio.txt (per
# math, mask, n and direction the mean of each side's medians and B/A: below 1, B is faster).
alternate_rounds() {
  local prefix=$1 a=$2 b=$3 setup=$4 round math causal side order log
  for round in $(seq 1 "$rounds"); do
    order="$a $b"
    [ $((round % 2)) = 0 ] && order="$b $a"
    for math in ${maths:-tf32 bf16}; do
      for causal in "" --causal; do
        for side in $order; do
          "$setup" "$side"
          # shellcheck disable=SC2086
          step "${prefix}_${math}${causal:+_causal}_${side}_r${round}" "$side_binary" bench attention --device cuda \
            $shape --math "$math" $causal --attention fused $side_options --repeats "$preps" $sz
        done
      done
    done
  done
  echo "== ${prefix}_summary: n direction median_ms TFLOP/s pipe rows run"
  for log in "$LOGS/${prefix}"_*_r*.log; do
    awk -v run="$(basename "$log" .log)" '$2 == "fused" { print $1, $3, $4, $8, $10, ($11 == "" ? "-" : $11), run }' "$log"
  done | sort -k1,1n -k2,2 -k7,7 | tee "$LOGS/${prefix}_summary.txt"
  echo "== ${prefix}_ratio: run n direction ms_$a ms_$b $b/$a"
  awk -v a="$a" -v b="$b" '{ run = $7; side = run; sub(/_[^_]+_r[0-9]+$/, "", run); key = run " " $1 " " $2
         sub(/_r[0-9]+$/, "", side); sub(/.*_/, "", side)
         if (side == b) { sb[key] += $3; nb[key]++ } else if (side == a) { sa[key] += $3; na[key]++ } }
       END { for (k in sb) if (k in sa) printf "%s %.3f %.3f %.3f\n", k, sa[k] / na[k], sb[k] / nb[k],
                                                 (sb[k] / nb[k]) / (sa[k] / na[k]) }' "$LOGS/${prefix}_summary.txt" |
    sort -k1,1 -k2,2n -k3,3 | tee "$LOGS/${prefix}_ratio.txt"
}

# attention_tc_pipeline (issue 35, 2026-11-27 fourth and fifth passes): are the cp.async pipelined
# kernels faster? Their bits against the single-buffered kernels on the GPU (the TC suite's two
# pipelined cases, forward and backward, which also check the switch picks them), memcheck and
# racecheck of those cases, then alternate_rounds with the pipeline off (A) and on (B), each row
# stating `pipe on|off`; pipe_ratio.txt's on/off below 1: the pipeline is faster.
pipeline_side() { side_binary=$urpe side_options="--tc-pipeline $1"; }
attention_tc_pipeline() {
  attention_tc_shapes
  local shape="--batch 8 --heads 16 --head-dim 64 --lengths 1024,4096" rounds=${PIPELINE_ROUNDS:-2} preps=10
  [ "${ATTENTION_TC_SMOKE:-0}" = 1 ] && shape="--batch 1 --heads 2 --head-dim 64 --lengths 64,130" && preps=1
  step pipe_parity "$tc_suite" "--test-case=pipelined*"
  STEP_TIMEOUT=60 step pipe_memcheck compute-sanitizer --tool memcheck --error-exitcode 1 "$tc_suite" "--test-case=pipelined*"
  STEP_TIMEOUT=90 step pipe_racecheck compute-sanitizer --tool racecheck --error-exitcode 1 "$tc_suite" "--test-case=pipelined*"
  alternate_rounds pipe off on pipeline_side
  return 0
}

# attention_ab (issue 35, after a kernel change with no switch): today's tensor-core kernels
# against a binary built before the change (URPE_BEFORE=path/to/urpe, bench/cuda_notes.md "The
# next call"), on the same card in the same call. First the tensor-core suite twice (the new
# kernels' parity, gradient bits equal across runs), then alternate_rounds at d 64, B 8, H 16,
# n 1k/4k with the binary before (A) and today's (B); ab_ratio.txt's after/before below 1:
# today's kernels are faster. Rehearsed on the simulator build with the simulator binary as both sides:
#   ATTENTION_TC_SMOKE=1 BUILD=build URPE_BIN=./build/urpe-cudasim URPE_BEFORE=./build/urpe-cudasim \
#     TC_SUITE=./build/test_cuda_sim_flash_tensor_core bench/gpu_session.sh attention_ab
# Both sides run with the same pipeline setting (AB_PIPELINE, default off: the single-buffered
# kernels; since 2026-11-28 today's default is auto, which a binary from before may not know).
ab_side() {
  side_binary=$urpe side_options="--tc-pipeline ${AB_PIPELINE:-off}"
  [ "$1" = before ] && side_binary=$URPE_BEFORE
  return 0
}
attention_ab() {
  attention_tc_shapes
  : "${URPE_BEFORE:?attention_ab: set URPE_BEFORE to the urpe binary built before the change}"
  local shape="--batch 8 --heads 16 --head-dim 64 --lengths 1024,4096" rounds=${AB_ROUNDS:-2} preps=10
  [ "${ATTENTION_TC_SMOKE:-0}" = 1 ] && shape="--batch 1 --heads 2 --head-dim 64 --lengths 64,130" && preps=1
  tc_parity_twice ab_tc
  alternate_rounds ab before after ab_side
  return 0
}

# tc_rows_ab (2026-11-28, seventh pass): the BF16 forward with two 16-row blocks per warp
# (--tc-rows 2, urpe_flash_tc_forward_rows2_kernel) against one (--tc-rows 1), at d 64, B 8, H 16,
# n 1k/4k/16k. First its bits against the one-row kernel on the GPU (the TC suite's "two row
# blocks" case, NaN-poisoned O and L, f32 and bf16 tensors, pipelined and not, and the modes case),
# memcheck and racecheck of that case; then alternate_rounds on BF16 tiles only, causal and not,
# with the pipeline at ROWS_PIPELINE (default auto: pipelined at d 64 BF16). Every row states
# `rows 1|2` (what ran); rows_ratio.txt's two/one below 1: the two-row variant is faster, and
# cuda::tc_rows_by_default may move (bench/cuda_notes.md, seventh pass, has the prediction).
# Rehearsed on the simulator build:
#   ATTENTION_TC_SMOKE=1 BUILD=build URPE_BIN=./build/urpe-cudasim \
#     TC_SUITE=./build/test_cuda_sim_flash_tensor_core bench/gpu_session.sh tc_rows_ab
rows_side() {
  side_binary=$urpe side_options="--tc-rows $([ "$1" = two ] && echo 2 || echo 1) --tc-pipeline ${ROWS_PIPELINE:-auto}"
}
tc_rows_ab() {
  attention_tc_shapes
  local shape="--batch 8 --heads 16 --head-dim 64 --lengths 1024,4096,16384" rounds=${ROWS_ROUNDS:-2} preps=10 maths=bf16
  [ "${ATTENTION_TC_SMOKE:-0}" = 1 ] && shape="--batch 1 --heads 2 --head-dim 64 --lengths 64,130" && preps=1
  step rows_parity "$tc_suite" "--test-case=two row blocks*,row-block modes*"
  STEP_TIMEOUT=60 step rows_memcheck compute-sanitizer --tool memcheck --error-exitcode 1 "$tc_suite" "--test-case=two row blocks*"
  STEP_TIMEOUT=90 step rows_racecheck compute-sanitizer --tool racecheck --error-exitcode 1 "$tc_suite" "--test-case=two row blocks*"
  alternate_rounds rows one two rows_side
  return 0
}

# tc_counters (2026-11-28, tenth session): one ncu report (--set full, the text summary beside it)
# of each tensor-core kernel whose counters a change of that day predicts (bench/cuda_notes.md):
#   tc_dkdv_tf32, tc_dkdv_bf16   dK/dV single-buffered: the table-term stores made conflict-free
#                                (11-28: 67 M / 66 M store bank conflicts; predicted about 0);
#   tc_fwd_tf32_pipe             the pipelined TF32 forward, slower than single-buffered: is its
#                                L1/TEX pipe the limit (11-28 single-buffered: 78%; predicted ~100%)?
#   tc_fwd_rows2, _pipe          the BF16 forward with two row blocks per warp (--tc-rows 2), single-
#                                buffered and pipelined: executed instructions per warp-tile, eligible
#                                warps, L1/TEX throughput, spills, against the 11-28 one-row report.
# About 15-20 s a report on the H200. Rehearsed with a stand-in ncu that runs the profiled command:
#   ATTENTION_TC_SMOKE=1 BUILD=build URPE_BIN=./build/urpe-cudasim PATH=/tmp/ncu_standin:$PATH \
#     bench/gpu_session.sh tc_counters
tc_counters() {
  attention_tc_shapes
  local name kernel options
  # name | kernel regex | urpe bench attention options
  while IFS='|' read -r name kernel options; do
    # shellcheck disable=SC2086
    step "ncu_$name" ncu --clock-control none --set full -k "regex:$kernel" --launch-count 1 -o "$LOGS/$name" -f \
      "$urpe" bench attention --device cuda $ncu_shape --attention fused --repeats 1 $options $sz
    [ -f "$LOGS/$name.ncu-rep" ] && step "ncu_${name}_summary" ncu --import "$LOGS/$name.ncu-rep" --page details
  done <<'KERNELS'
tc_dkdv_tf32|urpe_flash_tc_backward_dkdv_kernel|--math tf32 --tc-pipeline off
tc_dkdv_bf16|urpe_flash_tc_backward_dkdv_kernel|--math bf16 --tc-pipeline off
tc_fwd_tf32_pipe|urpe_flash_tc_forward_kernel|--math tf32 --tc-pipeline on
tc_fwd_rows2|urpe_flash_tc_forward_rows2_kernel|--math bf16 --tc-pipeline off --tc-rows 2
tc_fwd_rows2_pipe|urpe_flash_tc_forward_rows2_kernel|--math bf16 --tc-pipeline on --tc-rows 2
KERNELS
  return 0
}

one_step() {
case "$1" in
  build)
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv | tee "$LOGS/gpu.txt"
    step configure cmake -S . -B "$BUILD" -DURPE_CUDA=ON -DURPE_CUDA_SIM=OFF \
      -DCMAKE_BUILD_TYPE=Release &&
      step build cmake --build "$BUILD" -j "$(nproc)"
    ;;
  parity)
    step parity1 "./$BUILD/test_cuda_parity"
    step parity2 "./$BUILD/test_cuda_parity"
    step training "./$BUILD/test_cuda_training"
    # Two threads per suite, half the cores' worth of suites: the CPU-heavy suites crawled with
    # every suite's OpenMP and BLAS spreading over all cores (2026-11-25: one was still running
    # after 400 s at -j 16).
    (cd "$BUILD" && OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 \
      step ctest ctest --output-on-failure -j "$(( $(nproc) / 2 ))")
    ;;
  carried)
    # The suites carried prebuilt in $BUILD (bench/cuda_notes.md, "prebuilt binaries"): the op
    # table's parity twice (table gradients bit-identical across runs), then the host-sync count.
    step parity1 "./$BUILD/test_cuda_parity"
    step parity2 "./$BUILD/test_cuda_parity"
    step syncs_count "./$BUILD/test_cuda_syncs"
    ;;
  sanitize)
    # The context case asks cudaMalloc for more than the card has on purpose (its out-of-memory
    # message is under test); memcheck reports that refused call as an API error, so that case
    # runs under memcheck with API errors off (its memory accesses are still checked).
    local context='cuda context:*'  # doctest splits filters at commas: a wildcard
    step sanitizer_memcheck compute-sanitizer --tool memcheck --error-exitcode 1 "./$BUILD/test_cuda_parity" \
      "--test-case-exclude=$context"
    step sanitizer_memcheck_oom compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 1 \
      "./$BUILD/test_cuda_parity" "--test-case=$context"
    for tool in racecheck initcheck synccheck; do
      step "sanitizer_$tool" compute-sanitizer --tool "$tool" --error-exitcode 1 "./$BUILD/test_cuda_parity"
    done
    ;;
  bench)
    step bench_fp32 "./$BUILD/urpe" bench kernels --device cuda
    step bench_tf32 "./$BUILD/urpe" bench kernels --device cuda --tf32
    ;;
  ncu)
    # Launches of urpe_attention_forward_kernel in the bench, --repeats 1 (5 warm-up + 1 timed
    # run per row): per N, the softmax-mode row, the Toeplitz row and the public op row, 6 each,
    # so launch 47 (counting from 0) is the timed Toeplitz forward at N = 512.
    step ncu_fwd ncu --clock-control none --set full -k regex:urpe_attention_forward_kernel \
      --launch-skip 47 --launch-count 1 -o "$LOGS/urpe_core_fwd" -f \
      "./$BUILD/urpe" bench kernels --device cuda --repeats 1
    step ncu_fwd_summary ncu --import "$LOGS/urpe_core_fwd.ncu-rep" --page details
    ;;
  ncu_times)
    # Every kernel's GPU time (one ncu pass per launch, gpu__time_duration) over one run of the
    # attention bench at n = 1024: which kernels the fused and materialized backward spend on.
    step ncu_times ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel \
      "./$BUILD/urpe" bench attention --device cuda --batch 32 --lengths 1024 --repeats 1
    ;;
  nccl)
    # Which NCCL and MPI the build found (NCCL is used when URPE_NCCL_LIB is a path).
    grep -E "^(URPE_NCCL_LIB|URPE_NCCL_INCLUDE|MPI_CXX_FOUND|MPIEXEC_EXECUTABLE)" "$BUILD/CMakeCache.txt"
    # The one-rank cases; the two-rank cases (test_cuda_nccl_two_ranks in CTest) need two GPUs.
    step nccl_suite "./$BUILD/test_cuda_nccl" "--test-case-exclude=two ranks*"
    if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
      step nccl_suite_two_ranks "./$BUILD/test_cuda_nccl" "--test-case=two ranks*"
    fi
    if command -v mpirun >/dev/null && [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
      S="--preset txl-tiny --set device=cuda --set steps=40 --set eval_every=40 --set batch=8"
      step nccl_train_1 "./$BUILD/urpe" train $S --out "$LOGS/nccl_1" --overwrite
      step nccl_train_2 mpirun --allow-run-as-root -np 2 "./$BUILD/urpe" train $S --out "$LOGS/nccl_2" --overwrite
      step nccl_train_2_sharded mpirun --allow-run-as-root -np 2 "./$BUILD/urpe" train $S \
        --set shard_optimizer=true --out "$LOGS/nccl_2s" --overwrite
    else
      echo "== nccl: 2-rank training left out (needs mpirun and two GPUs)"
    fi
    ;;
  core)
    # After a change to the URPE attention kernels: the parity suite twice, memcheck and
    # racecheck on the attention cases, the kernel table.
    step parity1 "./$BUILD/test_cuda_parity"
    step parity2 "./$BUILD/test_cuda_parity"
    step training "./$BUILD/test_cuda_training"
    step core_memcheck compute-sanitizer --tool memcheck --error-exitcode 1 "./$BUILD/test_cuda_parity" \
      "--test-case=*URPE attention*,*fused*"
    step core_racecheck compute-sanitizer --tool racecheck --error-exitcode 1 "./$BUILD/test_cuda_parity" \
      "--test-case=*URPE attention*,*fused*"
    step bench_fp32 "./$BUILD/urpe" bench kernels --device cuda
    ;;
  compare)
    # urpe against PyTorch eager on the same GPU, each pair run back to back, twice (ABAB):
    # the encoder's training step (short and long), Table 5, and the attention alone.
    for round in 1 2; do
      step "step_urpe_$round" "./$BUILD/urpe" bench step --device cuda --repeats 50
      step "step_torch_$round" python3 tools/torch_reference.py --bench --device cuda --steps 50
    done
    step step_long_urpe "./$BUILD/urpe" bench step --device cuda --seq-len 1024 --batch 4 --repeats 50
    step step_long_torch python3 tools/torch_reference.py --bench --device cuda --seq-len 1024 --batch 4 --steps 50
    step table5_urpe "./$BUILD/urpe" repro table5 --device cuda --repeats 5 --out "$LOGS/table5" --overwrite
    step table5_torch python3 tools/torch_reference.py --table5 --device cuda --repeats 5
    step attention_urpe "./$BUILD/urpe" bench attention --device cuda --batch 32 --lengths 512,1024,2048 --repeats 10
    step attention_torch python3 bench/torch_attention.py --device cuda --batch 32 --lengths 512,1024,2048 --repeats 10
    ;;
  profile)
    # The bench configuration (n = 128, d = 128, 4 heads, 2 layers, d_ff 512, batch 32) as a preset.
    local bench_cfg="--preset pi-tiny --set seq_len=128 --set d_model=128 --set d_ff=512 --set batch=32 --set init_std=0.02"
    step peaks "./$BUILD/urpe" bench peaks --device cuda
    step profile_urpe "./$BUILD/urpe" profile $bench_cfg --device cuda --steps 6:15 --out "$LOGS/profile" --overwrite
    step profile_torch python3 tools/torch_reference.py --profile --device cuda --steps 10 --out "$LOGS/profile"
    if command -v nsys >/dev/null; then
      step nsys nsys profile --capture-range=cudaProfilerApi --capture-range-end=stop --trace=cuda,nvtx,cublas \
        --sample=none --force-overwrite true -o "$LOGS/profile/nsys_steps" \
        "./$BUILD/urpe" train $bench_cfg --set device=cuda --set steps=15 --set warmup=1 --set eval_every=15 \
        --out "$LOGS/profile/nsys_run" --overwrite --quiet --profile-steps 6:15
      step nsys_stats nsys stats --report cuda_gpu_kern_sum --report nvtx_sum "$LOGS/profile/nsys_steps.nsys-rep"
    else
      echo "== nsys: not on PATH, Nsight Systems' side left out"
    fi
    ;;
  families)
    # urpe, PyTorch eager and torch.compile on each family's bench step, round 1 then round 2 (the
    # second torch.compile starts from inductor's cache). TF32 off on both sides. FAMILIES_ROUNDS=1
    # keeps one round when a call is short of device time.
    for round in $(seq 1 "${FAMILIES_ROUNDS:-2}"); do
      for model in encoder txl graphormer; do
        step "family_${model}_urpe_$round" "./$BUILD/urpe" bench step --device cuda --model "$model" --repeats 50
        step "family_${model}_eager_$round" python3 tools/torch_bench.py --device cuda --model "$model" --steps 50
        step "family_${model}_compile_$round" python3 tools/torch_bench.py --device cuda --model "$model" --steps 50 --compile
      done
    done
    ;;
  presets)
    # One measured step of each paper preset (Appendix C): `urpe profile` trains 6 steps and records
    # 3..6 (the step's median, peak device memory, the per-op table). Data: the synthetic tasks draw
    # their own; Transformer-XL reads a random corpus of WikiText-103's vocabulary size (the step's
    # work depends on the shape only: tools/make_shape_corpus.py); the molecule and MLM presets
    # read the embedded data (molecule sizes and windows as the real sets give, ids from the preset).
    # PRESETS_PRECISION=bf16 (or tf32) runs them all in that precision (README's reproduce table
    # from measured BF16 steps, issue 36); the logs then go to presets_bf16/. PRESETS_MLM_ONE=1 times
    # one micro-batch of the MLM preset (batch 32, as `syncs` does) instead of its 8.
    [ -f /tmp/shape_corpus/wiki.train.tokens ] ||
      python3 tools/make_shape_corpus.py /tmp/shape_corpus >"$LOGS/shape_corpus.log" 2>&1
    local preset precision_set="" tag="presets"
    if [ -n "${PRESETS_PRECISION:-}" ]; then
      precision_set="--set precision=$PRESETS_PRECISION"
      tag="presets_$PRESETS_PRECISION"
    fi
    for preset in pi-paper txl-base-paper graphormer-slim-urpe graphormer-pcqm4m-urpe mlm-paper; do
      local extra=""
      [ "$preset" = txl-base-paper ] && extra="--set corpus=/tmp/shape_corpus --set pe=urpe"
      [ "$preset" = mlm-paper ] && extra="--set pe=urpe"
      [ "$preset" = mlm-paper ] && [ "${PRESETS_MLM_ONE:-0}" = 1 ] &&
        extra="$extra --set batch=32 --set accum_steps=1 --set valid_size=64"
      # shellcheck disable=SC2086
      step "${tag}_$preset" "./$BUILD/urpe" profile --preset "$preset" $extra $precision_set --device cuda --steps 3:6 \
        --out "$LOGS/$tag/$preset" --overwrite --quiet
      grep -e "^| measured step" -e "^| outside every op" "$LOGS/$tag/$preset/profile.md" 2>/dev/null | sed "s/^/$preset /"
      [ -f "$LOGS/$tag/$preset/profile.md" ] && head -n 40 "$LOGS/$tag/$preset/profile.md" >"$LOGS/${tag}_${preset}_table.md"
    done
    # Table 4's shallower Transformer-XLs (L = 4 and 8; the preset is L = 16). PRESETS_TXL_DEPTHS=0
    # leaves them out.
    local layers
    for layers in 4 8; do
      [ "${PRESETS_TXL_DEPTHS:-1}" = 0 ] && break
      local name="txl-base-paper-L$layers"
      # shellcheck disable=SC2086
      step "${tag}_$name" "./$BUILD/urpe" profile --preset txl-base-paper --set corpus=/tmp/shape_corpus --set pe=urpe \
        --set layers=$layers $precision_set --device cuda --steps 3:6 --out "$LOGS/$tag/$name" --overwrite --quiet
      grep -e "^| measured step" -e "^| outside every op" "$LOGS/$tag/$name/profile.md" 2>/dev/null | sed "s/^/$name /"
      [ -f "$LOGS/$tag/$name/profile.md" ] && head -n 40 "$LOGS/$tag/$name/profile.md" >"$LOGS/${tag}_${name}_table.md"
    done
    ;;
  precision)
    # The precision switch (docs/cuda.md#mixed-precision): the same runs in fp32, tf32 and bf16,
    # rounds alternating so that clocks and thermals fall on all three alike. `urpe profile` trains
    # a few steps and records the window (median step, peak device memory, the per-op table, whose
    # linear rows are bf16's GEMMs and whose cast rows are what the switch costs). PRECISION_SMOKE=1
    # runs one tiny model instead (URPE_BIN=./build/urpe-cudasim BUILD=build on the simulator; there
    # `urpe profile` first measures the machine's peaks, minutes of simulated GEMMs; this script
    # sets URPE_PEAKS_CACHE=$OUT/peaks.json, so put a smoke measurement there first:
    #   URPE_PEAKS_CACHE=$OUT/peaks.json ./build/urpe-cudasim bench peaks --device cuda --sizes smoke
    # Rehearsed so on 2026-11-28 (twelfth session): two rounds, every run exit 0, the table at the
    # end, 4 s). The simulator has run the bf16 CUDA path end to end (`urpe-cudasim train --set
    # device=cuda --set precision=bf16`, 2 steps).
    local urpe_bin=${URPE_BIN:-./$BUILD/urpe}
    local window="3:6"
    # Table 5's model is batch 32 in one pass: accum_steps=1 (pi-paper's 4 micro-batches made the
    # 2026-11-27b record's "Table 5" run 4 passes of 8). table5-n512-fused: the same with the fused
    # attention (its tensor-core tiles under tf32/bf16; not run under fp32, whose scalar kernels are
    # not what a user would pick).
    # Issue 36 asks for n = 128 and 256 too: table5-n128 / -n256, materialized (as Table 5 ran).
    local t5="--preset pi-paper --set layers=12 --set d_model=768 --set heads=12 --set d_ff=3072 --set batch=32 --set accum_steps=1 --set seq_len=512"
    local t5_128=${t5/seq_len=512/seq_len=128} t5_256=${t5/seq_len=512/seq_len=256}
    local -a runs=("pi-paper|--preset pi-paper" "table5-n512|$t5" "table5-n512-fused|$t5 --set attention=fused"
                   "table5-n128|$t5_128" "table5-n256|$t5_256")
    if [ "${PRECISION_SMOKE:-0}" = 1 ]; then
      window="2:2"
      runs=("pi-smoke|--preset pi-tiny --set seq_len=8 --set d_model=16 --set heads=2 --set d_ff=32 --set layers=1 --set batch=2 --set valid_size=8")
    fi
    # PRECISION_RUNS="table5-n512 pi-paper" keeps those runs only (two rounds of all five take
    # ~560 s on an H200, past one call's 500 s DEADLINE; a name it does not know is an error).
    if [ -n "${PRECISION_RUNS:-}" ]; then
      local -a kept=()
      local wanted known found
      for wanted in $PRECISION_RUNS; do
        found=0
        for known in "${runs[@]}"; do
          [ "${known%%|*}" = "$wanted" ] && kept+=("$known") && found=1
        done
        [ "$found" = 1 ] || { echo "precision: PRECISION_RUNS names '$wanted', not one of: ${runs[*]%%|*}" >&2; return 2; }
      done
      runs=("${kept[@]}")
    fi
    local round precision run name args
    # PRECISION_ROUNDS=1 keeps one round when a call is short of device time.
    for round in $(seq 1 "${PRECISION_ROUNDS:-2}"); do
      for precision in fp32 tf32 bf16; do
        for run in "${runs[@]}"; do
          name=${run%%|*}
          args=${run#*|}
          [ "$precision" = fp32 ] && [ "${name%-fused}" != "$name" ] && continue
          # shellcheck disable=SC2086
          step "precision_${name}_${precision}_$round" "$urpe_bin" profile $args --set "precision=$precision" \
            --device cuda --steps "$window" --out "$LOGS/precision/${name}_${precision}_$round" --overwrite --quiet
          local md="$LOGS/precision/${name}_${precision}_$round/profile.md"
          if [ -f "$md" ]; then
            grep -E "measured step|peak|step's memory|^\| (linear|matmul|cast)" "$md" | head -n 13
          fi
        done
      done
    done
    # The table of the record (step times, speed-ups per round, a step's memory bf16/fp32).
    python3 bench/precision_table.py "$LOGS/precision" | tee "$LOGS/precision_table.md"
    ;;
  precision_torch)
    # PyTorch's side of `precision` (issue 36: "beside torch.autocast(bfloat16) eager and
    # torch.compile on the same model"): Table 5's encoder (12 layers, d 768, 12 heads, d_ff 3072,
    # batch 32, n 512; materialised URPE attention, no dropout) trained with Adam in fp32, tf32 and
    # bf16 (autocast), eager, then bf16 under torch.compile; two alternating rounds
    # (PRECISION_ROUNDS=1 keeps one). Each log ends with the median step and the allocator's peak.
    local t5="--model encoder --layers 12 --d-model 768 --heads 12 --d-ff 3072 --batch 32 --seq-len 512"
    local torch_py=${TORCH_PYTHON:-python3} round precision
    [ "${PRECISION_SMOKE:-0}" = 1 ] && t5="--model encoder --layers 1 --d-model 16 --heads 2 --d-ff 32 --batch 2 --seq-len 8"
    local dev=${PRECISION_TORCH_DEVICE:-cuda}
    for round in $(seq 1 "${PRECISION_ROUNDS:-2}"); do
      for precision in fp32 tf32 bf16; do
        [ "$dev" = cpu ] && [ "$precision" = tf32 ] && continue
        # shellcheck disable=SC2086
        step "precision_torch_table5_${precision}_$round" "$torch_py" tools/torch_bench.py $t5 --device "$dev" \
          --precision "$precision" --warmup 3 --steps 10
      done
      # shellcheck disable=SC2086
      step "precision_torch_table5_bf16_compile_$round" "$torch_py" tools/torch_bench.py $t5 --device "$dev" \
        --precision bf16 --compile --warmup 3 --steps 10
    done
    ;;
  gemm_dtypes)
    # Which cuBLAS call makes precision=bf16 slower than tf32 (issue 36, bench/cuda_notes.md):
    # urpe's rows then PyTorch's at the same shapes, twice, alternating. The whole tables are in
    # the logs (gemm_dtypes_urpe_N.log, gemm_dtypes_torch_N.log, under $OUT); the reply carries
    # each log's last 25 lines.
    local urpe_bin=${URPE_BIN:-./$BUILD/urpe} sizes="" torch_args=""
    if [ "${GEMM_DTYPES_SMOKE:-0}" = 1 ]; then
      sizes="--sizes smoke"
      torch_args="--dry-run --shapes 64x64x64,96x80x48"
    fi
    local round
    for round in 1 2; do
      # shellcheck disable=SC2086
      step "gemm_dtypes_urpe_$round" "$urpe_bin" bench peaks --device cuda $sizes
      # shellcheck disable=SC2086
      step "gemm_dtypes_torch_$round" python3 bench/torch_gemm.py --device cuda $torch_args
    done
    ;;
  nsight)
    # docs/profiling.md steps 4 and 5, as the page writes them (pi-paper, step 41).
    local run="--preset pi-paper --set device=cuda --set warmup=10 --set valid_size=256 --quiet"
    if command -v nsys >/dev/null; then
      # shellcheck disable=SC2086
      step nsys_recipe nsys profile --capture-range=cudaProfilerApi --capture-range-end=stop \
        --trace=cuda,nvtx,cublas --sample=none --force-overwrite true -o "$LOGS/urpe_steps" \
        "./$BUILD/urpe" train $run --set steps=60 --out /tmp/urpe_nsys --overwrite --profile-steps 41:50
      step nsys_recipe_stats nsys stats --report cuda_gpu_kern_sum --report nvtx_sum "$LOGS/urpe_steps.nsys-rep"
    else
      echo "== nsys: not on PATH (docs/profiling.md step 4 left out)"
    fi
    # shellcheck disable=SC2086
    step ncu_recipe ncu --clock-control none --profile-from-start off --set full --launch-count 10 \
      -k regex:"^urpe_(flash_)?attention_" -o "$LOGS/urpe_core_step41" -f \
      "./$BUILD/urpe" train $run --set steps=45 --out /tmp/urpe_ncu --overwrite --profile-steps 41:41
    step ncu_recipe_summary ncu --import "$LOGS/urpe_core_step41.ncu-rep" --page details
    # The NVTX filters of step 5: layer 0's attention block, and the attention op's backward
    # (kernel times only: the full set of every GEMM would not fit the call).
    # shellcheck disable=SC2086
    step ncu_nvtx_layer0 ncu --clock-control none --nvtx --nvtx-include "train_step/encoder.layer0/encoder.layer0.attention/" \
      --profile-from-start off --metrics gpu__time_duration.sum --print-summary per-kernel \
      "./$BUILD/urpe" train $run --set steps=45 --out /tmp/urpe_ncu2 --overwrite --profile-steps 41:41
    # shellcheck disable=SC2086
    step ncu_nvtx_backward ncu --clock-control none --nvtx --nvtx-include "train_step/urpe_attention backward/" \
      --profile-from-start off --metrics gpu__time_duration.sum --print-summary per-kernel \
      "./$BUILD/urpe" train $run --set steps=45 --out /tmp/urpe_ncu3 --overwrite --profile-steps 41:41
    ;;
  attention_tc)
    attention_tc_measure
    attention_tc_check
    ;;
  attention_tc_measure | attention_tc_check | attention_tc_pipeline | attention_ab | tc_rows_ab | tc_counters)
    "$1"
    ;;
  syncs)
    local urpe=${URPE_BIN:-./$BUILD/urpe}
    step syncs_count "${SYNCS_SUITE:-./$BUILD/test_cuda_syncs}"
    local presets="pi-paper txl-base-paper graphormer-slim-urpe graphormer-pcqm4m-urpe mlm-paper"
    if [ "${SYNCS_SMOKE:-0}" = 1 ]; then  # the simulator: its peaks at smoke sizes (the full ones take hours)
      presets="pi-tiny graphormer-tiny"
      step syncs_peaks "$urpe" bench peaks --device cuda --sizes smoke --repeats 1
    fi
    [ "${SYNCS_SMOKE:-0}" = 1 ] || python3 tools/make_shape_corpus.py /tmp/shape_corpus >"$LOGS/shape_corpus.log" 2>&1
    local preset
    for preset in $presets; do
      local extra=""
      [ "$preset" = txl-base-paper ] && extra="--set corpus=/tmp/shape_corpus --set pe=urpe"
      # One micro-batch of the MLM preset (its 8 micro-batches are 8 such, with one loss read).
      [ "$preset" = mlm-paper ] && extra="--set pe=urpe --set batch=32 --set accum_steps=1 --set valid_size=64"
      [ "$preset" = graphormer-tiny ] && extra="--set pe=urpe"
      # shellcheck disable=SC2086
      step "syncs_$preset" "$urpe" profile --preset "$preset" $extra --device cuda --steps 3:6 \
        --out "$LOGS/syncs/$preset" --overwrite --quiet
      # The step and the share of it outside every op (on a GPU: the stream's idle time).
      grep -e "^| measured step" -e "^| outside every op" "$LOGS/syncs/$preset/profile.md" 2>/dev/null |
        sed "s/^/$preset /" | tee "$LOGS/syncs_${preset}_idle.txt"
      step "syncs_gaps_$preset" python3 bench/profile_gaps.py "$LOGS/syncs/$preset/trace.json" --top 15
    done
    ;;
  graphormer_step)
    # Issue 37's Graphormer work (bench/cuda_notes.md, "The Graphormer step"): the multi-hop term as
    # per-hop tables read by embedding_sum, the ids uploaded packed, the loss read after Adam's
    # launch, the embedding backward's split rows. Before: 2026-11-27's H200 record (ZINC 34.3 ms,
    # 11.6% idle; bench step 15.1 ms against eager 27.8 and compile 16.1).
    local urpe=${URPE_BIN:-./$BUILD/urpe}
    local zinc="--preset graphormer-slim-urpe" pcqm="--preset graphormer-pcqm4m-urpe" steps=3:6
    local bench="--repeats 30" torch_args="--steps 30" torch_run=python3
    if [ "${GRAPHORMER_SMOKE:-0}" = 1 ]; then  # the simulator: the same commands at tiny sizes
      local tiny="--set layers=1 --set d_model=16 --set d_ffn=16 --set heads=2 --set batch=4 --set eval_batch=4"
      zinc="--preset graphormer-slim-urpe $tiny" pcqm="--preset graphormer-pcqm4m-urpe $tiny" steps=3:4
      bench="--repeats 1 --batch 2" torch_args="--steps 1 --warmup 0 --batch 2"
      step graphormer_peaks "$urpe" bench peaks --device cuda --sizes smoke --repeats 1
      python3 -c "import torch" 2>/dev/null || torch_run="echo would run: python3"
    fi
    local name args
    for name in zinc pcqm; do
      [ "$name" = zinc ] && args=$zinc || args=$pcqm
      # shellcheck disable=SC2086
      step "graphormer_profile_$name" "$urpe" profile $args --device cuda --steps "$steps" \
        --out "$LOGS/graphormer/$name" --overwrite --quiet
      grep -e "^| measured step" -e "^| outside every op" "$LOGS/graphormer/$name/profile.md" 2>/dev/null |
        sed "s/^/$name /" | tee "$LOGS/graphormer_${name}_idle.txt"
      step "graphormer_gaps_$name" python3 bench/profile_gaps.py "$LOGS/graphormer/$name/trace.json" --top 15
      # The per-op table's head (the ops the changes touched: matmul/embedding backward, embedding_sum).
      sed -n '/^## Ops/,/^## Self time/p' "$LOGS/graphormer/$name/profile.md" 2>/dev/null | head -n 30 \
        >"$LOGS/graphormer_${name}_ops.md"
    done
    # shellcheck disable=SC2086
    step graphormer_bench_urpe "$urpe" bench step --device cuda --model graphormer $bench
    # shellcheck disable=SC2086
    step graphormer_bench_eager $torch_run tools/torch_bench.py --device cuda --model graphormer $torch_args
    if [ "${GRAPHORMER_COMPILE:-1}" = 1 ]; then
      # shellcheck disable=SC2086
      step graphormer_bench_compile $torch_run tools/torch_bench.py --device cuda --model graphormer $torch_args --compile
    fi
    ;;
  capture)
    local urpe=${URPE_BIN:-./$BUILD/urpe}
    # First the suite on the real capture: the tiny encoder eager against cuda_graph=on, bit for bit.
    step capture_suite "${CAPTURE_SUITE:-./$BUILD/test_cuda_graphs}"
    local bench="--repeats 50" pi="--preset pi-paper --set batch=128 --set accum_steps=1" steps=60 every=20
    if [ "${CAPTURE_SMOKE:-0}" = 1 ]; then  # the simulator: the same commands at tiny sizes
      bench="--repeats 5 --seq-len 16 --batch 2" pi="--preset pi-tiny --set batch=4 --set valid_size=8 --set warmup=2" steps=6 every=2
    fi
    local attention
    for attention in materialized fused; do
      # shellcheck disable=SC2086
      step "capture_bench_$attention" "$urpe" bench step --device cuda --model encoder --attention "$attention" $bench \
        --set cuda_graph=on
      grep -e "^GPU" -e "^eager" -e "^cuda_graph" "$LOGS/capture_bench_$attention.log" | sed "s/^/$attention: /"
    done
    local round mode
    for round in 1 2; do
      for mode in off on; do
        # shellcheck disable=SC2086
        step "capture_pi_${mode}_$round" "$urpe" train $pi --set device=cuda --set steps=$steps --set eval_every=$every \
          --set cuda_graph=$mode --out "$LOGS/capture/pi_${mode}_$round" --overwrite --quiet
        # The last train row: its tokens/s is the window since the evaluation before (replays only).
        grep ",train," "$LOGS/capture/pi_${mode}_$round/metrics.csv" 2>/dev/null | tail -n 1 |
          sed "s/^/pi cuda_graph=$mode round $round (step,split,loss,metric,lr,tokens_per_s,seconds): /"
      done
    done
    # The two modes train the same numbers: their train losses must be the same (metrics.csv).
    if [ -s "$LOGS/capture/pi_off_1/metrics.csv" ] && [ -s "$LOGS/capture/pi_on_1/metrics.csv" ] &&
      cmp -s <(grep ",train," "$LOGS/capture/pi_off_1/metrics.csv" | cut -d, -f1-4) \
        <(grep ",train," "$LOGS/capture/pi_on_1/metrics.csv" | cut -d, -f1-4); then
      echo "== capture: cuda_graph=on logged the same train losses as eager"
    else
      echo "== capture: the train losses DIFFER between cuda_graph=off and on (or a run is missing)"
    fi
    ;;
  capture_graphormer)
    # Graphormer's captured step (docs/cuda.md#cuda-graphs, bench/cuda_notes.md "CUDA graphs").
    # Before: ZINC's eager step 25 ms with 13.1% of it GPU-idle on the H100 (`urpe profile`).
    local urpe=${URPE_BIN:-./$BUILD/urpe}
    step capture_graphormer_suite "${CAPTURE_SUITE:-./$BUILD/test_cuda_graphs}" -tc='*Graphormer*'
    local bench="--repeats 50" steps=40 every=20 window=3:6 tiny=""
    if [ "${CAPTURE_SMOKE:-0}" = 1 ]; then  # the simulator: the same commands at tiny sizes
      bench="--repeats 5 --batch 2" steps=6 every=3 window=3:4
      tiny="--set layers=1 --set d_model=16 --set d_ffn=16 --set heads=2 --set batch=4 --set eval_batch=64 --set train_subset=40"
      # urpe profile measures the peaks when it has none (8192³ GEMMs, hours simulated): smoke sizes first.
      step capture_graphormer_peaks "$urpe" bench peaks --device cuda --sizes smoke --repeats 1
    fi
    # shellcheck disable=SC2086
    step capture_graphormer_bench "$urpe" bench step --device cuda --model graphormer $bench --set cuda_graph=on
    grep -e "^GPU" -e "^bench config" -e "^eager" -e "^cuda_graph" -e "^ops'" "$LOGS/capture_graphormer_bench.log"
    local name preset ops round mode run row ms
    for name in zinc pcqm; do
      [ "$name" = zinc ] && preset=graphormer-slim-urpe || preset=graphormer-pcqm4m-urpe
      # The ops' GPU time of a step: eager steps with the captured step's shapes, per-op CUDA events.
      # shellcheck disable=SC2086
      step "capture_graphormer_profile_$name" "$urpe" profile --preset $preset $tiny --set fixed_shapes=true \
        --device cuda --steps $window --out "$LOGS/capture_graphormer/${name}_profile" --overwrite --quiet
      ops=$(grep "^| Σ self time of the ops" "$LOGS/capture_graphormer/${name}_profile/profile.md" 2>/dev/null |
        awk -F'|' '{gsub(/ /, "", $3); print $3}')
      echo "$name: ops' GPU time per step (eager, fixed shapes, Σ self time of the ops): ${ops:-missing} ms"
      for round in 1 2; do
        for mode in own fixed graph; do
          run="$LOGS/capture_graphormer/${name}_${mode}_$round"
          local sets="--set fixed_shapes=false --set cuda_graph=off"
          [ "$mode" = fixed ] && sets="--set fixed_shapes=true --set cuda_graph=off"
          [ "$mode" = graph ] && sets="--set cuda_graph=on"
          # shellcheck disable=SC2086
          step "capture_graphormer_${name}_${mode}_$round" "$urpe" train --preset $preset $tiny --set device=cuda \
            --set steps=$steps --set eval_every=$every --set warmup=2 $sets --out "$run" --overwrite --quiet
          # The last train row: molecules/s of the steps since the evaluation before it.
          row=$(grep ",train," "$run/metrics.csv" 2>/dev/null | tail -n 1)
          ms=$(echo "$row" | awk -F, -v b="$(grep '^batch' "$run/config.txt" | head -n 1 | awk '{print $3}')" \
            '$6 > 0 {printf "%.3f", 1000 * b / $6}')
          echo "$name $mode round $round: ${ms:-?} ms per step (1000 x batch / molecules_per_s of the last train row: $row)"
          if [ -n "$ms" ] && [ -n "$ops" ]; then
            awk -v o="$ops" -v s="$ms" -v w="$name $mode round $round" \
              'BEGIN {printf "%s: GPU idle share = 1 - ops / step = 1 - %.3f / %.3f = %.1f%%\n", w, o, s, 100 * (1 - o / s)}'
          fi
        done
      done
      # The captured run and the eager one with the same shapes train the same numbers.
      if [ -s "$LOGS/capture_graphormer/${name}_fixed_1/metrics.csv" ] &&
        cmp -s <(grep ",train," "$LOGS/capture_graphormer/${name}_fixed_1/metrics.csv" | cut -d, -f1-4) \
          <(grep ",train," "$LOGS/capture_graphormer/${name}_graph_1/metrics.csv" 2>/dev/null | cut -d, -f1-4); then
        echo "== capture_graphormer $name: cuda_graph=on logged the same train losses as fixed_shapes eager"
      else
        echo "== capture_graphormer $name: the train losses DIFFER between fixed_shapes eager and cuda_graph=on (or a run is missing)"
      fi
    done
    ;;
  fixes)
    # The 2026-11-26 host-side fixes, against that day's first call: the Graphormer step (multi-hop
    # ids on the device, narrow embedding backward, device-side id checks) beside PyTorch eager,
    # the paper's ZINC preset, and one micro-batch of the MLM preset (the argmax on the device).
    # Since 2026-11-27 (the Graphormer host work: attn_bias and the divisor broadcast on the device,
    # the collator rewritten and run a step ahead on a second thread) also PCQM4M's preset, and
    # for both Graphormer presets where the stream's idle time lies (bench/profile_gaps.py).
    step fix_graphormer_urpe "./$BUILD/urpe" bench step --device cuda --model graphormer --repeats 30
    step fix_graphormer_eager python3 tools/torch_bench.py --device cuda --model graphormer --steps 30
    step fix_preset_graphormer "./$BUILD/urpe" profile --preset graphormer-slim-urpe --device cuda --steps 3:6 \
      --out "$LOGS/fix_graphormer" --overwrite --quiet
    step fix_gaps_graphormer python3 bench/profile_gaps.py "$LOGS/fix_graphormer/trace.json" --top 25
    step fix_preset_pcqm4m "./$BUILD/urpe" profile --preset graphormer-pcqm4m-urpe --device cuda --steps 3:6 \
      --out "$LOGS/fix_pcqm4m" --overwrite --quiet
    step fix_gaps_pcqm4m python3 bench/profile_gaps.py "$LOGS/fix_pcqm4m/trace.json" --top 25
    step fix_preset_mlm "./$BUILD/urpe" profile --preset mlm-paper --set pe=urpe --set batch=32 --set accum_steps=1 \
      --set valid_size=64 --device cuda --steps 3:6 --out "$LOGS/fix_mlm" --overwrite --quiet
    step fix_txl_compile python3 tools/torch_bench.py --device cuda --model txl --steps 30 --compile
    step fix_graphormer_compile python3 tools/torch_bench.py --device cuda --model graphormer --steps 30 --compile
    ;;
  *)
    echo "usage: bench/gpu_session.sh STEP... (STEP: build, carried, parity, core, sanitize, bench, ncu, ncu_times, attention_tc, attention_tc_measure, attention_tc_check, attention_tc_pipeline, attention_ab, tc_rows_ab, tc_counters, fixes, graphormer_step, syncs, capture, capture_graphormer, nccl, compare, families, presets, precision, gemm_dtypes, nsight, profile)" >&2
    exit 2
    ;;
esac
}

# Steps run in the order given; a failed build stops the rest (nothing else could run).
[ $# -gt 0 ] || one_step usage
for name in "$@"; do
  one_step "$name"
  rc=$?
  if [ "$name" = build ] && [ $rc -ne 0 ]; then exit $rc; fi
done
