#!/bin/bash
# Time to accuracy on Fashion-MNIST (issue 37, item 6): disttrain's
# examples/c/train_fashion_mnist and PyTorch's bench/peers/
# torch_fashion_mnist_tta.py with the same recipe (model, batch 64, SGD lr
# 0.02 momentum 0.9 at a constant rate, epochs), taking turns in one session:
# for each round, LeNet ours, LeNet PyTorch's, ResNet-18 (one-channel stem)
# ours, ResNet-18 PyTorch's.
#
# Seconds to accuracy: the training seconds of the epochs up to the first
# whose test accuracy reached the model's target, summed (each side times an
# epoch's training alone, its evaluation excluded: disttrain's metrics log
# "seconds", PyTorch's timer around its loop, synchronised). wall_seconds is
# each process from start to exit: loading, building and evaluations too.
#
# Prints one JSON line per run, then a table; exits 1 when a run failed.
#
#   bench/time_to_accuracy.sh EXAMPLE [OUT_JSONL]
#     EXAMPLE   build/examples/train_fashion_mnist
# Environment:
#   DT_TTA_DEVICE      gpu (default) or cpu: ours --gpus 0 or none; PyTorch's
#                      --device cuda or cpu
#   DT_TTA_MODELS      default "lenet resnet18"
#   DT_TTA_LENET_EPOCHS, DT_TTA_RESNET18_EPOCHS   default 3 and 2
#   DT_TTA_LENET_TARGET, DT_TTA_RESNET18_TARGET   default 0.88 and 0.90
#   DT_TTA_ROUNDS      default 1
#   DT_TTA_DATA        Fashion-MNIST IDX directory (default Debian's)
#   DT_TTA_THREADS     CPU threads for both (default: each one's default)
#   DT_TTA_TIMEOUT     seconds per run (default 600)
#   PYTHON             default python3
set -uo pipefail
example="$1"
out="${2:-/dev/null}"
here="$(cd "$(dirname "$0")" && pwd)"
device="${DT_TTA_DEVICE:-gpu}"
data="${DT_TTA_DATA:-/usr/share/datasets/fashion-mnist}"
python="${PYTHON:-python3}"
limit="${DT_TTA_TIMEOUT:-600}"
work=$(mktemp -d "${TMPDIR:-/tmp}/dt-tta.XXXXXX")
trap 'rm -rf "$work"' EXIT

ours_device=(); torch_device=(--device cuda)
[ "$device" = cpu ] && torch_device=(--device cpu)
[ "$device" = gpu ] && ours_device=(--gpus 0)
threads=()
[ -n "${DT_TTA_THREADS:-}" ] && threads=(--threads "$DT_TTA_THREADS")

# epochs_of MODEL, target_of MODEL
epochs_of() { case "$1" in lenet) echo "${DT_TTA_LENET_EPOCHS:-3}" ;; *) echo "${DT_TTA_RESNET18_EPOCHS:-2}" ;; esac; }
target_of() { case "$1" in lenet) echo "${DT_TTA_LENET_TARGET:-0.88}" ;; *) echo "${DT_TTA_RESNET18_TARGET:-0.90}" ;; esac; }

# A summary line from disttrain's metrics log (one JSON object per epoch).
summarise_ours() {
  "$python" - "$@" <<'EOF'
import json, sys
metrics, model, epochs, target, wall, status = sys.argv[1:7]
lines = [json.loads(l) for l in open(metrics) if l.strip()] if status == "0" else []
total, to_target, accuracy = 0.0, None, None
for line in lines:
    total += line["seconds"]
    accuracy = line.get("test_accuracy")
    if to_target is None and accuracy is not None and accuracy >= float(target):
        to_target = total
print(json.dumps({"impl": "disttrain", "model": model, "epochs": int(epochs), "batch": 64, "lr": 0.02,
                  "momentum": 0.9, "target": float(target),
                  "seconds_to_target": None if to_target is None else round(to_target, 2),
                  "final_test_accuracy": accuracy, "train_seconds": round(total, 2),
                  "wall_seconds": float(wall), "epochs_done": len(lines), "exit": int(status)}))
EOF
}

run_ours() {
  local model="$1" epochs target start status
  epochs=$(epochs_of "$model"); target=$(target_of "$model")
  rm -f "$work/metrics.jsonl"
  start=$(date +%s.%N)
  timeout "$limit" "$example" --model "$model" --epochs "$epochs" --batch-size 64 --lr 0.02 --momentum 0.9 \
    --kvstore none "${ours_device[@]}" "${threads[@]}" --data "$data" --metrics "$work/metrics.jsonl" \
    > "$work/ours.log" 2>&1
  status=$?
  [ "$status" -eq 0 ] || { echo "disttrain $model exited $status:" >&2; tail -5 "$work/ours.log" >&2; }
  summarise_ours "$work/metrics.jsonl" "$model" "$epochs" "$target" \
    "$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }')" "$status"
}

run_torch() {
  local model="$1" status
  timeout "$limit" "$python" "$here/peers/torch_fashion_mnist_tta.py" --model "$model" --epochs "$(epochs_of "$model")" \
    --batch-size 64 --lr 0.02 --momentum 0.9 --target "$(target_of "$model")" "${torch_device[@]}" \
    ${DT_TTA_THREADS:+--threads "$DT_TTA_THREADS"} --data "$data" > "$work/torch.log" 2>&1
  status=$?
  if [ "$status" -eq 0 ]; then
    grep '"impl"' "$work/torch.log" | tail -n 1
  else
    echo "PyTorch $model exited $status:" >&2; tail -5 "$work/torch.log" >&2
    echo "{\"impl\": \"pytorch\", \"model\": \"$model\", \"exit\": $status}"
  fi
}

for round in $(seq 1 "${DT_TTA_ROUNDS:-1}"); do
  for model in ${DT_TTA_MODELS:-lenet resnet18}; do
    for side in ours torch; do
      line=$("run_$side" "$model")
      line=$(echo "$line" | "$python" -c "import json,sys; d=json.loads(sys.stdin.read()); d['round']=$round; \
d['device_kind']='$device'; print(json.dumps(d))")
      echo "$line" | tee -a "$out"
      echo "$line" >> "$work/all.jsonl"
    done
  done
done

# The table; exits 1 when a run failed.
"$python" - "$work/all.jsonl" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
form = "%-9s %-10s %6s %7s %18s %14s %13s %12s %5s"
print(form % ("model", "impl", "epochs", "target", "seconds_to_target", "final_accuracy", "train_seconds",
              "wall_seconds", "exit"))
def show(v):
    return "-" if v is None else str(v)
for r in rows:
    print(form % (r.get("model"), r.get("impl"), show(r.get("epochs")), show(r.get("target")),
                  show(r.get("seconds_to_target")), show(r.get("final_test_accuracy")), show(r.get("train_seconds")),
                  show(r.get("wall_seconds")), r.get("exit", 0)))
sys.exit(1 if any(r.get("exit", 0) != 0 for r in rows) else 0)
EOF
