#!/bin/sh
# The Maven artifacts as a JVM team gets them: a project outside the build
# tree (tests/packaging/maven_consumer) depends on org.disttrain:disttrain
# (and org.disttrain:disttrain-scala where it is built) and is built with
# `mvn -o package` against the local repository the build installed them
# into, with no network. Then:
#  1. it runs with no native library anywhere on java.library.path: the JNI
#     glue and libdisttrain must come out of the jar (a private temporary
#     directory, emptied again), and one training step gives a finite loss;
#  2. -Ddisttrain.library.path=<build tree> loads the build tree's libraries;
#  3. -Ddisttrain.library.path=<empty directory> fails, naming the property.
# Also checks that the POMs, sources and javadoc jars were installed.
# Fails, naming the packages, where the build found no Maven.
#
#   maven_consumer.sh MVN SETTINGS REPO CONSUMER_SRC VERSION JAVA NATIVE_DIR [scala]
set -eu
mvn="$1"
settings="$2"
repo="$3"
consumer_src="$4"
version="$5"
java="$6"
native_dir="$7"
with_scala="${8:-}"
if [ -z "$mvn" ] || [ ! -x "$mvn" ]; then
  echo "FAIL: the build found no Maven, so it installed no artifacts (scripts/install-deps.sh --tests installs"
  echo "      maven and its plugin packages; then configure again)"
  exit 1
fi
fail() { echo "FAIL: $*"; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/dt-maven-consumer.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/tmp" "$work/empty"

echo "== the installed artifacts"
artifacts=disttrain
[ "$with_scala" = scala ] && artifacts="$artifacts disttrain-scala"
for a in $artifacts; do
  for f in "$a-$version.pom" "$a-$version.jar" "$a-$version-sources.jar" "$a-$version-javadoc.jar"; do
    [ -s "$repo/org/disttrain/$a/$version/$f" ] || fail "$repo/org/disttrain/$a/$version/$f is missing"
  done
done
jar="$repo/org/disttrain/disttrain/$version/disttrain-$version.jar"
listing=$("$(dirname "$java")/jar" tf "$jar")
for f in org/disttrain/native/linux-x86_64/libraries org/disttrain/native/linux-x86_64/libdisttrain_java.so \
         org/disttrain/native/linux-x86_64/libdisttrain.so.0 org/disttrain/Disttrain.class; do
  echo "$listing" | grep -qx "$f" || fail "$jar lacks $f"
done

echo "== mvn -o package (a consumer outside the build tree)"
cp -R "$consumer_src" "$work/consumer"
cd "$work/consumer"
scala_flag=""
[ "$with_scala" = scala ] && scala_flag="-Dwith.scala"
# Resolving the dependencies is the point: -o, Debian's repository as the
# only remote (settings.xml), and the build's local repository.
"$mvn" -o -B -q -s "$settings" -Daether.offline.protocols=file "-Ddisttrain.version=$version" $scala_flag package
classpath="$work/consumer/target/consumer-1.0.jar:$jar"
unset LD_LIBRARY_PATH

echo "== 1. the libraries inside the jar"
# java.library.path names an empty directory, so that an installed glue
# cannot stand in for the jar's.
"$java" -Djava.io.tmpdir="$work/tmp" -Djava.library.path="$work/empty" -cp "$classpath" \
  consumer.TrainOneStep >"$work/jar.out" 2>&1 || { cat "$work/jar.out"; fail "training from the jar's libraries failed"; }
cat "$work/jar.out"
grep -q "^loaded $work/tmp/disttrain-[^/]*/libdisttrain_java.so\$" "$work/jar.out" ||
  fail "the glue was not the jar's copy under $work/tmp"
mapped=$(grep "^mapped " "$work/jar.out" | sed 's/^mapped //')
[ -n "$mapped" ] || fail "no libdisttrain file is mapped"
echo "$mapped" | grep -q "/libdisttrain.so.0" || fail "libdisttrain.so.0 is not mapped"
echo "$mapped" | while read -r path; do
  case "$path" in
    "$work"/tmp/disttrain-*) ;;
    *) fail "mapped from outside the jar's temporary copy: $path" ;;
  esac
done
grep -q "^loss " "$work/jar.out" || fail "no loss printed"
[ -z "$(ls -A "$work/tmp")" ] || fail "the temporary copies were left behind: $(ls -A "$work/tmp")"

echo "== 2. -Ddisttrain.library.path=$native_dir"
"$java" -Djava.io.tmpdir="$work/tmp" -Ddisttrain.library.path="$native_dir" -cp "$classpath" \
  consumer.TrainOneStep >"$work/override.out" 2>&1 || { cat "$work/override.out"; fail "training with the override failed"; }
cat "$work/override.out"
grep -qx "loaded $native_dir/libdisttrain_java.so" "$work/override.out" ||
  fail "the override's glue ($native_dir/libdisttrain_java.so) was not the one loaded"
if grep "^mapped " "$work/override.out" | grep -v " $native_dir/" >/dev/null; then
  fail "a libdisttrain file outside $native_dir is mapped"
fi

echo "== 3. -Ddisttrain.library.path=<empty directory>"
if "$java" -Ddisttrain.library.path="$work/empty" -cp "$classpath" consumer.TrainOneStep >"$work/bad.out" 2>&1; then
  cat "$work/bad.out"
  fail "an override without the libraries did not fail"
fi
grep -q "disttrain.library.path=$work/empty has no libdisttrain_java.so" "$work/bad.out" ||
  { cat "$work/bad.out"; fail "the failure does not name the override"; }
echo "PASS"
