#!/bin/sh
# Rewrites docs/environment.md from the parameter table
# (src/core/parameter_table.cc); the test ParameterTableDocCurrent fails
# until the committed page matches.
#   scripts/generate-environment-doc.sh [DT_NODE]   (default: build/dt-node)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
dt_node="${1:-$root/build/dt-node}"
"$dt_node" --help-env=markdown > "$root/docs/environment.md"
echo "wrote $root/docs/environment.md"
