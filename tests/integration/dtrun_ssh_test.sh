#!/usr/bin/env bash
# dtrun --launcher ssh across two emulated hosts: two network namespaces on a
# bridge, each running its own sshd (private host key, authorized_keys and
# config; the user's ~/.ssh is never read), reached through a private ssh
# client config given with --ssh-config. The namespaces share this machine's
# filesystem, so the worker binary and dt-node are at the same paths, as on
# hosts with a shared or identical install; each sshd gets a private tmpfs
# at the --sync-dst-dir destination, so copies to one "host" are invisible
# to the others, as on real hosts.
#
# Cases: a dist_sync job runs to the end (exit 0, each worker's sum right,
# and with --status-every dtrun's table at the end has a row per server,
# relayed by the scheduler from the remote servers' heartbeats);
# a remote worker killed with SIGKILL inside its namespace stops the whole
# job within 2x the heartbeat timeout, dtrun exiting 137 and naming it; and
# --sync-dst-dir copies the working directory to every host, where the
# processes then run; with a trainer, a dist_sync job and an allreduce job of
# two workers per host (hierarchical all-reduce) train. After every case nothing of the job may be left in
# either namespace (only the sshd listeners) nor in dtrun's process group.
#
# Needs root and `ip netns`: without them it reports skipped (exit 77, as
# the issue asks) with the reason; CI runs as root, where it runs. Every wait
# is bounded; the EXIT trap removes namespaces, links, sshd's and files.
#
# usage: dtrun_ssh_test.sh DTRUN WORKER DT_NODE [TRAINER]
#   WORKER: dtrun_job_test (re-executed with --pushpull-worker)
#   TRAINER: the train_fashion_mnist example, for the training case
set -u

DTRUN=$1
WORKER=$2
export DT_NODE_BINARY=$3
TRAINER=${4:-}

say() { echo "dtrun_ssh_test: $*"; }
die() {
  echo "dtrun_ssh_test: FAIL: $*" >&2
  exit 1
}

skip() {
  echo "dtrun_ssh_test: SKIPPED: $*" >&2
  exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root to create network namespaces (CI runs the suite as root)"
for tool in ip /usr/sbin/sshd ssh ssh-keygen rsync setsid unshare timeout; do
  command -v "$tool" >/dev/null || die "$tool is not installed"
done
[ -x "$DTRUN" ] && [ -x "$WORKER" ] && [ -x "$DT_NODE_BINARY" ] || die "binaries missing: $DTRUN $WORKER $DT_NODE_BINARY"

TAG="dts$(($$ % 100000))"
NS_A="${TAG}a"
NS_B="${TAG}b"
BRIDGE="${TAG}br"
T=$(mktemp -d "${TMPDIR:-/tmp}/dtrun_ssh_test.XXXXXX") || die "mktemp"
SSHD_PIDS=()
DTRUN_PID=""
MADE_RUN_SSHD=0
FAILURES=0

cleanup() {
  set +e
  if [ -n "$DTRUN_PID" ]; then
    kill -KILL "$DTRUN_PID" 2>/dev/null
    wait "$DTRUN_PID" 2>/dev/null
  fi
  for pid in "${SSHD_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for ns in "$NS_A" "$NS_B"; do
    if ip netns list | grep -qw "$ns"; then
      # Whatever still runs in the namespace is ours: the test made it.
      for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
      ip netns del "$ns"
    fi
  done
  for pid in "${SSHD_PIDS[@]}"; do wait "$pid" 2>/dev/null; done
  ip link del "$BRIDGE" 2>/dev/null
  [ "$MADE_RUN_SSHD" = 1 ] && rmdir /run/sshd 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- two hosts on a bridge: 10.231.N.1 here, .2 and .3 in the namespaces ----
N=""
for i in $(seq 0 60); do
  candidate=$(((($$ + i) % 200) + 20))
  if ! ip -4 addr show | grep -q "inet 10\.231\.$candidate\."; then
    N=$candidate
    break
  fi
done
[ -n "$N" ] || die "no free 10.231.x.0/24 subnet"
HOST_A="10.231.$N.2"
HOST_B="10.231.$N.3"

# Can this machine make namespaces at all (a container without
# CAP_SYS_ADMIN cannot)? Asked once, before anything else is created.
ip netns add "${TAG}probe" 2>/dev/null || skip "cannot create network namespaces here (ip netns add failed)"
ip netns del "${TAG}probe"
ip link add "$BRIDGE" type bridge || die "cannot create a bridge (ip link add type bridge)"
ip addr add "10.231.$N.1/24" dev "$BRIDGE" || die "cannot address the bridge"
ip link set "$BRIDGE" up || die "cannot bring the bridge up"
for x in a b; do
  ns="${TAG}$x"
  addr=$([ $x = a ] && echo "$HOST_A" || echo "$HOST_B")
  ip netns add "$ns" || die "cannot create network namespace $ns (ip netns add)"
  ip link add "${TAG}h$x" type veth peer name "${TAG}n$x" || die "cannot create a veth pair"
  ip link set "${TAG}n$x" netns "$ns" || die "cannot move a veth into $ns"
  ip link set "${TAG}h$x" master "$BRIDGE" up || die "cannot attach the veth to the bridge"
  ip -n "$ns" link set lo up || die "lo in $ns"
  ip -n "$ns" addr add "$addr/24" dev "${TAG}n$x" || die "cannot address ${TAG}n$x"
  ip -n "$ns" link set "${TAG}n$x" up || die "cannot bring ${TAG}n$x up"
done

# --- keys and configs --------------------------------------------------------
ssh-keygen -q -t ed25519 -N '' -C dtrun-test-host -f "$T/host_key" || die "ssh-keygen (host key)"
ssh-keygen -q -t ed25519 -N '' -C dtrun-test-client -f "$T/client_key" || die "ssh-keygen (client key)"
cp "$T/client_key.pub" "$T/authorized_keys"
chmod 600 "$T/authorized_keys"
{
  echo "$HOST_A $(cut -d' ' -f1,2 "$T/host_key.pub")"
  echo "$HOST_B $(cut -d' ' -f1,2 "$T/host_key.pub")"
} >"$T/known_hosts"
cat >"$T/ssh_config" <<EOF
Host *
  User root
  IdentityFile $T/client_key
  IdentitiesOnly yes
  IdentityAgent none
  UserKnownHostsFile $T/known_hosts
  GlobalKnownHostsFile /dev/null
  LogLevel ERROR
EOF
if [ ! -d /run/sshd ]; then
  mkdir -p /run/sshd && MADE_RUN_SSHD=1
fi
mkdir -p "$T/remote"
for x in a b; do
  ns="${TAG}$x"
  addr=$([ $x = a ] && echo "$HOST_A" || echo "$HOST_B")
  cat >"$T/sshd_$x.conf" <<EOF
ListenAddress $addr:22
HostKey $T/host_key
PidFile none
AuthorizedKeysFile $T/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PrintMotd no
LogLevel ERROR
EOF
  # A private tmpfs at $T/remote: this host's own disk for --sync-dst-dir.
  ip netns exec "$ns" unshare -m sh -c \
    "mount -t tmpfs dtrun-test '$T/remote' && exec /usr/sbin/sshd -D -e -f '$T/sshd_$x.conf'" \
    >>"$T/sshd_$x.log" 2>&1 &
  SSHD_PIDS+=($!)
done
SSH=(ssh -F "$T/ssh_config" -o BatchMode=yes -o StrictHostKeyChecking=yes -o ConnectTimeout=5)
for host in "$HOST_A" "$HOST_B"; do
  ready=0
  for _ in $(seq 1 100); do
    if "${SSH[@]}" "$host" true 2>/dev/null; then
      ready=1
      break
    fi
    sleep 0.1
  done
  [ $ready = 1 ] || die "sshd on $host did not accept the test key within 10 s: $(cat "$T"/sshd_*.log)"
done
# Namespace to namespace goes through the bridge (and any bridge firewall).
ip netns exec "$NS_A" timeout 10 "${SSH[@]}" "$HOST_B" true ||
  die "$NS_A cannot reach $HOST_B across the bridge (a firewall on bridged traffic?)"
printf '%s\n' "$HOST_A" "# the second host" "" "$HOST_B" >"$T/hosts"
say "hosts $HOST_A ($NS_A) and $HOST_B ($NS_B) up, sshd pids ${SSHD_PIDS[*]}"

# --- helpers -----------------------------------------------------------------
DTRUN_SSH=(--launcher ssh -H "$T/hosts" --ssh-config "$T/ssh_config" --ssh-option StrictHostKeyChecking=yes
  --env DT_HEARTBEAT_INTERVAL_S=0.5 --env DT_HEARTBEAT_TIMEOUT_S=5)
HEARTBEAT_TIMEOUT_S=5
# A worker whose command outlives the training: when the job fails, the
# pushpull loop ends and the shell sleeps on. The parameter server's own
# failure handling ends dt-node and the worker binary, but only dtrun's stop
# through the ssh session ends this shell and its sleep.
LINGERING_WORKER=(sh -c '"$0" --pushpull-worker; exec sleep 1000' "$WORKER")

fail_case() {
  echo "dtrun_ssh_test: FAIL [$CASE]: $*" >&2
  echo "----- dtrun output -----" >&2
  cat "$T/$CASE.out" >&2 2>/dev/null
  echo "------------------------" >&2
  FAILURES=$((FAILURES + 1))
}

# Starts dtrun in the background with its output in $T/$CASE.out.
start_dtrun() {
  (cd "$RUN_DIR" && exec timeout -k 5 300 "$DTRUN" "$@") >"$T/$CASE.out" 2>&1 &
  DTRUN_PID=$!
}

# Waits up to $1 s for dtrun; sets RC (999 when it is still running).
wait_dtrun() {
  local limit=$1 i
  RC=999
  for i in $(seq 1 $((limit * 10))); do
    if ! kill -0 "$DTRUN_PID" 2>/dev/null; then
      wait "$DTRUN_PID"
      RC=$?
      DTRUN_PID=""
      return
    fi
    sleep 0.1
  done
}

# Waits up to $1 s for dtrun to end, then checks its status is $2; false
# when it still runs. TOOK: seconds since $3 (the wait's start by default),
# which $4 names in the message.
dtrun_ends() {
  local limit=$1 expected=$2 since=${3:-$(now)} cause=${4:-}
  wait_dtrun "$limit"
  TOOK=$(elapsed "$since")
  if [ "$RC" = 999 ]; then
    fail_case "dtrun did not end within $limit s${cause:+ of $cause}"
    return 1
  fi
  [ "$RC" = "$expected" ] || fail_case "dtrun exited $RC, expected $expected"
  return 0
}

wait_for_output() {
  local text=$1 limit=$2 i
  for i in $(seq 1 $((limit * 10))); do
    grep -qF -- "$text" "$T/$CASE.out" && return 0
    sleep 0.1
  done
  return 1
}

# The holding jobs' cases act once worker 1 pushes on.
worker_1_holds() {
  wait_for_output "[worker 1] holding" 120 && return 0
  fail_case "worker 1 did not start its pushpull loop within 120 s"
  return 1
}

# Each argument, an extended regular expression, matches a line of dtrun's output.
expect_lines() {
  local expected
  for expected in "$@"; do
    grep -Eq -- "$expected" "$T/$CASE.out" || fail_case "no line matches \"$expected\""
  done
}

# Each argument stands in dtrun's output.
expect_output() {
  local expected
  for expected in "$@"; do
    grep -qF -- "$expected" "$T/$CASE.out" || fail_case "no \"$expected\" in the output"
  done
}

# Pids in namespace $1 other than its sshd listener.
leftovers() {
  local ns=$1 pid out=""
  for pid in $(ip netns pids "$ns"); do
    case " ${SSHD_PIDS[*]} " in *" $pid "*) continue ;; esac
    out="$out $pid($(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | cut -c1-80))"
  done
  echo "$out"
}

# Nothing of the job left: in both namespaces (sshd's session processes may
# take a moment after the connection closed) and in dtrun's process group.
show_output() {
  sed "s/^/  [$CASE] /" "$T/$CASE.out"
}

check_nothing_left() {
  local i left="" group
  for i in $(seq 1 50); do
    left="$(leftovers "$NS_A")$(leftovers "$NS_B")"
    [ -z "$left" ] && break
    sleep 0.1
  done
  [ -z "$left" ] || fail_case "processes left in the namespaces 5 s after dtrun exited:$left"
  group=$(sed -n 's/^dtrun: scheduler is pid \([0-9]*\)$/\1/p' "$T/$CASE.out" | head -1)
  if [ -z "$group" ]; then
    fail_case "dtrun did not report the scheduler's pid"
  elif kill -0 -- "-$group" 2>/dev/null; then
    fail_case "dtrun's process group $group still has processes"
  fi
}

now() { date +%s.%N; }
elapsed() { echo "$(now) $1" | awk '{printf "%.2f", $1 - $2}'; }

# A case runs dtrun from $2 and passes when it adds no failure.
begin_case() {
  CASE=$1
  RUN_DIR=$2
  CASE_STARTED=$(now)
  CASE_FAILURES_BEFORE=$FAILURES
}

end_case() {
  check_nothing_left
  show_output
  [ "$FAILURES" = "$CASE_FAILURES_BEFORE" ] && say "PASS $CASE ($(elapsed "$CASE_STARTED") s)"
}

# --- case 1: a dist_sync job across both hosts runs to the end -------------------
begin_case job "$T"
start_dtrun -n 2 -s 2 "${DTRUN_SSH[@]}" --status-every 1 -- "$WORKER" --pushpull-worker
if dtrun_ends 180 0; then
  expect_output "[worker 0] pushpull_sum=3" "[worker 1] pushpull_sum=3" "dtrun: server 0 runs on $HOST_A" \
    "dtrun: server 1 runs on $HOST_B" "dtrun: worker 0 runs on $HOST_A" "dtrun: worker 1 runs on $HOST_B" \
    "dtrun: the scheduler listens on 10.231.$N.1:" "dtrun: job finished: every process exited cleanly"
  # The pushpull worker is no trainer (no steps); its one key lives on one
  # of the servers, which served it.
  expect_lines "^dtrun summary per process" "^server [01] +[1-9][0-9]* +- " "^server 1 "
fi
end_case

# --- case 2: a remote worker killed inside its namespace stops the job -------------
begin_case kill "$T"
# A secret of the user's own: it must reach every process, yet stand in no
# command line, here or on the remote hosts (issue 18).
SECRET=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
DT_JOB_SECRET=$SECRET start_dtrun -n 2 -s 2 "${DTRUN_SSH[@]}" --env-worker DTRUN_TEST_HOLD=1 -- "$WORKER" --pushpull-worker
if worker_1_holds; then
  for cmdline in /proc/[0-9]*/cmdline; do
    if grep -qaF -- "$SECRET" "$cmdline" 2>/dev/null; then
      fail_case "the job's secret stands in the command line of pid $(basename "$(dirname "$cmdline")")"
    fi
  done
  victim=""
  for pid in $(ip netns pids "$NS_B"); do
    # The worker itself (argv[0]), not the wrapper shell that has it in its arguments.
    if [ "$(tr '\0' '\n' 2>/dev/null <"/proc/$pid/cmdline" | head -1)" = "$WORKER" ]; then
      victim=$pid
    fi
  done
  if [ -z "$victim" ]; then
    fail_case "no worker process in $NS_B"
  elif ! tr '\0' '\n' <"/proc/$victim/environ" | grep -qxF -- "DT_JOB_SECRET=$SECRET"; then
    fail_case "the remote worker (pid $victim) did not get the job's secret"
  else
    killed_at=$(now)
    ip netns exec "$NS_B" kill -KILL "$victim" || fail_case "kill -9 $victim in $NS_B failed"
    # 137: 128 + SIGKILL.
    if dtrun_ends 60 137 "$killed_at" "the kill"; then
      awk -v t="$TOOK" -v h="$HEARTBEAT_TIMEOUT_S" 'BEGIN { exit !(t < 2 * h) }' ||
        fail_case "dtrun took $TOOK s to stop, more than 2 x the heartbeat timeout ($HEARTBEAT_TIMEOUT_S s)"
      expect_output "dtrun: job failed: worker 1 on $HOST_B killed by signal 9"
      say "killed worker 1 (pid $victim in $NS_B): dtrun exited $RC after $TOOK s"
    fi
  fi
fi
end_case

# --- case 3: --sync-dst-dir copies the working directory to every host -----------
begin_case sync "$T/src"
TOKEN="payload-$$-$RANDOM"
mkdir -p "$RUN_DIR/sub"
echo "$TOKEN" >"$RUN_DIR/sub/payload.txt"
DST="$T/remote/job/dir"
start_dtrun -n 2 -s 1 "${DTRUN_SSH[@]}" --sync-dst-dir "$DST" -- \
  sh -c 'echo "cwd=$(pwd) payload=$(cat sub/payload.txt)"; exec "$0" --pushpull-worker' "$WORKER"
if dtrun_ends 180 0; then
  # dmlc-tracker's placement with one server: the workers go on from the second host.
  expect_output "[worker 0] cwd=$DST payload=$TOKEN" "[worker 1] cwd=$DST payload=$TOKEN" \
    "[worker 0] pushpull_sum=3" "[worker 1] pushpull_sum=3" "dtrun: server 0 runs on $HOST_A" \
    "dtrun: worker 0 runs on $HOST_B" "dtrun: worker 1 runs on $HOST_A"
  # The copies went to the hosts' own disks, not to this one.
  [ ! -e "$DST" ] || fail_case "$DST exists outside the namespaces"
  for ns in "$NS_A" "$NS_B"; do
    pid=${SSHD_PIDS[$([ "$ns" = "$NS_A" ] && echo 0 || echo 1)]}
    got=$(nsenter -t "$pid" -m cat "$DST/sub/payload.txt" 2>&1)
    [ "$got" = "$TOKEN" ] || fail_case "$DST/sub/payload.txt on $ns holds \"$got\""
  done
fi
end_case

# --- case 4: Ctrl-C (SIGINT to dtrun) stops the job on every host -----------------
begin_case sigint "$T"
start_dtrun -n 2 -s 2 "${DTRUN_SSH[@]}" --env-worker DTRUN_TEST_HOLD=1 -- "${LINGERING_WORKER[@]}"
if worker_1_holds; then
  sent_at=$(now)
  kill -INT "$(pgrep -P "$DTRUN_PID" -x dtrun)" || fail_case "cannot find dtrun under timeout (pid $DTRUN_PID)"
  if dtrun_ends 30 130 "$sent_at" SIGINT; then
    awk -v t="$TOOK" 'BEGIN { exit !(t < 10) }' || fail_case "dtrun took $TOOK s to stop after SIGINT"
    say "SIGINT: dtrun exited $RC after $TOOK s"
  fi
fi
end_case

# --- case 5: dtrun itself SIGKILLed: its ssh sessions die with it, and the
# remote sides see their stdin end -------------------------------------------------
begin_case dtrun-killed "$T"
start_dtrun -n 2 -s 2 "${DTRUN_SSH[@]}" --env-worker DTRUN_TEST_HOLD=1 -- "${LINGERING_WORKER[@]}"
if worker_1_holds; then
  # timeout(1) runs dtrun as its child: SIGKILL that one.
  dtrun_pid=$(pgrep -P "$DTRUN_PID" -x dtrun)
  if [ -z "$dtrun_pid" ]; then
    fail_case "cannot find dtrun under timeout (pid $DTRUN_PID)"
  else
    kill -KILL "$dtrun_pid"
    # What timeout(1) reports for a SIGKILLed dtrun: 128 + SIGKILL.
    dtrun_ends 30 137
  fi
fi
end_case

# --- case 6: an unreachable host fails the job at once, naming it ---------------------------
begin_case unreachable "$T"
printf '%s\n' "$HOST_A" "10.231.$N.250" >"$T/hosts_bad"
start_dtrun -n 2 -s 1 --launcher ssh -H "$T/hosts_bad" --ssh-config "$T/ssh_config" \
  --ssh-option ConnectTimeout=3 -- "$WORKER" --pushpull-worker
# 255: ssh's status. dmlc-tracker's placement: server 0 on the first host,
# then worker 0 on the second (the unreachable one), worker 1 on the first.
if dtrun_ends 60 255; then
  expect_output "dtrun: job failed: worker 0 on 10.231.$N.250: ssh exited with status 255"
fi
end_case

# --- case 7: a job across both hosts trains, every process holding the job's
# secret that dtrun made (issue 18); dtrun's live summary (--status-every)
# shows the remote workers' steps and the table their times -----------------------
if [ -n "$TRAINER" ]; then
  begin_case train "$T"
  start_dtrun -n 2 -s 1 "${DTRUN_SSH[@]}" --status-every 1 -- \
    "$TRAINER" --kvstore dist_sync --epochs 1 --batch-size 64 --threads 1
  if dtrun_ends 300 0; then
    expect_output "[worker 0] test_accuracy=" "dtrun: job finished: every process exited cleanly"
    # The live summary of processes on other hosts, through the scheduler.
    expect_lines "^dtrun status at .* s: worker 0 step [0-9]+ .*worker 1 step [0-9]+ .*; server 0 [0-9.]+ req/s" \
      "^dtrun summary per process" "^worker 0 +[1-9][0-9]* +[1-9][0-9]* " "^worker 1 +[1-9][0-9]* +[1-9][0-9]* " \
      "^server 0 +[1-9][0-9]* +- "
    accuracy=$(sed -n 's/^\[worker 0\] test_accuracy=\([0-9.]*\)$/\1/p' "$T/$CASE.out" | head -1)
    awk -v a="${accuracy:-0}" 'BEGIN { exit !(a >= 0.80) }' || fail_case "test_accuracy ${accuracy:-none} below 0.80"
    grep -qF "warning: no job secret" "$T/$CASE.out" && fail_case "a process ran without the job's secret"
  fi
  end_case
fi

# --- case 8: the allreduce store across both hosts, two workers on each
# (dtrun places worker r on host r % 2): the workers find the two hosts and
# take the hierarchical all-reduce (within each host, then between them), and
# the model learns --------------------------------------------------------------
if [ -n "$TRAINER" ]; then
  begin_case hierarchical "$T"
  start_dtrun -n 4 -s 0 "${DTRUN_SSH[@]}" -- \
    "$TRAINER" --kvstore allreduce --model mlp --epochs 1 --batch-size 128 --threads 1
  if dtrun_ends 300 0; then
    expect_output "dtrun: worker 2 runs on $HOST_A" "dtrun: worker 3 runs on $HOST_B" \
      "large all-reduces go hierarchical" "dtrun: job finished: every process exited cleanly"
    accuracy=$(sed -n 's/^\[worker 0\] test_accuracy=\([0-9.]*\)$/\1/p' "$T/$CASE.out" | head -1)
    awk -v a="${accuracy:-0}" 'BEGIN { exit !(a >= 0.75) }' || fail_case "test_accuracy ${accuracy:-none} below 0.75"
  fi
  end_case
fi

[ "$FAILURES" = 0 ] || die "$FAILURES check(s) failed"
say "all cases passed"
