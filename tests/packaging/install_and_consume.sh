#!/bin/sh
# Installs the build tree into a fresh prefix and builds a small C program
# against it three times: with pkg-config and with find_package(disttrain)
# against the shared library, then with pkg-config --static against
# libdisttrain.a.
set -eu
build_dir="$1"
consumer_src="$2"
cc="$3"
work=$(mktemp -d "${TMPDIR:-/tmp}/dt-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"

cmake --install "$build_dir" --prefix "$prefix" >/dev/null
libdir="$prefix/lib"
[ -d "$libdir/pkgconfig" ] || libdir=$(dirname "$(find "$prefix" -name disttrain.pc | head -1)")/..
libdir=$(cd "$libdir" && pwd)
for f in "$prefix/include/dt_c_api.h" "$libdir/pkgconfig/disttrain.pc" \
         "$libdir/cmake/disttrain/disttrainConfig.cmake" "$libdir/cmake/disttrain/disttrainConfigVersion.cmake" \
         "$libdir/libdisttrain.a" "$libdir/libdisttrain.so"; do
  [ -e "$f" ] || { echo "FAIL: install lacks $f"; exit 1; }
done
soname=$(objdump -p "$libdir/libdisttrain.so" | awk '/SONAME/ {print $2}')
case "$soname" in
  libdisttrain.so.[0-9]*) ;;
  *) echo "FAIL: SONAME is '$soname'"; exit 1 ;;
esac

echo "== pkg-config consumer"
# The .pc file names the install prefix given at configure time; point
# pkg-config at the relocated tree.
flags=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --define-variable=prefix="$prefix" --cflags --libs disttrain)
"$cc" -std=c99 -Wall -Werror "$consumer_src/consumer.c" $flags -Wl,-rpath,"$libdir" -o "$work/consumer_pc"
"$work/consumer_pc"

echo "== find_package consumer"
cmake -S "$consumer_src" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
"$work/cmake-build/consumer"

echo "== static pkg-config consumer"
# With the shared library gone, -ldisttrain can only mean libdisttrain.a, and
# the link succeeds only if Libs.private names everything the archive needs.
rm -f "$libdir"/libdisttrain.so*
flags=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --define-variable=prefix="$prefix" --static --cflags --libs disttrain)
"$cc" -std=c99 -Wall -Werror "$consumer_src/consumer.c" $flags -o "$work/consumer_static"
if readelf -d "$work/consumer_static" | grep -q 'NEEDED.*libdisttrain'; then
  echo "FAIL: the static consumer still needs the shared library"; exit 1
fi
"$work/consumer_static"
echo "OK: all three consumers built and ran"
