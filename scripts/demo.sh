#!/usr/bin/env bash
# The README's "main job" command: installs, builds, and shows kzoo working on
# the demo catalog.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
K=build/kzoo
echo "== kzoo validate: every package of the demo catalog"
for pkg in $(find catalog/kernel_data -type d -name .kernel_package | sort); do
  dir=$(dirname "$pkg")
  $K validate "$dir"
done
echo "== kzoo inspect (JSON) of the first package"
first=$(find catalog/kernel_data -type d -name .kernel_package | sort | head -n1)
$K inspect "$(dirname "$first")" --json
echo "== kzoo pack + validate of the tarball"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
$K pack "$(dirname "$first")" -o "$tmp/pkg.tar.gz"
$K validate "$tmp/pkg.tar.gz"
