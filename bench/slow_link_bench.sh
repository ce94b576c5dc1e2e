#!/usr/bin/env bash
# What gradient compression buys on a slow link (issue 16): a dist_sync job
# of one scheduler + one server and two workers, each in a network namespace
# of its own on a bridge, every port shaped by tc (token bucket, both
# directions) to a given rate; each worker pushes ResNet-18's gradient set
# (44.7 MB of float32) and pulls it back per step (bench/slow_link_worker.cc).
# One JSON line per rate, mode and update side, from worker 0:
#   {"bench":"slow_link","rate":"100mbit","compression":"2bit:threshold=0.005",
#    "update_on":"servers","step_ms":...,"bytes_sent_per_step":...,...}
# followed by one line per rate and mode with the ratios to "none" of the
# same rate and update side (speedup = none's step_ms / this step_ms).
#
#   bench/slow_link_bench.sh BUILD_DIR [--rates 1gbit,100mbit]
#       [--modes none,fp16,2bit:threshold=0.005,...] [--steps N]
#       [--update-on servers|workers|servers,workers]
#
# Needs root (ip netns, tc); every process runs under a timeout, and the
# EXIT trap removes the namespaces, the bridge and whatever still runs there.
# The values pushed are uniform in [-0.01, 0.01]: the 2bit and 1bit
# thresholds in the default modes are chosen for that scale (MXNet's default
# 0.5 would quantise every value to 0, which sends the same bytes).
set -u

BUILD=${1:?usage: slow_link_bench.sh BUILD_DIR [--rates R,...] [--modes M,...] [--steps N] [--update-on S]}
shift
RATES="1gbit,100mbit"
MODES="none,fp16,bf16,2bit:threshold=0.005,1bit:threshold=0.005,topk:fraction=0.01"
STEPS=5
UPDATE_ON="servers"
while [ $# -gt 0 ]; do
  case "$1" in
    --rates) RATES=$2 ;;
    --modes) MODES=$2 ;;
    --steps) STEPS=$2 ;;
    --update-on) UPDATE_ON=$2 ;;
    *) echo "slow_link_bench: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2 || { echo "slow_link_bench: $1 needs a value" >&2; exit 2; }
done

NODE="$BUILD/dt-node"
WORKER="$BUILD/bench/slow_link_worker"
[ -x "$NODE" ] && [ -x "$WORKER" ] || {
  echo "slow_link_bench: build dt-node and slow_link_worker first ($NODE, $WORKER)" >&2
  exit 2
}
[ "$(id -u)" = 0 ] || { echo "slow_link_bench: needs root (ip netns, tc)" >&2; exit 2; }
command -v tc >/dev/null || { echo "slow_link_bench: tc (iproute2) is not installed" >&2; exit 2; }

# shellcheck source=bench/netns_lib.sh
. "$(dirname "$0")/netns_lib.sh"
netns_begin slow_link_bench || exit 1
T=$NETNS_TMP

netns_create "dsl$(($$ % 100000))" 3 || exit 1
NAMESPACES=("${NETNS_NAMES[@]}")
ADDRS=("${NETNS_ADDRS[@]}")

# Every port at `rate` in both directions: the namespace's end shapes what
# the node sends, the bridge's end what it receives.
shape() { netns_shape "$1"; }

PORT=$((20000 + ($$ % 20000)))
# One job: scheduler and server in the first namespace, a worker in each of
# the others. Prints worker 0's line; returns non-zero when a process failed.
run_job() {
  local rate=$1 mode=$2 update_on=$3
  PORT=$((PORT + 1))
  local common=(DMLC_PS_ROOT_URI="${ADDRS[0]}" DMLC_PS_ROOT_PORT=$PORT DMLC_NUM_SERVER=1 DMLC_NUM_WORKER=2
    DT_BENCH_RATE="$rate")
  local limit=$((60 + STEPS * 30))
  ip netns exec "${NAMESPACES[0]}" env "${common[@]}" DMLC_ROLE=scheduler DMLC_NODE_HOST="${ADDRS[0]}" \
    timeout "$limit" "$NODE" >"$T/scheduler.log" 2>&1 &
  local sched=$!
  ip netns exec "${NAMESPACES[0]}" env "${common[@]}" DMLC_ROLE=server DMLC_NODE_HOST="${ADDRS[0]}" \
    timeout "$limit" "$NODE" >"$T/server.log" 2>&1 &
  local server=$!
  local workers=()
  for w in 0 1; do
    ip netns exec "${NAMESPACES[$((w + 1))]}" env "${common[@]}" DMLC_ROLE=worker \
      DMLC_NODE_HOST="${ADDRS[$((w + 1))]}" timeout "$limit" "$WORKER" --compression "$mode" --steps "$STEPS" \
      --update-on "$update_on" >"$T/worker$w.out" 2>"$T/worker$w.err" &
    workers+=($!)
  done
  local failed=0
  for pid in "${workers[@]}" "$server" "$sched"; do wait "$pid" || failed=1; done
  cat "$T/worker0.out" "$T/worker1.out"
  if [ "$failed" != 0 ]; then
    echo "slow_link_bench: the job at $rate with $mode failed:" >&2
    tail -n 3 "$T"/worker*.err "$T/server.log" "$T/scheduler.log" >&2
  fi
  return "$failed"
}

IFS=, read -r -a rate_list <<<"$RATES"
IFS=, read -r -a update_list <<<"$UPDATE_ON"
# Modes may carry commas of their own ("topk:fraction=0.01,error_feedback=off"):
# split on commas that start a new mode name only.
mapfile -t mode_list < <(echo "$MODES" | sed -E 's/,(none|fp16|bf16|2bit|1bit|topk|threshold)/\n\1/g')

status=0
for rate in "${rate_list[@]}"; do
  shape "$rate" || { echo "slow_link_bench: tc could not shape to $rate" >&2; exit 1; }
  for update_on in "${update_list[@]}"; do
    base_ms=""
    base_bytes=""
    for mode in "${mode_list[@]}"; do
      line=$(run_job "$rate" "$mode" "$update_on") || status=1
      [ -n "$line" ] || continue
      echo "$line"
      ms=$(echo "$line" | sed -E 's/.*"step_ms":([0-9.]+).*/\1/')
      bytes=$(echo "$line" | sed -E 's/.*"bytes_sent_per_step":([0-9.]+).*/\1/')
      if [ "$mode" = none ]; then
        base_ms=$ms
        base_bytes=$bytes
      elif [ -n "$base_ms" ]; then
        awk -v r="$rate" -v m="$mode" -v u="$update_on" -v b="$base_ms" -v s="$ms" -v bb="$base_bytes" -v by="$bytes" \
          'BEGIN { printf "{\"bench\":\"slow_link_ratio\",\"rate\":\"%s\",\"compression\":\"%s\",\"update_on\":\"%s\",\"speedup\":%.2f,\"bytes_sent_fraction\":%.4f}\n", r, m, u, b / s, by / bb }'
      fi
    done
  done
done
exit "$status"
