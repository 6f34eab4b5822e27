#!/usr/bin/env bash
# Brings the servers of the test matrix into .servers/ (never over the machine's own Redis): Valkey 8.0
# from bookworm-backports and Redis 6.0.16 from bullseye, each taken with `apt-get download` through a
# private sources list and unpacked with `dpkg-deb -x`. Each server gets a bin/ folder holding
# `redis-server` and `redis-cli`, so putting it first on the PATH runs the tests against it.
# Usage: scripts/servers.sh [valkey-8.0] [redis-6.0]   (default: both); prints each bin/ folder.
set -euo pipefail
top="$(cd "$(dirname "$0")/.." && pwd)"
dir="$top/.servers"
apt="$dir/apt"
servers=("$@")
[ ${#servers[@]} -gt 0 ] || servers=(valkey-8.0 redis-6.0)

fetch() { # fetch <folder> <package=version>...
  local into="$1"; shift
  if [ ! -d "$apt/state/lists" ] || [ -z "$(ls "$apt/state/lists" 2>/dev/null | grep -v partial || true)" ]; then
    mkdir -p "$apt/state/lists/partial" "$apt/cache/archives/partial"
    cat > "$apt/sources.list" <<SOURCES
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm-backports main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bullseye main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main
SOURCES
    apt-get "${opts[@]}" update -qq >&2
  fi
  mkdir -p "$into/debs" "$into/root"
  (cd "$into/debs" && apt-get "${opts[@]}" download "$@" >&2)
  for deb in "$into"/debs/*.deb; do dpkg-deb -x "$deb" "$into/root"; done
}

opts=(-o "Dir::Etc::sourcelist=$apt/sources.list" -o Dir::Etc::sourceparts=- -o "Dir::State=$apt/state"
  -o "Dir::Cache=$apt/cache" -o Dir::State::status=/var/lib/dpkg/status -o APT::Sandbox::User=root)

wrapper() { # wrapper <bin folder> <name> <binary> [library path]
  cat > "$1/$2" <<WRAP
#!/usr/bin/env bash
${4:+export LD_LIBRARY_PATH="$4\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"}
exec -a $2 "$3" "\$@"
WRAP
  chmod +x "$1/$2"
}

for server in "${servers[@]}"; do
  into="$dir/$server"
  if [ ! -x "$into/bin/redis-server" ]; then
    rm -rf "$into"
    case "$server" in
      valkey-8.0)
        fetch "$into" valkey-tools/bookworm-backports
        mkdir -p "$into/bin"
        wrapper "$into/bin" redis-server "$into/root/usr/bin/valkey-check-rdb"
        wrapper "$into/bin" redis-cli "$into/root/usr/bin/valkey-cli"
        ;;
      redis-6.0)
        # The server is redis-tools' redis-check-rdb started as redis-server; it needs bullseye's
        # libssl1.1 and bookworm's Lua 5.1 libraries beside it, not installed.
        fetch "$into" redis-tools/bullseye libssl1.1/bullseye liblua5.1-0/bookworm lua-cjson/bookworm lua-bitop/bookworm
        mkdir -p "$into/bin"
        wrapper "$into/bin" redis-server "$into/root/usr/bin/redis-check-rdb" "$into/root/usr/lib/x86_64-linux-gnu"
        wrapper "$into/bin" redis-cli "$into/root/usr/bin/redis-cli" "$into/root/usr/lib/x86_64-linux-gnu"
        ;;
      *) echo "unknown server $server (expected valkey-8.0 or redis-6.0)" >&2; exit 64 ;;
    esac
    rm -rf "$into/debs"
  fi
  "$into/bin/redis-server" --version >&2
  echo "$into/bin"
done
