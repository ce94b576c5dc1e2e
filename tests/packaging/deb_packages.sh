#!/bin/sh
# The Debian packages (cmake/DisttrainPackaging.cmake): cpack makes them from
# the build tree, their Depends are computed (dpkg-shlibdeps names real
# packages of this machine, libnng's among them), dpkg installs them into a
# fresh root of its own (--root: its own status database, no other package
# in it), and the C examples build against that root with pkg-config and
# run. cpack, dpkg-dev's tools and pkg-config come with scripts/install-deps.sh
# (cmake, build-essential, pkg-config): a missing one fails the test.
#
#   deb_packages.sh BUILD_DIR EXAMPLES_DIR CC SOVERSION
set -eu
build_dir="$1"
examples="$2"
cc="$3"
major="$4"
for tool in cpack dpkg dpkg-deb dpkg-shlibdeps pkg-config; do
  command -v "$tool" >/dev/null || { echo "FAIL: no $tool (scripts/install-deps.sh installs it)"; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/dt-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "== cpack -G DEB"
cpack -G DEB -B "$work/debs" --config "$build_dir/CPackConfig.cmake" >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log"; exit 1; }
# A CUDA build's runtime package is the variant libdisttrain<major>-cuda.
runtime=$(ls "$work"/debs/libdisttrain"$major"_*.deb "$work"/debs/libdisttrain"$major"-cuda_*.deb 2>/dev/null | head -1)
[ -n "$runtime" ] || { ls "$work/debs"; echo "FAIL: no runtime package"; exit 1; }
runtime_name=$(dpkg-deb -f "$runtime" Package)
dev=$(ls "$work"/debs/libdisttrain-dev_*.deb)
tools=$(ls "$work"/debs/disttrain-tools_*.deb)
version=$(dpkg-deb -f "$runtime" Version)
for deb in "$runtime" "$dev" "$tools"; do
  echo "$(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version): Depends: $(dpkg-deb -f "$deb" Depends)"
done

echo "== the Depends are computed and name packages that exist"
depends=$(dpkg-deb -f "$runtime" Depends)
for dep in libc6 libnng1 libdnnl2; do
  case ", $depends" in
    *", $dep "*|*", $dep,"*) ;;
    *) echo "FAIL: $runtime does not depend on $dep: $depends"; exit 1 ;;
  esac
done
for dep in $(echo "$depends" | tr ',' '\n' | sed 's/(.*)//; s/|.*//; s/ //g'); do
  dpkg-query -W "$dep" >/dev/null 2>&1 || { echo "FAIL: Depends names $dep, which dpkg does not know"; exit 1; }
done
tools_depends=$(dpkg-deb -f "$tools" Depends)
case "$tools_depends" in
  *"$runtime_name (= $version)"*) ;;
  *) echo "FAIL: disttrain-tools does not depend on $runtime_name (= $version): $tools_depends"; exit 1 ;;
esac
dpkg-deb --ctrl-tarfile "$runtime" | tar -xO ./shlibs | grep -q "^libdisttrain $major $runtime_name " ||
  { echo "FAIL: $runtime_name has no shlibs entry for libdisttrain.so.$major"; exit 1; }

echo "== dpkg --root: a fresh root with only these packages"
root="$work/root"
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/triggers"
: >"$root/var/lib/dpkg/status"
# The root has no shell or libc to chroot into, and the maintainer scripts
# only run ldconfig: they run outside it, against a stand-in ldconfig.
mkdir "$work/bin"
printf '#!/bin/sh\nexit 0\n' >"$work/bin/ldconfig"
chmod +x "$work/bin/ldconfig"
force=depends,script-chrootless
[ "$(id -u)" = 0 ] || force="$force,not-root"
PATH="$work/bin:$PATH:/usr/sbin:/sbin" \
  dpkg --root="$root" --log=/dev/null --force-"$force" -i "$runtime" "$dev" "$tools" >"$work/dpkg.log" 2>&1 ||
  { cat "$work/dpkg.log"; exit 1; }
for pkg in "$runtime_name" libdisttrain-dev disttrain-tools; do
  status=$(dpkg-query --root="$root" -W -f='${Status}' "$pkg")
  [ "$status" = "install ok installed" ] || { echo "FAIL: $pkg is '$status' in the root"; exit 1; }
done
pcfile=$(dpkg -L --root="$root" libdisttrain-dev | grep '/disttrain\.pc$')
libdir=$(dirname "$root$pcfile")/..
libdir=$(cd "$libdir" && pwd)
if ldd "$root/usr/bin/dt-node" | grep -q 'libdisttrain.*not found'; then
  echo "FAIL: the installed dt-node does not find libdisttrain.so.$major"; exit 1
fi
ldd "$root/usr/bin/dt-node" | grep -q "libdisttrain.so.$major => $root/" ||
  { echo "FAIL: the installed dt-node loads libdisttrain from outside the root"; ldd "$root/usr/bin/dt-node"; exit 1; }

echo "== the C examples against the root, with pkg-config"
flags=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs disttrain)
case "$flags" in
  *"-I$root/"*) ;;
  *) echo "FAIL: pkg-config's flags do not lead into the root: $flags"; exit 1 ;;
esac
"$cc" -std=c99 -Wall -Werror "$examples/c/hello_ndarray.c" $flags -Wl,-rpath,"$libdir" -o "$work/hello_ndarray"
# The training example shares its --gpus/--cpus/--precision parsing with the others.
"$cc" -std=c99 -Wall -Werror "$examples/c/train_fashion_mnist.c" "$examples/c/device_flags.c" $flags \
  -Wl,-rpath,"$libdir" -o "$work/train_fashion_mnist"
"$work/hello_ndarray" "$work/hello.safetensors" | tee "$work/hello.log"
grep -q 'read back 2 arrays' "$work/hello.log" || { echo "FAIL: hello_ndarray"; exit 1; }
# No epoch of training: the model is built, the test set evaluated.
"$work/train_fashion_mnist" --epochs 0 | tee "$work/train.log"
grep -q '^test_accuracy=' "$work/train.log" || { echo "FAIL: train_fashion_mnist"; exit 1; }
echo "OK: $(basename "$runtime"), $(basename "$dev") and $(basename "$tools") installed into a fresh root and used"
