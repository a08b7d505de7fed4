#!/usr/bin/env bash
# The third call of 2026-11-27 (one ~4.5-minute call, carried binaries): the BF16 tensor-core
# attention and the restored TF32 forward, the Graphormer step, Table 5's size (one pass of 32)
# in tf32/bf16 with materialized and fused attention. Logs to $OUT.
set -u
export BUILD=gpu_bin ATTENTION_TC_PEERS=0 PRECISION_ROUNDS=1 GRAPHORMER_COMPILE=0 URPE_PEAKS_CACHE="$OUT/peaks.json"
U=./gpu_bin/urpe
run() { local name=$1; shift; local left=$((DEADLINE - $(date +%s)))
  if [ "$left" -lt 10 ]; then echo "== $name: skipped (deadline)"; return; fi
  echo "== $name: $* (limit ${left}s)"; timeout "$left" "$@" >"$OUT/$name.log" 2>&1; echo "== $name: exit $?"
  tail -n "${TAILN:-12}" "$OUT/$name.log"; }
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv > "$OUT/gpu.txt"
bench/gpu_session.sh carried
run tc_parity1 ./gpu_bin/test_cuda_flash_tensor_core
run tc_parity2 ./gpu_bin/test_cuda_flash_tensor_core
grep -E '^(gradient|bf16) bits' "$OUT/tc_parity1.log" > "$OUT/tc_bits1.txt"
grep -E '^(gradient|bf16) bits' "$OUT/tc_parity2.log" > "$OUT/tc_bits2.txt"
cmp -s "$OUT/tc_bits1.txt" "$OUT/tc_bits2.txt" && echo "== tc_bits identical ($(wc -l < "$OUT/tc_bits1.txt") lines)" || echo "== tc_bits MISMATCH"
A="bench attention --device cuda --repeats 10"
run att_b32_tf32 $U $A --batch 32 --heads 4 --head-dim 32 --lengths 1024 --tf32
run att_b32_bf16 $U $A --batch 32 --heads 4 --head-dim 32 --lengths 1024 --math bf16 --attention fused
run att_d64_tf32 $U $A --batch 8 --heads 16 --head-dim 64 --lengths 1024,4096 --tf32 --attention fused
run att_d64_bf16 $U $A --batch 8 --heads 16 --head-dim 64 --lengths 1024,4096 --math bf16 --attention fused
run att_t5_bf16 $U $A --batch 32 --heads 12 --head-dim 64 --lengths 128,256,512 --math bf16
run tc_memcheck compute-sanitizer --tool memcheck --error-exitcode 1 ./gpu_bin/test_cuda_flash_tensor_core
TAILN=40 bench/gpu_session.sh graphormer_step
T5="--preset pi-paper --set layers=12 --set d_model=768 --set heads=12 --set d_ff=3072 --set batch=32 --set accum_steps=1 --set seq_len=512 --device cuda --steps 3:6 --overwrite --quiet"
for p in tf32 bf16; do for a in fused materialized; do
  run t5_${p}_$a $U profile $T5 --set precision=$p --set attention=$a --out "$OUT/t5/${p}_$a"
  grep -E "measured step|outside every|^\| (linear|urpe_attention|matmul|flash)" "$OUT/t5/${p}_$a/profile.md" | head -8
done; done
run tc_racecheck compute-sanitizer --tool racecheck --error-exitcode 1 ./gpu_bin/test_cuda_flash_tensor_core
