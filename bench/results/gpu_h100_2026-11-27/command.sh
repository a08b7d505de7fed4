# The three device calls of 2026-11-27 (fifth session), each on the same warm nvidia-h100-x1,
# binaries built here at 1651e8a by bench/pack_gpu_bin.sh and carried as gpu_bin.tgz.
# Call 1 (355 s):
tar xzf gpu_bin.tgz; export BUILD=gpu_bin
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/device.txt"; git rev-parse HEAD >> "$OUT/device.txt"
DEADLINE=$(( $(date +%s) + 555 )) PRECISION_ROUNDS=1 bench/gpu_session.sh carried precision precision_torch gemm_dtypes graphormer_step
# Call 2 (247 s):
DEADLINE=$(( $(date +%s) + 385 )) ATTENTION_TC_PEERS=0 bench/gpu_session.sh attention_tc_measure attention_tc_check
# Call 3 (71 s):
DEADLINE=$(( $(date +%s) + 175 )) PRESETS_PRECISION=bf16 bench/gpu_session.sh presets
# each call ended: tar czf /tmp/logs.tgz -C "$OUT" . && find "$OUT" -mindepth 1 -delete && split -b 24m /tmp/logs.tgz "$OUT/logs.tgz.part"
