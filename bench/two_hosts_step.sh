# shellcheck shell=bash
# The "step" part of bench/two_hosts.sh (issue 41's shaped-link target):
# data-parallel ResNet-18 training steps, 2 hosts x 2 workers, ours against
# PyTorch DDP over gloo on the same path and shaping. Sourced by
# two_hosts.sh, which provides BUILD, HERE, NODE, T, PORT, LIMIT, ROUND,
# RATE, DELAY, H_NS/H_ADDR/H_DEV (place_hosts), on_host and tag.
#
#   ours  build/bench/nn_throughput --model resnet18 --kvstore KV --threads 1
#         for each KV of --step-kvstores (allreduce, dist_sync): a scheduler
#         (and for dist_sync one server per host) from dt-node, and the 4
#         workers placed by --step-placement: "block" (default) ranks 0,1 on
#         host 0 and 2,3 on host 1, as torchrun places them; "cycle" rank r
#         on host r % 2, as dtrun's ssh launcher does (dtrun itself reaches
#         other hosts over ssh, which namespaces do not have, so the roles
#         are started here with the environment dtrun gives them).
#   ddp   bench/peers/torch_nn_throughput.py --model resnet18 --ddp 4
#         --rank R --master HOST0:PORT --ifname DEV, ranks placed the same way.
# Both sides: the same batch (--step-batch, default 8), warm-up steps
# (--step-warmup, 2) and timed steps (--step-steps, 10), one thread per worker
# (--threads 1, OMP_NUM_THREADS=1), so 4 workers share the cores alike.
# One line per worker with "side" (ours|ddp) and "step_ms" (batch / its
# images/s), then per kvstore the target line
#   {"target":"shaped_step","path":..,"rate":..,"kvstore":..,"ours_ms":..,
#    "ddp_ms":..,"ratio":..,"ratio_is":"ddp_ms / ours_ms (>1: ours faster)",
#    "goal":">=1.2","met":..}
# with each side's step time the mean over its 4 workers, median over the
# rounds. The workers of one host share one `ip netns exec` (one mount
# namespace, as processes on one machine do), so ours connects them over
# ipc, as it would on a real host.
#
# On a machine with fewer cores than workers (the 2-core development VM:
# 4 workers, plus both ends' TCP stacks and, for dist_sync, the servers) the
# step time measures the compute as much as the network; the lines carry
# "cores" so that is visible beside the figures.

STEP_BATCH=8
STEP_WARMUP=2
STEP_STEPS=10
STEP_KVSTORES="allreduce,dist_sync"
STEP_WORKERS_PER_HOST=2
STEP_PLACEMENT=block

step_check() {
  case "$STEP_PLACEMENT" in block | cycle) ;; *) echo "two_hosts: --step-placement is block or cycle" >&2; return 1 ;; esac
  [ -x "$BUILD/bench/nn_throughput" ] || { echo "two_hosts: build $BUILD/bench/nn_throughput first" >&2; return 1; }
  /usr/bin/python3 -c 'import torch' 2>/dev/null ||
    { echo "two_hosts: the step part's DDP needs Debian's python3-torch (scripts/install-deps.sh --bench)" >&2; return 1; }
}

# Runs, inside host $1's namespace (one mount namespace for all of them),
# the processes named by the remaining arguments: "scheduler", "server" or
# a worker "RANK:LOCAL_RANK". The caller exports STEP_ENV_* for them; exits 1
# if any of them failed.
step_host_group() {
  local h=$1
  shift
  # shellcheck disable=SC2016  # expanded by the inner bash, from its environment
  on_host "$h" env "${STEP_COMMON[@]}" DMLC_NODE_HOST="${H_ADDR[$h]}" STEP_HOST="$h" bash -c '
    rc=0 pids=()
    for what in "$@"; do
      case "$what" in
        scheduler | server)
          DMLC_ROLE=$what "$STEP_NODE" >"$STEP_T/step-$what$STEP_HOST.log" 2>&1 & ;;
        *)
          rank=${what%%:*} local=${what#*:}
          DMLC_ROLE=worker DMLC_WORKER_ID=$rank DT_LOCAL_RANK=$local LOCAL_RANK=$local \
            "$STEP_NN" --model resnet18 --kvstore "$STEP_KV" --threads 1 --batch "$STEP_BATCH" \
            --warmup "$STEP_WARMUP" --steps "$STEP_STEPS" >"$STEP_T/step$rank.out" 2>"$STEP_T/step$rank.err" & ;;
      esac
      pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
    exit $rc' _ "$@"
}

# The worker ranks of host h (of 2), by STEP_PLACEMENT.
step_ranks_of() {
  local h=$1 i
  for ((i = 0; i < STEP_WORKERS_PER_HOST; i++)); do
    if [ "$STEP_PLACEMENT" = cycle ]; then echo $((h + 2 * i)); else echo $((h * STEP_WORKERS_PER_HOST + i)); fi
  done
}

step_lines() {
  local side=$1 file=$2 h=$3
  [ -s "$file" ] || return 0
  jq -c --arg s "$side" --argjson h "$h" --argjson c "$(nproc)" --arg p "$STEP_PLACEMENT" \
    '. + {side: $s, host: $h, cores: $c, placement: $p, step_ms: (.batch * 1000 / .images_per_s * 10 | round / 10)}' "$file"
}

run_step_ours() {
  local path=$1 kv=$2 servers=0 h r failed=0 pids=()
  [ "$kv" = dist_sync ] && servers=2
  rm -f "$T"/step*.out "$T"/step*.err
  STEP_COMMON=(DMLC_PS_ROOT_URI="${H_ADDR[0]}" DMLC_PS_ROOT_PORT="$PORT" DMLC_NUM_SERVER="$servers" DMLC_NUM_WORKER=4
    DT_LOCAL_SIZE="$STEP_WORKERS_PER_HOST" LOCAL_WORLD_SIZE="$STEP_WORKERS_PER_HOST" OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
    DT_HIERARCHICAL_ALLREDUCE="$HIERARCHICAL"
    DT_REQUEST_TIMEOUT_S=300 DT_STARTUP_TIMEOUT_S=60 STEP_NODE="$NODE" STEP_NN="$BUILD/bench/nn_throughput"
    STEP_T="$T" STEP_KV="$kv" STEP_BATCH="$STEP_BATCH" STEP_WARMUP="$STEP_WARMUP" STEP_STEPS="$STEP_STEPS")
  for ((h = 0; h < 2; h++)); do
    local roles=()
    [ "$h" = 0 ] && roles+=(scheduler)
    [ "$servers" -gt 0 ] && roles+=(server)
    local i=0 r
    for r in $(step_ranks_of "$h"); do
      roles+=("$r:$i")
      i=$((i + 1))
    done
    step_host_group "$h" "${roles[@]}" &
    pids+=($!)
  done
  for r in "${pids[@]}"; do wait "$r" || failed=1; done
  for ((h = 0; h < 2; h++)); do
    for r in $(step_ranks_of "$h"); do step_lines ours "$T/step$r.out" "$h"; done
  done | tag "$path"
  if [ "$failed" != 0 ]; then
    echo "two_hosts: the $kv step job failed:" >&2
    tail -n 3 "$T"/step*.err "$T"/step-*.log >&2
  fi
}

run_step_ddp() {
  local path=$1 h r failed=0 pids=()
  rm -f "$T"/ddp*.out "$T"/ddp*.err
  for ((h = 1; h >= 0; h--)); do
    for r in $(step_ranks_of "$h"); do
      on_host "$h" env OMP_NUM_THREADS=1 /usr/bin/python3 "$HERE/peers/torch_nn_throughput.py" --model resnet18 \
        --threads 1 --batch "$STEP_BATCH" --warmup "$STEP_WARMUP" --steps "$STEP_STEPS" --ddp 4 --rank "$r" \
        --master "${H_ADDR[0]}:$PORT" --ifname "${H_DEV[$h]}" >"$T/ddp$r.out" 2>"$T/ddp$r.err" &
      pids+=($!)
    done
  done
  for r in "${pids[@]}"; do wait "$r" || failed=1; done
  for ((h = 0; h < 2; h++)); do
    for r in $(step_ranks_of "$h"); do step_lines ddp "$T/ddp$r.out" "$h"; done
  done | tag "$path"
  [ "$failed" = 0 ] || { echo "two_hosts: the DDP step job failed:" >&2; tail -n 3 "$T"/ddp*.err >&2; }
}

# Ours (each kvstore) and DDP, the side that goes first alternating by round.
run_step() {
  local path=$1 kv
  local -a kvs
  IFS=, read -r -a kvs <<<"$STEP_KVSTORES"
  if ((ROUND % 2 == 0)); then part run_step_ddp "$path"; fi
  for kv in "${kvs[@]}"; do part run_step_ours "$path" "$kv"; done
  if ((ROUND % 2 == 1)); then part run_step_ddp "$path"; fi
}

# The target lines from the results file $1.
step_targets() {
  jq -c -s '
    def median: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
      else (.[length / 2 - 1] + .[length / 2]) / 2 end;
    def mean: add / length;
    def r1: . * 10 | round / 10;
    map(select(.side != null))
    | (map(select(.side == "ours")) | group_by([.path, .kvstore])) as $ours
    | map(select(.side == "ddp")) as $ddp
    | $ours[]
    | .[0] as $o
    | (group_by(.round) | map(map(.step_ms) | mean) | median) as $ours_ms
    | ($ddp | map(select(.path == $o.path)) | group_by(.round) | map(map(.step_ms) | mean) | median) as $ddp_ms
    | select($ddp_ms != null)
    | {target: "shaped_step", path: $o.path, rate: ($o.rate // "unshaped"), delay: (if ($o.delay // "") == "" then "none" else $o.delay end),
       kvstore: $o.kvstore, overlap: $o.overlap, placement: $o.placement, hierarchical: $o.hierarchical, model: "resnet18", hosts: 2,
       workers: $o.workers, batch: $o.batch,
       rounds: (map(.round) | unique | length), cores: $o.cores, ours_ms: ($ours_ms | r1), ddp_ms: ($ddp_ms | r1),
       ratio: ($ddp_ms / $ours_ms * 1000 | round / 1000), ratio_is: "ddp_ms / ours_ms (>1: ours faster)",
       goal: ">=1.2", met: ($ddp_ms >= 1.2 * $ours_ms),
       note: (if $o.cores < $o.workers then "\($o.workers) workers on \($o.cores) cores: compute as much as the network" else "" end)}' "$1"
}
