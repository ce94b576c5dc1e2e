#!/bin/sh
# The Go module as a Go user gets it: installed into a fresh prefix, required
# by a module outside the build tree (tests/packaging/go_consumer) through a
# replace directive, cgo flags from the installed disttrain.pc, no network
# (GOPROXY=off) and a Go cache of its own. go vet passes on the consumer and
# the module's packages, the consumer's test passes, and the program runs.
#
#   go_consumer.sh BUILD_DIR CONSUMER_SRC GO
set -eu
build_dir="$1"
consumer_src="$2"
go="$3"
work=$(mktemp -d "${TMPDIR:-/tmp}/dt-go-consumer.XXXXXX")
# The Go cache holds read-only files.
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
prefix="$work/prefix"
module=github.com/disttrain/disttrain/bindings/go

cmake --install "$build_dir" --prefix "$prefix" >/dev/null
pcfile=$(find "$prefix" -name disttrain.pc | head -1)
[ -n "$pcfile" ] || { echo "FAIL: install lacks disttrain.pc"; exit 1; }
libdir=$(cd "$(dirname "$pcfile")/.." && pwd)
installed="$prefix/share/disttrain/go/disttrain"
grep -q "^module $module\$" "$installed/go.mod" ||
  { echo "FAIL: $installed/go.mod is not module $module"; exit 1; }

cp -R "$consumer_src" "$work/consumer"
cd "$work/consumer"
export GOCACHE="$work/gocache" GOPATH="$work/gopath" GOFLAGS="-mod=mod -buildvcs=false" GOPROXY=off \
       GOTOOLCHAIN=local GOENV=off CGO_ENABLED=1 PKG_CONFIG_PATH="$libdir/pkgconfig"
unset GOROOT_FINAL LD_LIBRARY_PATH
"$go" mod edit -replace "$module=$installed"

echo "== go vet: the consumer and the installed module's packages"
# As the build vets them: not internal/capi, which is SWIG's output (its
# runtime's uintptr-to-pointer string copy is what vet flags there).
"$go" vet ./... "$module" "$module/examples/..." "$module/bench/..."
echo "== go build"
"$go" build -o "$work/dtconsumer" .
echo "== go test and the program (the loader finds libdisttrain through LD_LIBRARY_PATH)"
LD_LIBRARY_PATH="$libdir" "$go" test -count=1 .
LD_LIBRARY_PATH="$libdir" "$work/dtconsumer"
