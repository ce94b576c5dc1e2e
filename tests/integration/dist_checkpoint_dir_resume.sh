#!/bin/bash
# Issue 19, item 4: a dist_sync job restarted with the same --checkpoint-dir
# continues from the last epoch every worker finished, bit for bit. dtrun
# runs the example (MLP, 2 servers, 2 workers): once for 2 epochs straight;
# once for 1 epoch with a checkpoint directory (the "stopped" job), then
# the same command with --epochs 2. Worker 0's final checkpoints (--checkpoint,
# weights and the servers' optimizer state) must be the same bytes.
#
#   dist_checkpoint_dir_resume.sh DTRUN EXAMPLE
set -euo pipefail
dtrun="$1" example="$2"
work=$(mktemp -d "${TMPDIR:-/tmp}/dt-ckpt-dir.XXXXXX")
trap 'rm -rf "$work"' EXIT
export OMP_WAIT_POLICY=passive
job() {
  "$dtrun" -n 2 -s 2 --timeout 300 -- "$example" --model mlp --kvstore dist_sync --batch-size 64 --threads 1 \
    --lr 0.05 --momentum 0.9 "$@" > "$work/last.log" 2>&1 || { echo "FAIL: the job failed"; tail -20 "$work/last.log"; exit 1; }
}
job --epochs 2 --checkpoint "$work/straight.safetensors"
job --epochs 1 --checkpoint-dir "$work/dir"
[ -f "$work/dir/MANIFEST.json" ] || { echo "FAIL: no manifest after the first run"; ls -R "$work/dir"; exit 1; }
grep -q '"epoch":1' "$work/dir/MANIFEST.json" || { echo "FAIL: manifest: $(cat "$work/dir/MANIFEST.json")"; exit 1; }
for r in 0 1; do
  [ -f "$work/dir/epoch-1/worker-$r.safetensors" ] || { echo "FAIL: worker $r wrote no checkpoint"; exit 1; }
done
job --epochs 2 --checkpoint-dir "$work/dir" --checkpoint "$work/resumed.safetensors"
grep -q "epoch 2/2:" "$work/last.log" || { echo "FAIL: the restarted job did not train epoch 2"; tail "$work/last.log"; exit 1; }
if grep -q "epoch 1/2:" "$work/last.log"; then echo "FAIL: the restarted job trained epoch 1 again"; exit 1; fi
grep -q "resuming after epoch 1/2 from checkpoint directory" "$work/last.log" ||
  { echo "FAIL: the restarted job did not say where it resumed"; tail "$work/last.log"; exit 1; }
grep -q '"epoch":2' "$work/dir/MANIFEST.json" || { echo "FAIL: manifest after the restart: $(cat "$work/dir/MANIFEST.json")"; exit 1; }
cmp -s "$work/straight.safetensors" "$work/resumed.safetensors" ||
  { echo "FAIL: the restarted job's weights differ from the uninterrupted job's"; exit 1; }
echo "OK: restarted from epoch 1 of the checkpoint directory, bit-identical to 2 epochs straight"
