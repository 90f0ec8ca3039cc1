#!/usr/bin/env bash
# Runs a command on a supported Node: the machine's when it is 22 or newer, else the version
# .nvmrc names, installed once from the npm registry (the node-<os>-<arch> package, which carries
# Node's headers for native builds) into .tools/. BATON_NODE=<version> asks for that version
# whatever the machine has (the test suite runs a tier on the other supported line with it).
# Usage: [BATON_NODE=22.x.y] bash scripts/with-node.sh COMMAND [ARGS...]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

major=$(node -p 'process.versions.node.split(".")[0]' 2> /dev/null || echo 0)
mkdir -p "$root/.tools"
if [ -n "${BATON_NODE:-}" ] || [ "$major" -lt 22 ]; then
  want=${BATON_NODE:-$(tr -d ' v\r\n' < "$root/.nvmrc")}
  case "$(uname -s)" in
    Linux) os=linux ;;
    Darwin) os=darwin ;;
    *) echo "[node] no Node package of the npm registry for $(uname -s): install Node $want" >&2 && exit 1 ;;
  esac
  case "$(uname -m)" in
    x86_64 | amd64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) echo "[node] no Node package of the npm registry for $(uname -m): install Node $want" >&2 && exit 1 ;;
  esac
  pkg="node-$os-$arch"
  home="$root/.tools/node-$want/node_modules/$pkg"
  # A binary that answers with the wanted version: an install cut off half-way is done again.
  if [ "$("$home/bin/node" -v 2> /dev/null)" != "v$want" ]; then
    command -v npm > /dev/null ||
      { echo "[node] Baton runs on Node 22 or 24 and this machine has no npm to fetch Node $want with: install Node $want" >&2 && exit 1; }
    if [ -n "${BATON_NODE:-}" ]; then
      echo "[node] installing Node $want ($pkg from the npm registry) into .tools/, as BATON_NODE asks" >&2
    else
      echo "[node] Node $(node -v 2> /dev/null || echo '(none)') is past its end of life; Baton runs on 22 or 24: installing Node $want ($pkg from the npm registry) into .tools/" >&2
    fi
    # Into a folder of its own first, moved into place whole (two starts at once each make theirs).
    # --ignore-scripts: the platform package is the binary itself, nothing to run.
    staging=$(mktemp -d "$root/.tools/.node-$want.XXXXXX")
    npm install --prefix "$staging" --no-save --no-package-lock --ignore-scripts \
      --no-audit --no-fund --loglevel=error "$pkg@$want" >&2
    if [ "$("$home/bin/node" -v 2> /dev/null)" = "v$want" ]; then
      rm -rf "$staging" # another start put it in place meanwhile
    else
      rm -rf "$root/.tools/node-$want"
      mv "$staging" "$root/.tools/node-$want"
    fi
  fi
  export PATH="$home/bin:$PATH"
  # Native modules build against this Node's own headers, not the machine's.
  export npm_config_nodedir="$home"
fi

exec "$@"
