#!/bin/sh
# Every environment variable src/ reads is declared in the parameter table
# (src/core/parameter_table.cc), whose names `dt-node --help-env` lists.
# A variable's name is looked for as a string literal in src/: any literal
# passed to getenv() or read_parameter(), and any upper-case literal with an
# underscore (the form of every DMLC_*, DT_*, PS_*, MXNET_*, OMPI_*, SLURM_*
# name), except the C API's own enumerators and macros (DT_SYNC_SPARSE, ...).
# Fails, naming them, when one is not in the table.
#   check_parameter_names.sh DT_NODE SOURCE_DIR
set -eu
dt_node="$1"
root="$2"
declared=$("$dt_node" --help-env | sed -n 's/^  \([A-Z][A-Z0-9_]*\) (.*/\1/p' | sort -u)
if [ -z "$declared" ]; then
  echo "FAIL: $dt_node --help-env lists no variable"
  exit 1
fi
api=$(sed -n 's/^ *\(DT_[A-Z0-9_]*\) *=.*/\1/p; s/^#define \(DT_[A-Z0-9_]*\).*/\1/p' "$root/include/dt_c_api.h" | sort -u)
literals=$( {
  grep -rhoE '"[A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9]"' "$root/src" --include='*.cc' --include='*.h' || true
  grep -rhoE '(getenv|read_parameter)\("[^"]*"\)' "$root/src" --include='*.cc' --include='*.h' | grep -oE '"[^"]*"' || true
} | tr -d '"' | sort -u)
missing=""
for name in $literals; do
  printf '%s\n' "$declared" | grep -qx "$name" && continue
  printf '%s\n' "$api" | grep -qx "$name" && continue
  missing="$missing $name"
done
# A direct getenv() is a read that bypasses the table's check.
direct=$(grep -rnE 'getenv\(' "$root/src" --include='*.cc' --include='*.h' | grep -vE '^[^:]*:[0-9]+: *//' |
  grep -v 'src/core/parameter_table.cc' || true)
if [ -n "$missing" ]; then
  echo "FAIL: src/ reads variables the parameter table does not declare:$missing"
  echo "  declare each in src/core/parameter_table.cc and regenerate docs/environment.md"
  exit 1
fi
if [ -n "$direct" ]; then
  echo "NOTE: getenv() outside the table (its names are declared; read them through core::read_parameter):"
  printf '%s\n' "$direct"
fi
echo "OK: $(printf '%s\n' "$literals" | wc -l) names in src/, all declared"
