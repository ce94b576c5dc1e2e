#!/bin/sh
# Runs the binding overhead benchmark: the C baseline, then each binding that
# was built, and prints each binding's ns per call relative to C, also as JSON
# lines ({"bench":"bindings_overhead","lang":...,"ratio_vs_c":...}).
#
#   bench/bindings_overhead/run.sh BUILD_DIR [--elements N] [--iterations N] [--repeats N]
#
# BUILD_DIR is a build tree configured with -DDT_BUILD_BINDINGS=ON after
# `cmake --build BUILD_DIR --target bindings_overhead bindings_overhead_java`.
set -eu
build=$(cd "${1:?usage: run.sh BUILD_DIR [benchmark options]}" && pwd)
shift
c_bin="$build/bench/bindings_overhead/bindings_overhead"
java_jar="$build/bench/bindings_overhead/bindings-overhead.jar"
binding_jar="$build/bindings/java/disttrain.jar"

[ -x "$c_bin" ] || { echo "run.sh: $c_bin is missing: build the bindings_overhead target" >&2; exit 1; }
# One thread for kernels; the benchmark times call overhead, not reductions.
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive

ns_of() { sed -n 's/.*"ns_per_call":\([0-9.]*\).*/\1/p' | tail -n 1; }

c_out=$("$c_bin" "$@")
echo "$c_out"
c_ns=$(printf '%s\n' "$c_out" | ns_of)

ratio() {
  lang="$1" ns="$2"
  awk -v lang="$lang" -v ns="$ns" -v c="$c_ns" 'BEGIN {
    printf "%s/c: %.2fx (%.1f ns vs %.1f ns per call)\n", lang, ns / c, ns, c
    printf "{\"bench\":\"bindings_overhead\",\"lang\":\"%s\",\"op\":\"kvstore_pushpull\",\"ns_per_call\":%.1f,\"c_ns_per_call\":%.1f,\"ratio_vs_c\":%.3f}\n", lang, ns, c, ns / c
  }'
}

if [ -f "$java_jar" ] && [ -f "$binding_jar" ]; then
  java_out=$(java -Djava.library.path="$build" -cp "$binding_jar:$java_jar" BindingsOverhead "$@")
  echo "$java_out"
  ratio java "$(printf '%s\n' "$java_out" | ns_of)"
else
  echo "run.sh: the Java benchmark was not built ($java_jar): skipping Java" >&2
fi

go_bin="$build/bench/bindings_overhead/bindings_overhead_go"
if [ -x "$go_bin" ]; then
  # The Go program times the same call and prints its ratio against the C
  # figure measured above (-c-ns), so both languages share one baseline.
  "$go_bin" -c-ns "$c_ns" "$@"
else
  echo "run.sh: the Go benchmark was not built ($go_bin): skipping Go" >&2
fi
