#!/usr/bin/env bash
# A loopback Redis for `webgpu-knn worker` / `dedup --distributed` and the distributed suite
# (test/distributed): no persistence, 127.0.0.1 only, a free port.
#
#   scripts/redis.sh setup [--check]  make sure redis-server is installed (Debian's redis-server,
#                                     apt-get as root; --check: report only, never install)
#   scripts/redis.sh start [PORT]     start one, daemonized (on PORT, else a free port); prints
#                                     `redis://127.0.0.1:PORT PID`
#   scripts/redis.sh stop PID         stop the one started with that pid
#
# $WEBGPU_KNN_REDIS_SERVER names the binary (default: redis-server on PATH). Idempotent setup: when
# the binary exists it changes nothing.
set -euo pipefail
server=${WEBGPU_KNN_REDIS_SERVER:-redis-server}
advise() {
  echo "redis: install Debian's redis-server (apt-get install redis-server, as root), or set WEBGPU_KNN_REDIS_SERVER to a redis-server binary" >&2
}
have() { command -v "$server" >/dev/null 2>&1; }
case "${1:-}" in
  setup)
    if have; then
      echo "redis: found $(command -v "$server") ($("$server" --version 2>/dev/null | head -1 || echo 'version unknown'))"
      exit 0
    fi
    if [ "${2:-}" = "--check" ] || [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1 || [ -n "${WEBGPU_KNN_REDIS_SERVER:-}" ]; then
      echo "redis: no $server" >&2
      advise; exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends redis-server >/dev/null
    if have; then echo "redis: installed $("$server" --version | head -1)"; else echo "redis: apt-get install redis-server left no $server" >&2; advise; exit 1; fi
    ;;
  start)
    if ! have; then echo "redis: no $server" >&2; advise; exit 1; fi
    # PORT if given (a test restarting Redis where it was), else a free port: bind port 0 and read
    # back what the kernel chose (a race with other processes is possible but unlikely;
    # redis-server then fails to start and this exits non-zero).
    port=${2:-$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')}
    dir=$(mktemp -d)
    "$server" --save "" --appendonly no --port "$port" --bind 127.0.0.1 --dir "$dir" \
      --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
    for _ in $(seq 50); do [ -s "$dir/redis.pid" ] && break; sleep 0.1; done
    if [ ! -s "$dir/redis.pid" ]; then echo "redis: did not start (log: $dir/redis.log)" >&2; exit 1; fi
    echo "redis://127.0.0.1:$port $(cat "$dir/redis.pid")"
    ;;
  stop)
    [ -n "${2:-}" ] || { echo "usage: scripts/redis.sh stop PID" >&2; exit 2; }
    kill "$2"
    ;;
  *)
    echo "usage: scripts/redis.sh setup [--check] | start [PORT] | stop PID" >&2; exit 2 ;;
esac
