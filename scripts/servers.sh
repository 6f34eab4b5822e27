#!/usr/bin/env bash
# Brings the servers of the test matrix into .servers/ (never over the machine's own Redis), each taken
# with `apt-get download` through a private sources list and unpacked with `dpkg-deb -x`, never
# installed: Redis 6.0.16 (bullseye), Valkey 8.0 (bookworm-backports), Redis 8.0 and Valkey 8.1
# (trixie), Valkey 9.1 (sid). The Debian mirror is the machine's own: the first one its apt sources
# (/etc/apt/sources.list, /etc/apt/sources.list.d/*.list and deb822 *.sources) list for a Debian
# release suite, so a corporate mirror works too; RELOCK_DEBIAN_MIRROR overrides it.
# Each server gets a bin/ folder holding `redis-server` and `redis-cli`, so putting it first on the
# PATH runs the tests against it. The trixie and sid builds need glibc 2.38 or later: they run under
# trixie's own loader and libraries, extracted beside them (`ld-linux-x86-64.so.2 --library-path`).
# Usage: scripts/servers.sh [server ...]   (default: all); prints each bin/ folder, one a line.
set -euo pipefail
top="$(cd "$(dirname "$0")/.." && pwd)"
dir="$top/.servers"
apt="$dir/apt"
all=(valkey-8.0 redis-6.0 redis-8.0 valkey-8.1 valkey-9.1)
servers=("$@")
[ ${#servers[@]} -gt 0 ] || servers=("${all[@]}")
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

mirror() { # the machine's Debian mirror: a URI its apt sources give a Debian release suite (not -security)
  if [ -n "${RELOCK_DEBIAN_MIRROR:-}" ]; then echo "$RELOCK_DEBIAN_MIRROR"; return; fi
  local suites='(buster|bullseye|bookworm|trixie|forky|sid|stable|testing|unstable|oldstable)(-updates|-backports)?'
  local found
  found="$( {
    # one-line style: deb [options] URI suite components...
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      sed -E 's/\[[^]]*\]//' | awk -v re="^$suites\$" '$1 == "deb" && $3 ~ re { print $2 }'
    # deb822 style: a stanza's URIs with its Suites
    for file in /etc/apt/sources.list.d/*.sources; do
      [ -f "$file" ] || continue
      awk -v re="^$suites\$" '
        /^[ \t]*$/ { flush() ; next }
        /^[ \t]*#/ { next }
        tolower($1) == "types:" { types = $0 }
        tolower($1) == "uris:" { uris = ""; for (i = 2; i <= NF; i++) uris = uris " " $i }
        tolower($1) == "suites:" { ok = 0; for (i = 2; i <= NF; i++) if ($i ~ re) ok = 1 }
        function flush() { if (ok && types ~ /(^|[ \t])deb([ \t]|$)/) { n = split(uris, u, " "); for (i = 1; i <= n; i++) print u[i] } ok = 0; uris = ""; types = "" }
        END { flush() }' "$file"
    done
  } | head -n 1)"
  if [ -z "$found" ]; then
    echo "no Debian mirror in the apt sources (/etc/apt/sources.list*): set RELOCK_DEBIAN_MIRROR" >&2
    exit 69
  fi
  echo "${found%/}"
}

fetch() { # fetch <folder> <package/release>...
  local into="$1"; shift
  if [ ! -f "$apt/updated" ]; then
    local uri
    uri="$(mirror)"
    mkdir -p "$apt/state/lists/partial" "$apt/cache/archives/partial"
    {
      for suite in bookworm-backports bullseye bookworm trixie sid; do
        echo "deb [signed-by=$keyring] $uri $suite main"
      done
    } > "$apt/sources.list"
    apt-get "${opts[@]}" update -qq >&2
    touch "$apt/updated"
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

loaded() { # loaded <bin folder> <name> <root> <binary>: the binary under its root's own loader and libraries
  local lib="$3/usr/lib/x86_64-linux-gnu"
  cat > "$1/$2" <<WRAP
#!/usr/bin/env bash
exec "$lib/ld-linux-x86-64.so.2" --library-path "$lib:$3/lib/x86_64-linux-gnu:/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu" --argv0 $2 "$4" "\$@"
WRAP
  chmod +x "$1/$2"
}

# trixie's C runtime and the libraries the Debian builds of Redis 8 and Valkey link.
runtime=(libc6/trixie libstdc++6/trixie libgcc-s1/trixie libatomic1/trixie libssl3t64/trixie liblzf1/trixie
  libjemalloc2/trixie liblua5.1-0/trixie lua-cjson/trixie lua-bitop/trixie libsystemd0/trixie libcap2/trixie
  libzstd1/trixie liblz4-1/trixie liblzma5/trixie libgcrypt20/trixie libgpg-error0/trixie)

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
      redis-8.0)
        fetch "$into" redis-tools/trixie "${runtime[@]}"
        mkdir -p "$into/bin"
        loaded "$into/bin" redis-server "$into/root" "$into/root/usr/bin/redis-check-rdb"
        loaded "$into/bin" redis-cli "$into/root" "$into/root/usr/bin/redis-cli"
        ;;
      valkey-8.1 | valkey-9.1)
        release=trixie
        [ "$server" = valkey-9.1 ] && release=sid
        fetch "$into" "valkey-tools/$release" "${runtime[@]}"
        mkdir -p "$into/bin"
        loaded "$into/bin" redis-server "$into/root" "$into/root/usr/bin/valkey-check-rdb"
        loaded "$into/bin" redis-cli "$into/root" "$into/root/usr/bin/valkey-cli"
        ;;
      *) echo "unknown server $server (expected one of ${all[*]})" >&2; exit 64 ;;
    esac
    rm -rf "$into/debs"
  fi
  "$into/bin/redis-server" --version >&2
  echo "$into/bin"
done
