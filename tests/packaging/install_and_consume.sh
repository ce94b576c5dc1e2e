#!/bin/sh
# Installs the build tree into a prefix other than the configured one
# (`cmake --install --prefix`, as packagers and staged installs do) and
# builds a small C program against it four ways: pkg-config and
# find_package(disttrain), each against the shared library and against
# libdisttrain.a. The .pc file and the package config must point at that
# prefix by themselves, name no path of the build machine, and still work
# once the install tree is moved.
set -eu
build_dir="$1"
consumer_src="$2"
cc="$3"
work=$(mktemp -d "${TMPDIR:-/tmp}/dt-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"

configured=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build_dir/CMakeCache.txt")
case "$configured" in
  "$work"*) echo "FAIL: the build tree was configured for the test's own prefix"; exit 1 ;;
esac
cmake --install "$build_dir" --prefix "$prefix" >/dev/null
pcfile=$(find "$prefix" -name disttrain.pc | head -1)
[ -n "$pcfile" ] || { echo "FAIL: install lacks disttrain.pc"; exit 1; }
libdir=$(cd "$(dirname "$pcfile")/.." && pwd)
for f in "$prefix/include/dt_c_api.h" \
         "$libdir/cmake/disttrain/disttrainConfig.cmake" "$libdir/cmake/disttrain/disttrainConfigVersion.cmake" \
         "$libdir/cmake/disttrain/disttrainStaticTargets.cmake" \
         "$libdir/libdisttrain.a" "$libdir/libdisttrain.so"; do
  [ -e "$f" ] || { echo "FAIL: install lacks $f"; exit 1; }
done
soname=$(objdump -p "$libdir/libdisttrain.so" | awk '/SONAME/ {print $2}')
case "$soname" in
  libdisttrain.so.[0-9]*) ;;
  *) echo "FAIL: SONAME is '$soname'"; exit 1 ;;
esac

echo "== the .pc file and the package config name no path of this machine"
build_abs=$(cd "$build_dir" && pwd)
# -L words are left out: a CUDA build names the toolkit's directory, which
# may lie under the configured prefix (/usr/local/cuda) without being part
# of this install.
for f in "$pcfile" "$libdir"/cmake/disttrain/*.cmake; do
  for p in "$build_abs" "$configured" "$prefix"; do
    if sed 's/-L[^ ]*//g' "$f" | grep -q "$p/"; then
      echo "FAIL: $f names $p:"; grep -n "$p/" "$f"; exit 1
    fi
  done
done
libs_private=$(sed -n 's/^Libs.private://p' "$pcfile")
for word in $libs_private; do
  case "$word" in
    -L*) ;;  # a CUDA build names the toolkit's directory
    */*) echo "FAIL: Libs.private names a path: $word"; exit 1 ;;
  esac
done
case " $libs_private " in
  *" -lnng "*) ;;
  *) echo "FAIL: Libs.private lacks -lnng: $libs_private"; exit 1 ;;
esac

# pkg-config without any --define-variable: the .pc file alone must lead to
# the header and the library of this prefix.
pc() { PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config "$@" disttrain; }
includedir=$(cd "$(pc --variable=includedir)" && pwd)
[ "$includedir" = "$prefix/include" ] || { echo "FAIL: includedir is $includedir, not $prefix/include"; exit 1; }

echo "== pkg-config consumer (shared)"
"$cc" -std=c99 -Wall -Werror "$consumer_src/consumer.c" $(pc --cflags --libs) -Wl,-rpath,"$libdir" \
  -o "$work/consumer_pc"
"$work/consumer_pc"

echo "== find_package consumer (shared)"
cmake -S "$consumer_src" -B "$work/cmake-shared" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake-shared" >/dev/null
"$work/cmake-shared/consumer"

echo "== find_package consumer (static: COMPONENTS static)"
cmake -S "$consumer_src" -B "$work/cmake-static" -DCMAKE_PREFIX_PATH="$prefix" -DCONSUMER_STATIC=ON >/dev/null
cmake --build "$work/cmake-static" >/dev/null
if readelf -d "$work/cmake-static/consumer" | grep -q 'NEEDED.*libdisttrain'; then
  echo "FAIL: the find_package static consumer needs the shared library"; exit 1
fi
"$work/cmake-static/consumer"

echo "== the install tree moved: pkg-config and find_package follow it"
moved="$work/moved"
mv "$prefix" "$moved"
libdir=$(echo "$libdir" | sed "s|^$prefix|$moved|")
"$cc" -std=c99 -Wall -Werror "$consumer_src/consumer.c" $(pc --cflags --libs) -Wl,-rpath,"$libdir" \
  -o "$work/consumer_moved"
"$work/consumer_moved"
cmake -S "$consumer_src" -B "$work/cmake-moved" -DCMAKE_PREFIX_PATH="$moved" >/dev/null
cmake --build "$work/cmake-moved" >/dev/null
"$work/cmake-moved/consumer"

echo "== pkg-config consumer (static: --static)"
# With the shared library gone, -ldisttrain can only mean libdisttrain.a, and
# the link succeeds only if Libs.private names everything the archive needs.
rm -f "$libdir"/libdisttrain.so*
"$cc" -std=c99 -Wall -Werror "$consumer_src/consumer.c" $(pc --static --cflags --libs) -o "$work/consumer_static"
if readelf -d "$work/consumer_static" | grep -q 'NEEDED.*libdisttrain'; then
  echo "FAIL: the static consumer still needs the shared library"; exit 1
fi
"$work/consumer_static"
echo "OK: six consumers of an install at a second prefix built and ran"
