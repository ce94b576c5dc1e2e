#!/bin/sh
# docs/environment.md is generated from the parameter table
# (src/core/parameter_table.cc) by `dt-node --help-env=markdown`. Fails when
# the committed page differs from what the table generates.
#   check_environment_doc.sh DT_NODE DOCS_ENVIRONMENT_MD
set -eu
dt_node="$1"
page="$2"
generated=$(mktemp)
trap 'rm -f "$generated"' EXIT
"$dt_node" --help-env=markdown > "$generated"
if ! diff -u "$page" "$generated"; then
  echo "FAIL: $page differs from the parameter table; regenerate it:"
  echo "  scripts/generate-environment-doc.sh $dt_node"
  exit 1
fi
echo "OK: $page is the parameter table's"
