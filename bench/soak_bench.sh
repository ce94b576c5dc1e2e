#!/usr/bin/env bash
# The soak of issue 19: a dist_sync job on loopback (dtrun, local launcher)
# that pushpulls every one of K keys round after round for M minutes and
# checks every pulled sum (bench/soak_worker.cc), while this script samples
# each process of the job to show whether memory, file descriptors and
# threads stay flat. Not for CI: the default run takes half an hour.
#
#   bench/soak_bench.sh [--build-dir DIR] [--workers 16] [--servers 2]
#       [--keys 10000] [--minutes 30] [--interval-s 30] [--warmup-samples 1]
#
# stdout, JSON lines:
#  - worker 0's progress every interval, and its summary at the end:
#      {"bench":"soak","round":..,"elapsed_s":..,"rounds_per_s":..}
#      {"bench":"soak_summary",...,"rounds_per_s":..,"correct":true}
#  - one sample per process (dtrun itself, the scheduler, each server and
#    worker) every interval:
#      {"t_s":..,"role":"worker","rank":3,"pid":..,"rss_kib":..,"fds":..,"threads":..}
#    The processes are dtrun's descendants; role and rank are the ones dtrun
#    announces ("dtrun: server 1 is pid N"), else DMLC_ROLE and
#    DMLC_WORKER_ID from /proc/PID/environ.
#  - at the end one line per role, {"summary":"soak_resources","role":..}:
#    totals of RSS, fds and threads at the baseline and at the end, the
#    largest RSS growth of one process over the baseline in any sample
#    (rss_max_growth_kib), and the verdict (flat).
#
# The baseline is the sample after --warmup-samples rounds of sampling: the
# first one usually falls in the job's start-up (connections opening, keys
# being initialised, allocator arenas growing). Only sampling rounds that
# found every process and came before worker 0's summary count, so the
# shutdown (connections closing) does not pass for a change.
# A process is flat when its fd count at the end equals the baseline's and
# its peak RSS did not grow: the highest RSS of the last third of its
# samples exceeds the highest of the first third (from the baseline on) by
# at most max(4 MiB, 5 %) (rss_peak_growth_kib/_pct: the largest of one
# process). Peaks, not the last sample, because a worker's and a server's
# RSS swings by 10-20 % from sample to sample as per-round message buffers (15 MB
# per worker at 10,000 keys) are allocated and freed, while a leak raises
# the peak for good. 4 MiB because glibc's malloc keeps freed memory in
# per-thread arenas and trims when it sees fit, which on the small
# processes (dtrun, the scheduler, ~10 MiB) is far more than 5 %; a leak of
# even a few bytes per key and round grows without end over a 30-minute
# soak and crosses both. Thread counts are reported beside (threads_equal)
# but not part of the verdict. A short run has few samples per third, so
# its verdict says less than the 30-minute one's.
#
# Every process inherits this script's environment, so the job's deadlines
# come from the usual variables (ps/job/environment_options.h), e.g.
# DT_HEARTBEAT_TIMEOUT_S=30 where the job's 2 + servers + workers processes
# share a few cores with other work and a node can starve past the default
# 5 s heartbeat timeout.
#
# Exit status: 0 when the job ended cleanly and worker 0 reported every sum
# correct (flat or not: the summary lines say); 1 otherwise; 2 for usage.
# Everything is bounded: dtrun stops the job after minutes*60+120 s, and the
# EXIT trap stops dtrun (which stops its job) if the script ends first.
set -u

BUILD=build
WORKERS=16
SERVERS=2
KEYS=10000
MINUTES=30
INTERVAL=30
WARMUP=1
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) BUILD=$2 ;;
    --workers) WORKERS=$2 ;;
    --servers) SERVERS=$2 ;;
    --keys) KEYS=$2 ;;
    --minutes) MINUTES=$2 ;;
    --interval-s) INTERVAL=$2 ;;
    --warmup-samples) WARMUP=$2 ;;
    *) echo "soak_bench: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2 || { echo "soak_bench: $1 needs a value" >&2; exit 2; }
done
for v in "$WORKERS" "$SERVERS" "$KEYS" "$INTERVAL" "$WARMUP"; do
  [[ $v =~ ^[0-9]+$ ]] || { echo "soak_bench: --workers, --servers, --keys, --interval-s and --warmup-samples take whole numbers" >&2; exit 2; }
done
[[ $MINUTES =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "soak_bench: --minutes needs a number" >&2; exit 2; }
[ "$WORKERS" -ge 1 ] && [ "$SERVERS" -ge 1 ] && [ "$KEYS" -ge 1 ] && [ "$INTERVAL" -ge 1 ] || {
  echo "soak_bench: workers, servers, keys and interval must be at least 1" >&2
  exit 2
}

DTRUN="$BUILD/dtrun"
WORKER="$BUILD/bench/soak_worker"
[ -x "$DTRUN" ] && [ -x "$BUILD/dt-node" ] && [ -x "$WORKER" ] || {
  echo "soak_bench: build dtrun, dt-node and soak_worker first ($DTRUN, $BUILD/dt-node, $WORKER)" >&2
  exit 2
}

SECONDS_RUN=$(awk -v m="$MINUTES" 'BEGIN { printf "%d", m * 60 }')
[ "$SECONDS_RUN" -ge 1 ] || { echo "soak_bench: --minutes is under a second" >&2; exit 2; }
T=$(mktemp -d "${TMPDIR:-/tmp}/soak_bench.XXXXXX")
JOB=""
: >"$T/samples.tsv"
: >"$T/worker0.jsonl"

# dtrun stops its job on SIGTERM and waits for it; should dtrun still run
# 10 s later, it and each process it had started are killed by pid.
cleanup() {
  set +e
  if [ -n "$JOB" ] && kill -0 "$JOB" 2>/dev/null; then
    local left
    left=$(descendants "$JOB")
    kill -TERM "$JOB"
    for _ in $(seq 20); do kill -0 "$JOB" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$JOB" 2>/dev/null; then
      for p in $JOB $left; do kill -KILL "$p" 2>/dev/null; done
    fi
  fi
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

START=$EPOCHREALTIME
"$DTRUN" -n "$WORKERS" -s "$SERVERS" --timeout $((SECONDS_RUN + 120)) -- \
  "$WORKER" --keys "$KEYS" --seconds "$SECONDS_RUN" --interval-s "$INTERVAL" >"$T/job.out" 2>"$T/job.err" &
JOB=$!

elapsed() { awk -v s="$START" -v n="$EPOCHREALTIME" 'BEGIN { printf "%.1f", n - s }'; }

# Worker 0's JSON lines that arrived since the last call, without dtrun's
# "[worker 0] " prefix; only whole lines, so a line being written waits.
OUT_OFFSET=0
emit_worker_lines() {
  local size whole
  size=$(stat -c %s "$T/job.out")
  [ "$size" -gt "$OUT_OFFSET" ] || return 0
  tail -c +$((OUT_OFFSET + 1)) "$T/job.out" | head -c $((size - OUT_OFFSET)) >"$T/chunk"
  whole=$(wc -l <"$T/chunk")
  head -n "$whole" "$T/chunk" | sed -n 's/^\[worker 0\] \({.*\)$/\1/p' | tee -a "$T/worker0.jsonl"
  OUT_OFFSET=$((OUT_OFFSET + $(head -n "$whole" "$T/chunk" | wc -c)))
}

# Every descendant of pid, from the parent links in /proc/*/stat.
descendants() {
  local -A children=()
  local stat p rest ppid
  for stat in /proc/[0-9]*/stat; do
    { read -r rest <"$stat"; } 2>/dev/null || continue
    p=${stat#/proc/}
    p=${p%/stat}
    rest=${rest##*) }
    ppid=${rest#* }
    ppid=${ppid%% *}
    children[$ppid]+=" $p"
  done
  local queue=("$1") out=()
  while [ ${#queue[@]} -gt 0 ]; do
    p=${queue[0]}
    queue=("${queue[@]:1}")
    for c in ${children[$p]:-}; do
      out+=("$c")
      queue+=("$c")
    done
  done
  echo "${out[@]:-}"
}

# "role rank" of a pid of the job.
label() {
  local p=$1 line role rank
  line=$(sed -n "s/^dtrun: \(scheduler\|server [0-9]*\|worker [0-9]*\) is pid $p\$/\1/p" "$T/job.err" | tail -n 1)
  if [ -n "$line" ]; then
    role=${line%% *}
    rank=${line#* }
    [ "$role" = scheduler ] && rank=0
  else
    role=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | sed -n 's/^DMLC_ROLE=//p')
    rank=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | sed -n 's/^DMLC_WORKER_ID=//p')
    [ -n "$role" ] || role="other:$(cat "/proc/$p/comm" 2>/dev/null)"
    [ -n "$rank" ] || rank=-1
  fi
  echo "$role $rank"
}

# One sampling round: a JSON line per process on stdout, a row per process
# in samples.tsv (round, complete, t, role, rank, pid, rss, fds, threads).
EXPECTED=$((2 + SERVERS + WORKERS))
ROUND=0
sample() {
  local t pids p rows=() role rank rss threads fds complete
  t=$(elapsed)
  pids="$JOB $(descendants "$JOB")"
  for p in $pids; do
    if [ "$p" = "$JOB" ]; then
      role=dtrun
      rank=0
    else
      read -r role rank < <(label "$p")
    fi
    rss=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$p/status" 2>/dev/null)
    threads=$(sed -n 's/^Threads:[[:space:]]*//p' "/proc/$p/status" 2>/dev/null)
    fds=$(ls "/proc/$p/fd" 2>/dev/null | wc -l)
    [ -n "$rss" ] && [ -n "$threads" ] || continue
    rows+=("$t	$role	$rank	$p	$rss	$fds	$threads")
    printf '{"t_s":%s,"role":"%s","rank":%s,"pid":%s,"rss_kib":%s,"fds":%s,"threads":%s}\n' \
      "$t" "$role" "$rank" "$p" "$rss" "$fds" "$threads"
  done
  ROUND=$((ROUND + 1))
  # A round counts once every process was there and worker 0 had not yet
  # finished (its summary line marks the start of the shutdown).
  complete=0
  [ "${#rows[@]}" -eq "$EXPECTED" ] && ! grep -q '"soak_summary"' "$T/worker0.jsonl" 2>/dev/null && complete=1
  for r in "${rows[@]}"; do printf '%s\t%s\t%s\n' "$ROUND" "$complete" "$r" >>"$T/samples.tsv"; done
}

next=$INTERVAL
while kill -0 "$JOB" 2>/dev/null; do
  sleep 1
  emit_worker_lines
  if awk -v n="$(elapsed)" -v d="$next" 'BEGIN { exit !(n >= d) }'; then
    sample
    next=$((next + INTERVAL))
  fi
done
wait "$JOB"
job_status=$?
JOB=""
emit_worker_lines

# Per process: baseline = its row in the (WARMUP+1)-th complete round (the
# last complete round when there are fewer), end = its row in the last
# complete round; early and late = the first and the last third of the
# complete rounds from the baseline on. Per role: totals, the largest
# growths, the verdict.
awk -F'\t' -v warmup="$WARMUP" '
  $2 == 1 { if (!($1 in seen)) { seen[$1] = 1; order[++rounds] = $1 } rows[$1] = rows[$1] "\n" $0 }
  END {
    if (rounds == 0) { print "{\"summary\":\"soak_resources\",\"error\":\"no complete sampling round\"}"; exit }
    first = warmup + 1 <= rounds ? warmup + 1 : rounds
    window = int((rounds - first + 1) / 3)
    if (window < 1) window = 1
    for (i = first; i <= rounds; ++i) {
      n = split(rows[order[i]], lines, "\n")
      for (j = 2; j <= n; ++j) {
        split(lines[j], f, "\t")
        key = f[4] SUBSEP f[5] SUBSEP f[6]
        if (i == first) { rss0[key] = f[7]; fds0[key] = f[8]; thr0[key] = f[9]; t0 = f[3]; roles[f[4]] = 1 }
        if (!(key in rss0)) continue
        if (!(key in grow) || f[7] - rss0[key] > grow[key]) grow[key] = f[7] - rss0[key]
        if (i < first + window && f[7] > early[key]) early[key] = f[7]
        if (i > rounds - window && f[7] > late[key]) late[key] = f[7]
        if (i == rounds) { rss1[key] = f[7]; fds1[key] = f[8]; thr1[key] = f[9]; t1 = f[3] }
      }
    }
    for (key in rss0) {
      split(key, k, SUBSEP)
      r = k[1]
      procs[r]++
      if (!(key in rss1)) { missing[r]++; continue }
      s_rss0[r] += rss0[key]; s_rss1[r] += rss1[key]
      s_fds0[r] += fds0[key]; s_fds1[r] += fds1[key]
      s_thr0[r] += thr0[key]; s_thr1[r] += thr1[key]
      peak = late[key] - early[key]
      bound = early[key] * 0.05 > 4096 ? early[key] * 0.05 : 4096
      if (!(r in max_any) || grow[key] > max_any[r]) max_any[r] = grow[key]
      if (!(r in max_peak) || peak > max_peak[r]) max_peak[r] = peak
      if (!(r in max_pct) || peak / early[key] > max_pct[r]) max_pct[r] = peak / early[key]
      if (fds1[key] != fds0[key] || peak > bound) notflat[r]++
      if (thr1[key] != thr0[key]) thrdiff[r]++
    }
    for (r in roles) {
      printf "{\"summary\":\"soak_resources\",\"role\":\"%s\",\"processes\":%d,\"samples\":%d,\"baseline_t_s\":%s," \
             "\"end_t_s\":%s,\"rss_kib_start\":%d,\"rss_kib_end\":%d,\"rss_max_growth_kib\":%d," \
             "\"rss_peak_growth_kib\":%d,\"rss_peak_growth_pct\":%.1f,\"fds_start\":%d,\"fds_end\":%d," \
             "\"threads_start\":%d,\"threads_end\":%d,\"threads_equal\":%s," \
             "\"flat_rule\":\"fds equal, peak growth <= max(4 MiB, 5%%) per process\",\"flat\":%s}\n",
             r, procs[r], rounds - first + 1, t0, t1, s_rss0[r], s_rss1[r], max_any[r], max_peak[r], max_pct[r] * 100,
             s_fds0[r], s_fds1[r], s_thr0[r], s_thr1[r], thrdiff[r] ? "false" : "true",
             (notflat[r] || missing[r]) ? "false" : "true"
    }
  }' "$T/samples.tsv" 2>/dev/null | sort

status=0
if [ "$job_status" != 0 ]; then
  echo "soak_bench: the job failed (dtrun exit $job_status):" >&2
  grep -v '^dtrun: .* is pid ' "$T/job.err" | tail -n 20 >&2
  status=1
fi
if [ "$job_status" = 0 ] && ! grep -q '"soak_summary".*"correct":true' "$T/worker0.jsonl"; then
  echo "soak_bench: worker 0 did not report every sum correct" >&2
  status=1
fi
exit "$status"
