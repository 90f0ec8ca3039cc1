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

# --- Redis Cluster (127.0.0.1:7000-7005: 3 masters, 3 replicas) ---
# Beside the standalone server, for the Cluster cases of the queue and lock conformance suites and
# the failover test, which kills a master and starts it again. Each node has a directory of its
# own holding its redis.conf (so `redis-server <dir>/redis.conf` brings it back), its nodes.conf
# (its place in the cluster: a node started again rejoins, as a replica once its replica took
# over), its log and its pid file. No persistence: the data is the tests'.
# cluster-node-timeout 1000: a dead master's replica takes over within a few seconds.
# cluster-replica-validity-factor 0: a replica takes over however long ago it last heard its
# master, so a failover never waits for a human. repl-diskless-sync-delay 0: a node that rejoins
# gets its first sync at once, not after 5 s of waiting for other replicas to share it.
CLUSTER_HOME=/var/lib/baton-redis-cluster
CLUSTER_PORTS=(7000 7001 7002 7003 7004 7005)
CLUSTER_HINT="bash scripts/services.sh (node logs: $CLUSTER_HOME/<port>/redis.log; to start over: kill the nodes, rm -rf $CLUSTER_HOME, run it again)"

# Healthy: every node answers and says cluster_state:ok, three masters hold the slots, each with a
# connected replica whose link to it is up.
cluster_healthy() {
  local port nodes
  for port in "${CLUSTER_PORTS[@]}"; do
    redis-cli -p "$port" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || return 1
    if redis-cli -p "$port" info replication 2>/dev/null | grep -q '^role:slave'; then
      redis-cli -p "$port" info replication | grep -q '^master_link_status:up' || return 1
    fi
  done
  nodes=$(redis-cli -p "${CLUSTER_PORTS[0]}" cluster nodes 2>/dev/null) || return 1
  # Fields: id, address, flags, master id, ping sent, pong received, epoch, link state, slots...
  [ "$(awk '$3 ~ /master/ && $3 !~ /fail/ && $8 == "connected" && NF >= 9' <<<"$nodes" | wc -l)" -eq 3 ] &&
    [ "$(awk '$3 ~ /slave/ && $3 !~ /fail/ && $8 == "connected"' <<<"$nodes" | wc -l)" -eq 3 ]
}

if ! cluster_healthy; then
  for port in "${CLUSTER_PORTS[@]}"; do
    redis-cli -p "$port" ping >/dev/null 2>&1 && continue
    log "Redis Cluster node $port is down: starting it"
    mkdir -p "$CLUSTER_HOME/$port"
    cat >"$CLUSTER_HOME/$port/redis.conf" <<CFG
port $port
bind 127.0.0.1
daemonize yes
dir $CLUSTER_HOME/$port
pidfile $CLUSTER_HOME/$port/redis.pid
logfile $CLUSTER_HOME/$port/redis.log
cluster-enabled yes
cluster-config-file nodes.conf
cluster-node-timeout 1000
cluster-replica-validity-factor 0
repl-diskless-sync-delay 0
appendonly no
save ""
CFG
    redis-server "$CLUSTER_HOME/$port/redis.conf"
  done
  for port in "${CLUSTER_PORTS[@]}"; do
    wait_for "Redis Cluster node $port" "redis-cli -p $port ping" 50 "$CLUSTER_HINT"
  done
  # Nodes that were a cluster before (their nodes.conf says so) find each other again, and a node
  # started again syncs from its master: give them a moment. A node that knows nobody (new, or
  # reset) means a new cluster.
  alone=0
  for port in "${CLUSTER_PORTS[@]}"; do
    if redis-cli -p "$port" cluster info | grep -q '^cluster_known_nodes:1\b'; then alone=1; fi
  done
  if [ "$alone" -eq 0 ]; then
    settle_until=$((SECONDS + 10))
    until cluster_healthy || [ "$SECONDS" -ge "$settle_until" ]; do sleep 0.2; done
  fi
  if ! cluster_healthy; then
    # Not a cluster, or a broken one (a node from another cluster, a half-made create): the data
    # is the tests' own, so every node starts empty and the cluster is made again.
    log "Redis Cluster is not healthy: making it (3 masters, 3 replicas)"
    for port in "${CLUSTER_PORTS[@]}"; do
      redis-cli -p "$port" flushall >/dev/null 2>&1 || true
      redis-cli -p "$port" cluster reset hard >/dev/null
    done
    addresses=()
    for port in "${CLUSTER_PORTS[@]}"; do addresses+=("127.0.0.1:$port"); done
    # Bounded: it waits for the nodes to agree, which never comes if the cluster bus is blocked.
    if ! timeout 120 redis-cli --cluster create "${addresses[@]}" --cluster-replicas 1 --cluster-yes >/dev/null; then
      echo "[services] redis-cli --cluster create failed. Start it by hand: $CLUSTER_HINT" >&2
      exit 1
    fi
    # Replicas are healthy once their first sync is done.
    wait_for "Redis Cluster" cluster_healthy 150 "$CLUSTER_HINT"
  fi
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

log "MariaDB, Redis (and its Cluster on 7000-7005), ZooKeeper and etcd are up; python3 is $(command -v python3); promtool, prometheus and chromium are in /usr/bin"
