# Network namespaces as "hosts" for the benches that need bytes to cross a
# real TCP stack between machines (bench/slow_link_bench.sh,
# bench/two_hosts.sh). Sourced, not run; needs root (ip netns, tc).
#
#   netns_create TAG COUNT   COUNT namespaces TAG0 .. TAG<COUNT-1>, each with
#                            a veth pair whose outer end is a port of the
#                            bridge TAGbr, addressed 10.232.N.2 .. in a /24
#                            no interface of this machine uses yet. Fills
#                            NETNS_NAMES, NETNS_ADDRS, NETNS_DEVS (the
#                            namespace's end), NETNS_PORTS (the bridge's end).
#   netns_shape RATE [DELAY] every port shaped to RATE (tc token bucket) in
#                            both directions; DELAY (e.g. 0.2ms, netem) on
#                            what each namespace sends, so one way between
#                            two namespaces takes DELAY more.
#   netns_unshape            back to no shaping.
#   netns_begin NAME         a scratch folder for the caller (NETNS_TMP,
#                            named after NAME) and the traps that, on any
#                            exit, run netns_cleanup and remove the folder.
#   netns_cleanup            kills whatever runs in the namespaces, removes
#                            them and the bridge; safe to call twice.

NETNS_NAMES=()
NETNS_ADDRS=()
NETNS_DEVS=()
NETNS_PORTS=()
NETNS_BRIDGE=""
NETNS_TMP=""

netns_begin() {
  NETNS_TMP=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX") || return 1
  trap 'set +e; netns_cleanup; rm -rf "$NETNS_TMP"' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

netns_cleanup() {
  local ns pid port
  for ns in "${NETNS_NAMES[@]}"; do
    if ip netns list | grep -qw "$ns"; then
      for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
      ip netns del "$ns" 2>/dev/null
    fi
  done
  # A namespace outlives `ip netns del` while the kernel still tears down its
  # sockets, and its veth pair with it: remove the pairs from this side.
  for port in "${NETNS_PORTS[@]}"; do ip link del "$port" 2>/dev/null; done
  [ -n "$NETNS_BRIDGE" ] && ip link del "$NETNS_BRIDGE" 2>/dev/null
  NETNS_NAMES=()
  NETNS_PORTS=()
  NETNS_BRIDGE=""
  return 0
}

netns_create() {
  local tag=$1 count=$2 subnet="" i candidate idx ns addr
  for i in $(seq 0 60); do
    candidate=$(((($$ + i) % 200) + 20))
    if ! ip -4 addr show | grep -q "inet 10\.232\.$candidate\."; then
      subnet=$candidate
      break
    fi
  done
  [ -n "$subnet" ] || { echo "netns: no free 10.232.x.0/24 subnet" >&2; return 1; }
  NETNS_BRIDGE="${tag}br"
  ip link add "$NETNS_BRIDGE" type bridge && ip link set "$NETNS_BRIDGE" up || return 1
  for ((idx = 0; idx < count; idx++)); do
    ns="${tag}$idx"
    addr="10.232.$subnet.$((idx + 2))"
    ip netns add "$ns" || return 1
    NETNS_NAMES+=("$ns")
    NETNS_ADDRS+=("$addr")
    NETNS_DEVS+=("${tag}n$idx")
    NETNS_PORTS+=("${tag}h$idx")
    ip link add "${tag}h$idx" type veth peer name "${tag}n$idx" || return 1
    ip link set "${tag}n$idx" netns "$ns" || return 1
    ip link set "${tag}h$idx" master "$NETNS_BRIDGE" up || return 1
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$addr/24" dev "${tag}n$idx" || return 1
    ip -n "$ns" link set "${tag}n$idx" up || return 1
  done
}

# The bucket holds 1 MB: a 1 Gbit/s token bucket needs more than rate/HZ,
# and veth hands tbf 64 KB GSO packets.
netns_shape() {
  local rate=$1 delay=${2:-} idx ns dev
  for idx in "${!NETNS_NAMES[@]}"; do
    ns=${NETNS_NAMES[$idx]}
    dev=${NETNS_DEVS[$idx]}
    if [ -n "$delay" ]; then
      ip netns exec "$ns" tc qdisc replace dev "$dev" root handle 1: netem delay "$delay" limit 100000 || return 1
      ip netns exec "$ns" tc qdisc replace dev "$dev" parent 1: handle 2: tbf rate "$rate" burst 1mb latency 200ms ||
        return 1
    else
      ip netns exec "$ns" tc qdisc replace dev "$dev" root tbf rate "$rate" burst 1mb latency 200ms || return 1
    fi
    tc qdisc replace dev "${NETNS_PORTS[$idx]}" root tbf rate "$rate" burst 1mb latency 200ms || return 1
  done
}

netns_unshape() {
  local idx
  for idx in "${!NETNS_NAMES[@]}"; do
    ip netns exec "${NETNS_NAMES[$idx]}" tc qdisc del dev "${NETNS_DEVS[$idx]}" root 2>/dev/null
    tc qdisc del dev "${NETNS_PORTS[$idx]}" root 2>/dev/null
  done
  return 0
}
