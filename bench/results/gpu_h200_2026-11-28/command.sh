# The device calls of 2026-11-28 (ninth session), one warm nvidia-h200, binaries built here by
# bench/pack_gpu_bin.sh at eeaeb93 (the CUDA code of dde7d3a) and the "before" urpe at 2a6af27
# (the last commit before the sixth pass), each packed with xz and carried.
# Call 0 (49 s of device time, nothing ran: the command was given on stdin, which the tool does
# not pass). Call 1 (290 s):
S=$(date +%s); for a in gpu_bin_a gpu_bin_before; do xz -dc $a.txz | tar xf - || echo "unpack $a failed"; done
export BUILD=gpu_bin URPE_BEFORE=./gpu_bin_before/urpe ATTENTION_TC_FLEX=0
DEADLINE=$((S+420)) bench/gpu_session.sh attention_ab attention_tc_pipeline attention_tc_check > "$OUT/session.txt" 2>&1
# Call 2 (30 s): carried only gpu_bin_b.txz (test_cuda_graphs, test_cuda_syncs), expecting call 1's
# unpacked gpu_bin/urpe to be still there; it was not (a carried path's folder is replaced), so
# every step but syncs_count and PyTorch's GEMMs exited 127.
#   bench/gpu_session.sh carried capture_graphormer precision presets gemm_dtypes
# Call 3 (420 s, cut by the tool's timeout while packing $OUT): carried gpu_bin/urpe and
# gpu_bin/test_cuda_graphs unpacked (53 MB with the tree).
S=$(date +%s); export BUILD=gpu_bin PRECISION_ROUNDS=1 PRESETS_PRECISION=bf16
DEADLINE=$((S+370)) bench/gpu_session.sh capture_graphormer precision presets gemm_dtypes > "$OUT/session.txt" 2>&1
