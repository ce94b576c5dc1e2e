#!/usr/bin/python3
"""Fails when a configured build uses a file that scripts/install-deps.sh
would not put on a fresh Debian machine.

A machine that was once set up by hand hides a missing install step: CMake
finds the hand-installed file and CI stays green. So this check never asks
what is installed; it asks who owns each file the build used (dpkg -S) and
whether that package would be there on a bare Debian after install-deps.sh:
named in its list, in the hard dependency closure of that list (Depends and
Pre-Depends, never Recommends: apt-get's own answer for a machine with an
empty package database), or Essential/required (on every Debian system).

The files a build used:
  - every path in CMakeCache.txt that a find_* call or a compiler check left
    (FILEPATH and PATH entries, and the *_LIBRARY, *_INCLUDE_DIR, *_DIR,
    *_EXECUTABLE, *_COMPILER entries of any type);
  - every CMake file it loaded from outside the tree (the CMake file API's
    cmakeFiles reply: package config files such as dnnl-config.cmake, and the
    modules they pull in);
  - the shared libraries ldd resolves for libdisttrain.so, dtrun, dt-node, the
    examples and the bindings' native libraries.

Files outside Debian's packages are allowed only under a path that the
README's table "Dependencies outside Debian" names (the CUDA toolkit under
/usr/local/cuda); the rest are reported by name.

  scripts/check-deps.py BUILD_DIR [--tests] [--without PKG]...

--tests      the build is the test suite's: allow install-deps.sh --tests
--without    drop PKG from the list first (shows that the check notices it)
Exit status: 0 all files accounted for, 1 some are not, 2 the check could
not run (no dpkg/apt, no configured build).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CACHE_NAME_PATTERN = re.compile(r"_(LIBRARY|LIBRARIES|INCLUDE_DIR|INCLUDE_DIRS|DIR|EXECUTABLE|COMPILER)$")
# Entries that name where things go or how to build, not something found.
CACHE_SKIP_PATTERN = re.compile(r"^(CMAKE_INSTALL_|CMAKE_.*_OUTPUT_DIRECTORY|FETCHCONTENT_)")
README_SECTION = "Dependencies outside Debian"


class CheckError(Exception):
    """The check could not run; exit status 2."""


def run(args, check=True):
    result = subprocess.run(args, capture_output=True, text=True)
    if check and result.returncode != 0:
        raise CheckError(f"{' '.join(args[:3])} ... failed ({result.returncode}): {result.stderr.strip()[-2000:]}")
    return result


def install_list(tests):
    args = [str(REPO / "scripts/install-deps.sh"), "--list"] + (["--tests"] if tests else [])
    return [line.strip() for line in run(args).stdout.splitlines() if line.strip()]


def hard_closure(packages):
    """What apt-get installs for `packages` on a machine with no packages,
    recommends off: the names (without architecture) of every Inst line."""
    with tempfile.TemporaryDirectory() as tmp:
        status = Path(tmp) / "status"
        status.write_text("")
        result = run(["apt-get", "-s", "-o", f"Dir::State::status={status}",
                      "--no-install-recommends", "install"] + packages, check=False)
    if result.returncode != 0:
        raise CheckError("apt-get could not resolve the install list (run apt-get update?):\n"
                         + result.stdout[-1500:] + result.stderr[-1500:])
    closure = set()
    for line in result.stdout.splitlines():
        if line.startswith("Inst "):
            closure.add(line.split()[1].split(":")[0])
    return closure


def base_system_packages():
    """Installed packages that every Debian system has: Essential or Priority
    required (what debootstrap's minbase installs)."""
    out = run(["dpkg-query", "-W", "-f=${Package}\t${Essential}\t${Priority}\n"]).stdout
    base = set()
    for line in out.splitlines():
        name, essential, priority = (line.split("\t") + ["", ""])[:3]
        if essential == "yes" or priority == "required":
            base.add(name)
    return base


def cache_paths(build_dir):
    """(path, why) for every existing absolute path the cache recorded."""
    found = []
    entry = re.compile(r"^([A-Za-z0-9_.+-]+):([A-Z]+)=(.*)$")
    for line in (build_dir / "CMakeCache.txt").read_text().splitlines():
        m = entry.match(line)
        if not m:
            continue
        name, kind, value = m.groups()
        if CACHE_SKIP_PATTERN.match(name):
            continue
        if kind not in ("FILEPATH", "PATH") and not CACHE_NAME_PATTERN.search(name):
            continue
        if kind == "INTERNAL" or kind == "STATIC":
            continue
        for item in value.split(";"):
            if item.startswith("/") and os.path.exists(item):
                found.append((item, f"CMakeCache {name}"))
    return found


def loaded_cmake_files(build_dir):
    """(path, why) for every CMake file configure read from outside the tree,
    from the file API's cmakeFiles reply. CMake answers only queries that
    exist before configure starts: scripts/build.sh writes this one."""
    reply_dir = build_dir / ".cmake/api/v1/reply"
    replies = sorted(reply_dir.glob("cmakeFiles-v1-*.json")) if reply_dir.is_dir() else []
    if not replies:
        raise CheckError(f"{build_dir} has no CMake file API reply: configure it with scripts/build.sh, or "
                         f"create {build_dir}/.cmake/api/v1/query/cmakeFiles-v1 and run cmake again")
    newest = max(replies, key=lambda p: p.stat().st_mtime)
    data = json.loads(newest.read_text())
    found = []
    for entry in data.get("inputs", []):
        path = entry["path"]
        if entry.get("isExternal") and os.path.isabs(path):
            found.append((path, "loaded by CMake"))
    return found


def built_binaries(build_dir):
    """The library (and the bindings' glue libraries beside it), dtrun,
    dt-node, the examples, and any native library under bindings/."""
    paths = [build_dir / "dtrun", build_dir / "dt-node"]
    paths += sorted(build_dir.glob("lib*.so*")) + sorted((build_dir / "src").glob("libdisttrain.so*"))
    paths += sorted(p for p in (build_dir / "examples").glob("*") if p.is_file() and os.access(p, os.X_OK))
    paths += sorted((build_dir / "bindings").rglob("*.so")) if (build_dir / "bindings").is_dir() else []
    seen, unique = set(), []
    for p in paths:
        if p.is_file() and p.resolve() not in seen:
            seen.add(p.resolve())
            unique.append(p)
    return unique


def linked_libraries(binaries):
    """(path, why) for each library ldd resolves; (binary, name) for the ones
    it cannot."""
    found, missing = [], []
    for binary in binaries:
        out = run(["ldd", str(binary)], check=False).stdout
        for line in out.splitlines():
            line = line.strip()
            m = re.match(r"^(\S+) => (\S+)", line)
            if m and m.group(2) == "not":
                missing.append((binary, m.group(1)))
            elif m and m.group(2).startswith("/"):
                found.append((m.group(2), f"ldd {binary.name}"))
            elif line.startswith("/"):
                found.append((line.split()[0], f"ldd {binary.name}"))
    return found, missing


def readme_allowed_prefixes():
    """Absolute paths in the first column of the README's table under the
    heading "Dependencies outside Debian"."""
    text = (REPO / "README.md").read_text()
    section = re.search(r"^#+ " + re.escape(README_SECTION) + r"\s*$(.*?)(?=^#+ |\Z)", text, re.M | re.S)
    if not section:
        return []
    prefixes = []
    for line in section.group(1).splitlines():
        m = re.match(r"^\|\s*`(/[^`]+)`", line)
        if m:
            prefixes.append(m.group(1).rstrip("/"))
    return prefixes


def usr_merge_pair(path):
    """A path and its twin across the /usr merge: dpkg knows a file by the
    name its package ships, which may be either."""
    twin = path[len("/usr"):] if path.startswith("/usr/") else "/usr" + path
    return [path, twin]


def name_groups(path):
    """The names a used file goes by, grouped: the path as given, and the
    file its symlinks lead to. Each group that dpkg knows must come from an
    installed package (a -dev package's libX.so link and the runtime
    package's libX.so.N both have to be there)."""
    groups = [usr_merge_pair(path)]
    real = os.path.realpath(path)
    if real != path:
        groups.append(usr_merge_pair(real))
    return groups


def owners(paths):
    """path -> set of owning packages (architecture stripped), for every path
    dpkg knows; one dpkg -S call per batch."""
    result = {}
    paths = sorted(set(paths))
    for i in range(0, len(paths), 200):
        batch = paths[i:i + 200]
        out = run(["dpkg", "-S"] + batch, check=False).stdout
        for line in out.splitlines():
            if line.startswith("diversion "):
                continue
            pkgs, sep, path = line.partition(": ")
            if not sep:
                continue
            result.setdefault(path, set()).update(p.strip().split(":")[0] for p in pkgs.split(","))
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("build_dir", type=Path)
    parser.add_argument("--tests", action="store_true")
    parser.add_argument("--without", action="append", default=[], metavar="PKG")
    args = parser.parse_args()

    build_dir = args.build_dir.resolve()
    for tool in ("dpkg", "apt-get", "ldd", "cmake"):
        if not shutil.which(tool):
            raise CheckError(f"{tool} not found: this check runs on Debian")
    if not (build_dir / "CMakeCache.txt").is_file():
        raise CheckError(f"{build_dir} is not a configured build (no CMakeCache.txt)")

    listed = [p for p in install_list(args.tests) if p not in args.without]
    allowed = set(listed) | hard_closure(listed) | base_system_packages()
    outside_prefixes = readme_allowed_prefixes()

    used = cache_paths(build_dir) + loaded_cmake_files(build_dir)
    binaries = built_binaries(build_dir)
    linked, unresolved = linked_libraries(binaries)
    used += linked
    ours = (str(REPO) + "/", str(build_dir) + "/")
    used = [(p, why) for p, why in used if not (p + "/").startswith(ours)]

    why_of = {}
    for path, why in used:
        why_of.setdefault(path, []).append(why)
    known = owners([n for path in why_of for group in name_groups(path) for n in group])

    problems, outside, packages_seen = [], [], set()
    for path in sorted(why_of):
        reasons = ", ".join(sorted(set(why_of[path]))[:3])
        groups = name_groups(path)
        names = [name for group in groups for name in group]
        # The README's word decides for these, whoever installed them (NVIDIA's
        # own apt repository, say, puts the toolkit there as packages).
        prefix = next((p for p in outside_prefixes
                       if any(n == p or n.startswith(p + "/") for n in names)), None)
        if prefix:
            outside.append((path, prefix))
            continue
        owned = [next(known[name] for name in group if name in known)
                 for group in groups if any(name in known for name in group)]
        if not owned:
            problems.append(f"{path} ({reasons}) belongs to no Debian package, and the README's "
                            f"\"{README_SECTION}\" names no path it is under")
            continue
        for pkgs in owned:
            packages_seen |= pkgs
            # A directory exists when any of its owners is installed; a file has one owner.
            if not pkgs & allowed:
                names = ", ".join(sorted(pkgs))
                problems.append(f"{path} ({reasons}) is from {names}, which scripts/install-deps.sh"
                                f"{' --tests' if args.tests else ''} does not install: add it to the list "
                                f"(a Recommends is not installed)")
                break
    for binary, lib in unresolved:
        problems.append(f"ldd {binary}: {lib} not found")

    mode = "install-deps.sh --tests" if args.tests else "install-deps.sh"
    print(f"check-deps: {build_dir.name}: {len(why_of)} files from {len(packages_seen)} Debian packages "
          f"and {len(outside)} from outside Debian; {len(binaries)} binaries checked with ldd; "
          f"list: {mode} ({len(listed)} packages, {len(allowed)} with their hard dependencies"
          f"{', without ' + ', '.join(args.without) if args.without else ''})")
    for prefix in sorted({p for _, p in outside}):
        count = sum(1 for _, p in outside if p == prefix)
        print(f"check-deps: not from Debian, allowed by the README: {count} files under {prefix}")
    for problem in problems:
        print(f"check-deps: FAIL: {problem}")
    if problems:
        print(f"check-deps: {len(problems)} file(s) would be missing on a fresh machine")
        return 1
    print("check-deps: every file the build used comes from what install-deps.sh installs")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except CheckError as e:
        print(f"check-deps: cannot check: {e}", file=sys.stderr)
        sys.exit(2)
