#!/usr/bin/env bash
# Print showbatch's version: the showbatchVersion constant in Sources/ (what `showbatch --version`
# prints). make-bundle.sh also compares it with the built binary's --version.
set -euo pipefail
cd "$(dirname "$0")/.."
version="$(grep -rhoE 'showbatchVersion *= *"[^"]+"' Sources | sed -n -E '1s/.*"([^"]+)"/\1/p')"
[ -n "$version" ] || { echo "version.sh: no 'showbatchVersion = \"...\"' under Sources/" >&2; exit 1; }
printf '%s\n' "$version"
