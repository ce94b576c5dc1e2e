#!/usr/bin/env bash
# Between hosts as fast as on one (issue 41): our all-reduce and parameter
# server against gloo and raw TCP, in one run, with every byte crossing a real
# TCP stack between "hosts": each host a network namespace whose veth pair is
# a port of one bridge (bench/netns_lib.sh). The same measurements also run on
# plain loopback (inside the first namespace, over its lo) for comparison.
#
#   bench/two_hosts.sh BUILD_DIR [--hosts 2|4] [--ranks 2,4] [--max-bytes N]
#       [--paths veth,loopback] [--rate 1gbit|10gbit] [--delay 0.2ms]
#       [--parts raw,nng,ours,gloo,ps,step] [--rounds N]
#       [--step-batch N] [--step-warmup N] [--step-steps N]
#       [--step-kvstores allreduce,dist_sync] [--step-placement block|cycle]
#       [--hierarchical 0|1]
#
# Per path (veth, loopback), one JSON line per measurement, each with "path":
#   raw    bench/tcp_echo between host 0 and host 1: 4 KiB and 64 MiB echo
#          (rtt_us, gbps both ways) and a one-way stream (gbps)
#   nng    bench/nng_reqrep_bench between the same hosts: nng's own req0/rep0
#          4 KiB round trip with the request transport's socket options,
#          nothing of ours in it: the floor under the parameter server's
#          small messages (client "wait" and "callback", rtt_us)
#   ours   bench/allreduce_bench --transport tcp, rank r on host r % hosts,
#          for each rank count, 4 KiB .. --max-bytes in powers of 4
#   gloo   bench/peers/torch_allreduce_bench.py, one process per rank, placed
#          the same way, same sizes (Debian's python3-torch: /usr/bin/python3)
#   ps     dist_sync kvstore, scheduler and server on host 0, one worker on
#          host 1 (bench/kvstore_bench --worker: push, pull, pushpull of one
#          key of 4 KiB .. 64 MiB, then ResNet-18's set)
#   step   ResNet-18 training steps, 2 hosts x 2 workers: bench/nn_throughput
#          --kvstore allreduce and dist_sync against PyTorch DDP over gloo
#          (bench/two_hosts_step.sh, which says how; batch 8, 2 warm-up and
#          10 timed steps, one thread per worker by default)
# --rounds N repeats all of it N times, ours and gloo alternating (each
# line carries "round"): on a shared machine one side's bad minute then does
# not decide a ratio, which is computed from the medians over the rounds.
# Then the targets, one line each, ours beside the reference and the ratio:
#   {"target":"allreduce_busbw","path":"veth","ranks":2,"bytes":65536,
#    "ours":..,"gloo":..,"ratio":..,"goal":">=1.3","met":true}
#   allreduce_4k_time (ours / gloo time, goal <= 0.5),
#   ps_4k_pushpull (pushpull latency / raw round trip, goal <= 2; with the
#   nng part also nng's floor and ours against it),
#   ps_64m_pushpull (pushpull / raw echo bandwidth, goal >= 0.9),
#   shaped_step (DDP's step time / ours, per kvstore, goal >= 1.2).
# --rate and --delay shape the veth path (tc, netns_lib.sh's netns_shape).
# --hierarchical 0 keeps our all-reduce one flat ring where the ranks sit on
# several hosts, two or more on each (allreduce_bench --hierarchical 0,
# DT_HIERARCHICAL_ALLREDUCE=0 for the step); 1, the default, is the
# library's. Every line carries "hierarchical".
#
# Needs root (ip netns, tc); not part of CI. Every process runs under a
# timeout, and the EXIT trap removes the namespaces, the bridge and whatever
# still runs there. With more ranks than cores the all-reduce figures measure
# the CPU (summing, copying) as much as the network: say so beside them.
set -u

BUILD=${1:?usage: two_hosts.sh BUILD_DIR [--hosts 2|4] [--ranks 2,4] [--max-bytes N] [--paths veth,loopback] [--rate R] [--delay D] [--parts raw,nng,ours,gloo,ps,step] [--rounds N] [--step-batch N] [--step-warmup N] [--step-steps N] [--step-kvstores LIST] [--step-placement block|cycle] [--hierarchical 0|1]}
shift
HOSTS=2
RANKS="2,4"
MAX_BYTES=$((256 << 20))
PATHS="veth,loopback"
RATE=""
DELAY=""
PARTS="raw,nng,ours,gloo,ps,step"
ROUNDS=1
HIERARCHICAL=1
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/two_hosts_step.sh
. "$HERE/two_hosts_step.sh"
while [ $# -gt 0 ]; do
  case "$1" in
    --hosts) HOSTS=$2 ;;
    --ranks) RANKS=$2 ;;
    --max-bytes) MAX_BYTES=$2 ;;
    --paths) PATHS=$2 ;;
    --rate) RATE=$2 ;;
    --delay) DELAY=$2 ;;
    --parts) PARTS=$2 ;;
    --rounds) ROUNDS=$2 ;;
    --step-batch) STEP_BATCH=$2 ;;
    --step-warmup) STEP_WARMUP=$2 ;;
    --step-steps) STEP_STEPS=$2 ;;
    --step-kvstores) STEP_KVSTORES=$2 ;;
    --step-placement) STEP_PLACEMENT=$2 ;;
    --hierarchical) HIERARCHICAL=$2 ;;
    *) echo "two_hosts: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2 || { echo "two_hosts: $1 needs a value" >&2; exit 2; }
done
case "$HOSTS" in 2 | 4) ;; *) echo "two_hosts: --hosts must be 2 or 4" >&2; exit 2 ;; esac
case "$HIERARCHICAL" in 0 | 1) ;; *) echo "two_hosts: --hierarchical must be 0 or 1" >&2; exit 2 ;; esac
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "two_hosts: --rounds must be a positive number" >&2; exit 2; }
[ -n "$DELAY" ] && [ -z "$RATE" ] && { echo "two_hosts: --delay goes with --rate" >&2; exit 2; }

NODE="$BUILD/dt-node"
for program in "$NODE" "$BUILD/bench/allreduce_bench" "$BUILD/bench/kvstore_bench" "$BUILD/bench/tcp_echo"; do
  [ -x "$program" ] || { echo "two_hosts: build $program first" >&2; exit 2; }
done
if [[ ",$PARTS," == *,nng,* ]] && [ ! -x "$BUILD/bench/nng_reqrep_bench" ]; then
  echo "two_hosts: build $BUILD/bench/nng_reqrep_bench first" >&2
  exit 2
fi
if [[ ",$PARTS," == *,step,* ]]; then
  for n in "$STEP_BATCH" "$STEP_WARMUP" "$STEP_STEPS"; do
    [[ "$n" =~ ^[0-9]+$ ]] || { echo "two_hosts: --step-batch, --step-warmup and --step-steps take numbers" >&2; exit 2; }
  done
  step_check || exit 2
fi
[ "$(id -u)" = 0 ] || { echo "two_hosts: needs root (ip netns, tc)" >&2; exit 2; }
command -v jq >/dev/null || { echo "two_hosts: needs jq" >&2; exit 2; }
if [[ ",$PARTS," == *,gloo,* ]] && ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "two_hosts: gloo needs Debian's python3-torch (scripts/install-deps.sh --bench)" >&2
  exit 2
fi

# shellcheck source=bench/netns_lib.sh
. "$HERE/netns_lib.sh"
netns_begin two_hosts || exit 1
T=$NETNS_TMP

netns_create "dth$(($$ % 100000))" "$HOSTS" || exit 1
if [ -n "$RATE" ]; then
  netns_shape "$RATE" "$DELAY" || {
    echo "two_hosts: tc could not shape to $RATE${DELAY:+ with $DELAY delay}${DELAY:+ (a delay needs the netem qdisc, sch_netem, in the kernel)}" >&2
    exit 1
  }
fi

PORT=$((20000 + ($$ % 20000)))
# One part, with a port of its own, in the background: bash runs the INT and
# TERM traps (and so the cleanup) only between commands, and `wait` is one it
# can leave at once, where a foreground pipeline would hold it until the part
# ends.
part() {
  PORT=$((PORT + 1))
  "$@" &
  wait $!
}
LIMIT=900  # seconds, any one process
RESULTS="$T/results.jsonl"
: >"$RESULTS"

# Every line a program prints, with "path", "round" (and the shaping) added,
# to stdout and to the results.
ROUND=1
tag() {
  jq -c --unbuffered --arg p "$1" --argjson n "$ROUND" --arg r "$RATE" --arg d "$DELAY" --argjson h "$HIERARCHICAL" \
    '. + {path: $p, round: $n, hierarchical: $h} + (if $r != "" then {rate: $r, delay: $d} else {} end)' | tee -a "$RESULTS"
}

# Where host i is on this path: its namespace, its address and the device
# its peers reach it through.
H_NS=()
H_ADDR=()
H_DEV=()
place_hosts() {
  local path=$1 i
  H_NS=() H_ADDR=() H_DEV=()
  for ((i = 0; i < HOSTS; i++)); do
    if [ "$path" = veth ]; then
      H_NS+=("${NETNS_NAMES[$i]}") H_ADDR+=("${NETNS_ADDRS[$i]}") H_DEV+=("${NETNS_DEVS[$i]}")
    else
      H_NS+=("${NETNS_NAMES[0]}") H_ADDR+=(127.0.0.1) H_DEV+=(lo)
    fi
  done
}
on_host() {
  local i=$1
  shift
  ip netns exec "${H_NS[$i]}" timeout "$LIMIT" "$@"
}

run_raw() {
  on_host 1 "$BUILD/bench/tcp_echo" --serve "${H_ADDR[1]}" "$PORT" &
  local server=$!
  on_host 0 "$BUILD/bench/tcp_echo" --connect "${H_ADDR[1]}" "$PORT" --sizes 4096,67108864 | tag "$1"
  kill "$server" 2>/dev/null
  wait "$server" 2>/dev/null
}

run_nng() {
  on_host 1 "$BUILD/bench/nng_reqrep_bench" --serve "${H_ADDR[1]}" "$PORT" &
  local server=$!
  on_host 0 "$BUILD/bench/nng_reqrep_bench" --connect "${H_ADDR[1]}" "$PORT" --sizes 4096 | tag "$1"
  kill "$server" 2>/dev/null
  wait "$server" 2>/dev/null
}

run_ours() {
  local path=$1 ranks=$2 netns hosts
  netns=$(IFS=,; echo "${H_NS[*]}")
  hosts=$(IFS=,; echo "${H_ADDR[*]}")
  timeout "$LIMIT" "$BUILD/bench/allreduce_bench" --device cpu --transport tcp --ranks "$ranks" \
    --max-bytes "$MAX_BYTES" --hierarchical "$HIERARCHICAL" --netns "$netns" --hosts "$hosts" | tag "$path"
}

run_gloo() {
  local path=$1 ranks=$2 r h pids=()
  for ((r = ranks - 1; r >= 0; r--)); do
    h=$((r % HOSTS))
    on_host "$h" /usr/bin/python3 "$HERE/peers/torch_allreduce_bench.py" --ranks "$ranks" --rank "$r" \
      --master "${H_ADDR[0]}:$PORT" --ifname "${H_DEV[$h]}" --max-bytes "$MAX_BYTES" >"$T/gloo$r.out" 2>"$T/gloo$r.err" &
    pids+=($!)
  done
  local failed=0 pid
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  tag "$path" <"$T/gloo0.out"
  [ "$failed" = 0 ] || { echo "two_hosts: gloo with $ranks ranks failed:" >&2; tail -n 3 "$T"/gloo*.err >&2; }
}

run_ps() {
  local path=$1
  local common=(DMLC_PS_ROOT_URI="${H_ADDR[0]}" DMLC_PS_ROOT_PORT=$PORT DMLC_NUM_SERVER=1 DMLC_NUM_WORKER=1
    DT_PS_DATA_TRANSPORT=tcp DT_BENCH_TRANSPORT=tcp DT_BENCH_MAX_BYTES=$((64 << 20))
    DT_REQUEST_TIMEOUT_S=120 DT_STARTUP_TIMEOUT_S=30)
  on_host 0 env "${common[@]}" DMLC_ROLE=scheduler DMLC_NODE_HOST="${H_ADDR[0]}" "$NODE" >"$T/scheduler.log" 2>&1 &
  local sched=$!
  on_host 0 env "${common[@]}" DMLC_ROLE=server DMLC_NODE_HOST="${H_ADDR[0]}" "$NODE" >"$T/server.log" 2>&1 &
  local server=$!
  on_host 1 env "${common[@]}" DMLC_ROLE=worker DMLC_NODE_HOST="${H_ADDR[1]}" "$BUILD/bench/kvstore_bench" --worker \
    2>"$T/worker.err" | tag "$path"
  local failed=0 pid
  for pid in "$server" "$sched"; do wait "$pid" || failed=1; done
  [ "$failed" = 0 ] || { echo "two_hosts: the parameter-server job failed:" >&2; tail -n 3 "$T/worker.err" "$T/server.log" "$T/scheduler.log" >&2; }
}

IFS=, read -r -a path_list <<<"$PATHS"
IFS=, read -r -a rank_list <<<"$RANKS"
for ((ROUND = 1; ROUND <= ROUNDS; ROUND++)); do
  for path in "${path_list[@]}"; do
    place_hosts "$path"
    [[ ",$PARTS," == *,raw,* ]] && part run_raw "$path"
    [[ ",$PARTS," == *,nng,* ]] && part run_nng "$path"
    for ranks in "${rank_list[@]}"; do
      # Alternate which side goes first, so neither always runs on the
      # warmer (or the busier) minute.
      if ((ROUND % 2 == 1)); then
        [[ ",$PARTS," == *,ours,* ]] && part run_ours "$path" "$ranks"
        [[ ",$PARTS," == *,gloo,* ]] && part run_gloo "$path" "$ranks"
      else
        [[ ",$PARTS," == *,gloo,* ]] && part run_gloo "$path" "$ranks"
        [[ ",$PARTS," == *,ours,* ]] && part run_ours "$path" "$ranks"
      fi
    done
    [[ ",$PARTS," == *,ps,* ]] && part run_ps "$path"
    [[ ",$PARTS," == *,step,* ]] && run_step "$path"
  done
done

# The targets of issue 41, from this run's lines: per path, rank count and
# size, the median over the rounds of each side, then the ratio.
jq -c -s '
  def median: map(select(. != null)) | sort
    | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
      else (.[length / 2 - 1] + .[length / 2]) / 2 end;
  def summary: group_by([.path, .ranks, .bytes])
    | map({path: .[0].path, ranks: .[0].ranks, bytes: .[0].bytes, rounds: length,
           busbw: (map(.busbw_gbps) | median), time: (map(.time_us) | median),
           latency: (map(.latency_us) | median), gbps: (map(.gbps) | median), rtt: (map(.rtt_us) | median)});
  def r3: if . == null then null else . * 1000 | round / 1000 end;
  (map(select(.op == "allreduce" and (has("peer") | not))) | summary) as $ours
  | (map(select(.op == "allreduce" and has("peer"))) | summary) as $gloo
  | (map(select(.op == "pushpull" and (has("set") | not))) | summary) as $ps
  | (map(select(.op == "raw_tcp")) | summary) as $raw
  | (map(select(.op == "nng_reqrep" and .client == "callback")) | summary) as $nng
  | ($ours[] as $o | $gloo[] | select(.path == $o.path and .ranks == $o.ranks and .bytes == $o.bytes) as $g
     | if $o.bytes == 4096 then
         {target: "allreduce_4k_time", path: $o.path, ranks: $o.ranks, bytes: 4096, rounds: $o.rounds,
          ours_us: ($o.time | r3), gloo_us: ($g.time | r3), ratio: ($o.time / $g.time | r3), goal: "<=0.5",
          met: ($o.time <= 0.5 * $g.time)}
       elif $o.bytes >= 65536 then
         {target: "allreduce_busbw", path: $o.path, ranks: $o.ranks, bytes: $o.bytes, rounds: $o.rounds,
          ours_gbps: ($o.busbw | r3), gloo_gbps: ($g.busbw | r3), ratio: ($o.busbw / $g.busbw | r3), goal: ">=1.3",
          met: ($o.busbw >= 1.3 * $g.busbw)}
       else empty end),
    ($ps[] as $p | $raw[] | select(.path == $p.path and .bytes == $p.bytes) as $r
     | if $p.bytes == 4096 then
         ([$nng[] | select(.path == $p.path and .bytes == 4096)] | first) as $n
         | {target: "ps_4k_pushpull", path: $p.path, rounds: $p.rounds, ours_us: ($p.latency | r3), raw_tcp_rtt_us: ($r.rtt | r3),
            ratio: ($p.latency / $r.rtt | r3), goal: "<=2", met: ($p.latency <= 2 * $r.rtt)}
           + (if $n == null then {} else
                {nng_floor_us: ($n.rtt | r3), nng_floor_ratio: ($n.rtt / $r.rtt | r3), ours_over_nng: ($p.latency / $n.rtt | r3)}
              end)
       elif $p.bytes == 67108864 then
         {target: "ps_64m_pushpull", path: $p.path, rounds: $p.rounds, ours_gbps: ($p.gbps | r3), raw_tcp_gbps: ($r.gbps | r3),
          ratio: ($p.gbps / $r.gbps | r3), goal: ">=0.9", met: ($p.gbps >= 0.9 * $r.gbps)}
       else empty end)' "$RESULTS"
[[ ",$PARTS," == *,step,* ]] && step_targets "$RESULTS"
