#!/usr/bin/env bash
# Brings up the servers the test suite talks to, on loopback, and fails loudly when one cannot be
# reached. Idempotent: a service that already answers is left alone, so a second run is fast.
# ZooKeeper and etcd are installed from Debian packages when absent (the lock conformance suite
# needs them), and so are Prometheus (its promtool and server, for the deployment test) and Chromium
# (for the console's browser tests); MariaDB and
# Redis are expected to be installed already on this machine kind.
set -euo pipefail

log() { echo "[services] $*"; }

wait_for() { # name, command, tries, how to start it by hand
  local name=$1 cmd=$2 tries=${3:-50} hint=${4:-"bash scripts/services.sh"}
  for _ in $(seq 1 "$tries"); do
    if eval "$cmd" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  echo "[services] $name is not reachable after starting it; see its log. Start it by hand: $hint" >&2
  return 1
}

# Runs apt-get only when something is missing, and updates the package lists once per run first
# (a fresh image has stale or empty lists).
apt_updated=0
apt_install() { # packages...
  if [ "$(id -u)" -ne 0 ]; then
    echo "[services] need root to install $* (sudo bash scripts/services.sh)" >&2
    return 1
  fi
  if [ "$apt_updated" -eq 0 ]; then
    log "apt-get update"
    apt-get update -qq
    apt_updated=1
  fi
  log "installing $*"
  # policy-rc.d exit 101 stops the packages' postinst from starting their own system services:
  # we start them ourselves, on loopback, with test-friendly settings.
  local policy=/usr/sbin/policy-rc.d created_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created_policy=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
  if [ "$created_policy" -eq 1 ]; then rm -f "$policy"; fi
}

tcp_open() { # host, port
  (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null
}

# --- MariaDB (127.0.0.1:3306, root, no password, database test) ---
if ! mariadb -h127.0.0.1 -uroot -e 'select 1' >/dev/null 2>&1; then
  log "MariaDB is down: starting it"
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
  wait_for MariaDB "mariadb -h127.0.0.1 -uroot -e 'select 1'" 150 \
    "start-stop-daemon --start --background --exec /usr/sbin/mariadbd"
fi
mariadb -h127.0.0.1 -uroot -e 'create database if not exists test' >/dev/null

# --- Redis (127.0.0.1:6379) ---
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  log "Redis is down: starting it"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  wait_for Redis "redis-cli -h 127.0.0.1 -p 6379 ping" 50 "redis-server --daemonize yes --bind 127.0.0.1"
fi

# --- ZooKeeper (127.0.0.1:2181, standalone) ---
# "ruok" answers "imok" only when the server is serving, not merely listening.
zk_ok() { [ "$( (exec 3<>/dev/tcp/127.0.0.1/2181 && printf ruok >&3 && timeout 2 cat <&3) 2>/dev/null)" = imok ]; }
ZK_HOME=/var/lib/baton-zookeeper
if ! zk_ok; then
  if [ ! -f /usr/share/java/zookeeper.jar ]; then
    # The Debian package depends on default-jre and libzookeeper-java, so a machine without Java
    # gets a runtime too.
    apt_install zookeeper
  fi
  log "ZooKeeper is down: starting it on 127.0.0.1:2181"
  mkdir -p "$ZK_HOME/data" /var/log/zookeeper
  # tickTime 500 lets clients ask for session timeouts down to 1 s (2 ticks), which keeps the
  # lost-session tests short.
  cat >"$ZK_HOME/zoo.cfg" <<CFG
tickTime=500
initLimit=10
syncLimit=5
dataDir=$ZK_HOME/data
clientPort=2181
clientPortAddress=127.0.0.1
maxClientCnxns=200
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat,cons
CFG
  # zookeeper.jar's manifest lists its Debian dependency jars, so it is the whole classpath.
  # setsid + nohup: the server outlives this script and the shell that ran it.
  setsid nohup java -Xmx256m -Dzookeeper.log.dir=/var/log/zookeeper \
    -Dzookeeper.root.logger=INFO,CONSOLE -cp /usr/share/java/zookeeper.jar \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$ZK_HOME/zoo.cfg" \
    >/var/log/zookeeper/baton.log 2>&1 </dev/null &
  wait_for ZooKeeper zk_ok 150 "bash scripts/services.sh (log: /var/log/zookeeper/baton.log)"
fi

# --- etcd (127.0.0.1:2379, single member) ---
etcd_ok() { curl -fsS --max-time 2 http://127.0.0.1:2379/health | grep -q '"health":"true"'; }
if ! etcd_ok; then
  if ! command -v etcd >/dev/null 2>&1; then
    apt_install etcd-server
  fi
  log "etcd is down: starting it on 127.0.0.1:2379"
  mkdir -p /var/lib/baton-etcd /var/log/etcd
  setsid nohup etcd --name baton --data-dir /var/lib/baton-etcd \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster baton=http://127.0.0.1:2380 \
    >/var/log/etcd/baton.log 2>&1 </dev/null &
  wait_for etcd etcd_ok 150 "bash scripts/services.sh (log: /var/log/etcd/baton.log)"
fi

# --- Python 3 (the webhook tests verify signatures with a 20-line Python verifier too) ---
if ! command -v python3 >/dev/null 2>&1; then
  apt_install python3
fi

# --- promtool and prometheus (the deployment test checks docker/prometheus/alerts.yml with
# /usr/bin/promtool and runs /usr/bin/prometheus of its own on a free loopback port; none is
# started here) ---
if [ ! -x /usr/bin/promtool ] || [ ! -x /usr/bin/prometheus ]; then
  apt_install prometheus
fi

# --- Chromium (the console's browser tests drive Debian's build through playwright-core, launched
# by its path: nothing downloads a browser) ---
if [ ! -x /usr/bin/chromium ]; then
  apt_install chromium
fi

log "MariaDB, Redis, ZooKeeper and etcd are up; python3 is $(command -v python3); promtool, prometheus and chromium are in /usr/bin"
