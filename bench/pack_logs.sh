#!/usr/bin/env bash
# Packs a device call's logs in $OUT so that they come back (bench/cuda_notes.md, "Device calls:
# three ways to lose one"): the device tool brings back at most 8 files of 16 MiB, 64 MiB in all,
# and a call past its time limit brings back only what $OUT holds then. So: one gzip'd tar of the
# text (checkpoints, traces and ncu reports left out: a Table 5 run's checkpoint alone is hundreds
# of MB, and gzip'ing it ran one call past its limit), split in 15 MiB parts, then the ncu reports
# in parts of their own while the 8 files and 64 MiB last (a report cut short is said). Run it last in the call's command:
#   bench/pack_logs.sh "$OUT"
# Here: cat logs.tgz.part* | tar xzf - -C DIR ; cat reps.tar.part* | tar xf - (when all parts came).
set -uo pipefail
out=${1:?usage: bench/pack_logs.sh OUT}
cd "$out" || exit 2
tmp=$(mktemp -d)
find . -type f \( -name '*.ncu-rep' \) -print0 | tar cf "$tmp/reps.tar" --null -T - 2>/dev/null
tar czf "$tmp/logs.tgz" --exclude='*.ncu-rep' --exclude='*.safetensors' --exclude='*.bin' \
  --exclude='trace.json' --exclude='*.nsys-rep' --exclude='*.qdstrm' .
find . -mindepth 1 -delete
split -b 15m "$tmp/logs.tgz" logs.tgz.part
parts=$(ls | wc -l)
if [ -s "$tmp/reps.tar" ] && [ "$parts" -lt 8 ]; then
  split -b 15m -a 2 "$tmp/reps.tar" "$tmp/reps.tar.part"
  for part in "$tmp"/reps.tar.part*; do
    # At most 8 files and 64 MiB come back: the text's parts, then reports while both hold.
    used=$(du -cb . | tail -n 1 | cut -f1)
    if [ "$(ls | wc -l)" -ge 8 ] || [ $((used + $(stat -c %s "$part"))) -gt $((63 * 1024 * 1024)) ]; then
      echo "pack_logs.sh: left out $(basename "$part") and the parts after it (8 files, 64 MiB)"
      break
    fi
    mv "$part" .
  done
fi
rm -rf "$tmp"
ls -l
