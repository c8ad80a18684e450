#!/usr/bin/env bash
# A real Flink session cluster on loopback for csdata's tests and users, and csdata's fallback
# Beam job server (used where Beam cannot download its own: pipeline/engine/flink.py), both fetched from
# package registries once and cached (driven by `make flink-*`).
#
#   flink.sh fetch   Flink's distribution (PyPI wheels, unpacked) and the job server class path
#                    (Maven) into the cache; offline after the first time
#   flink.sh up      (fetching first what is not cached, as `fetch` does: Maven for the job server)
#                    a JobManager (REST and web UI on localhost:8081) and two TaskManagers with
#                    two slots each, Beam's Flink runner (the fetched job server's version) in
#                    their class path; returns once both TaskManagers are registered. A watchdog
#                    starts a new TaskManager when one dies, as a cluster manager (Kubernetes,
#                    YARN) would, so that a job that lost one restarts (config.yaml's restart
#                    strategy) on the same number of slots
#   flink.sh down    stops them and every process they started; leaves nothing running
#   flink.sh status  what runs now
#
# The cache is $CSDATA_CACHE_DIR (default ~/.cache/csdata); the running cluster's config, logs and
# pid files live in $CSDATA_CACHE_DIR/flink-cluster.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
FLINK_VERSION="${CSDATA_FLINK_VERSION:-1.19.3}"
# The Beam whose Flink runner the cluster carries and whose job server csdata assembles: the
# fallback's (job-server/pom.xml), or CSDATA_BEAM_RUNNER_VERSION where your Maven serves another.
BEAM_VERSION="${CSDATA_BEAM_RUNNER_VERSION:-$(sed -n 's:.*<beam.version>\(.*\)</beam.version>.*:\1:p' "$HERE/job-server/pom.xml")}"
CACHE="${CSDATA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/csdata}"
FLINK_HOME="$CACHE/flink-$FLINK_VERSION"
JOB_SERVER="$CACHE/beam-flink-job-server-$BEAM_VERSION"
CLUSTER="$CACHE/flink-cluster"
REST_PORT="${CSDATA_FLINK_REST_PORT:-8081}"
RPC_PORT="${CSDATA_FLINK_RPC_PORT:-6123}"
TASKMANAGERS=2
PYTHON="${PYTHON:-python3}"

die() { echo "flink.sh: $*" >&2; exit 1; }

fetch_flink() {
  [ -f "$FLINK_HOME/.complete" ] && return 0
  command -v "$PYTHON" >/dev/null || die "no $PYTHON to download Flink's wheels with"
  local tmp; tmp="$(mktemp -d)"
  echo "flink.sh: downloading Flink $FLINK_VERSION (apache-flink, apache-flink-libraries from PyPI)" >&2
  "$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps --no-build-isolation \
    -d "$tmp" "apache-flink==$FLINK_VERSION" "apache-flink-libraries==$FLINK_VERSION" \
    || die "could not download Flink $FLINK_VERSION from PyPI"
  rm -rf "$FLINK_HOME.partial" && mkdir -p "$FLINK_HOME.partial"
  # apache-flink's wheel carries bin/ and conf/; apache-flink-libraries' sdist lib/, opt/, plugins/.
  (cd "$tmp" && "$PYTHON" -m zipfile -e apache_flink-"$FLINK_VERSION"-*.whl wheel \
     && mkdir libs && tar xzf apache-flink-libraries-"$FLINK_VERSION".tar.gz -C libs)
  local deps="$tmp/libs/apache-flink-libraries-$FLINK_VERSION/deps"
  cp -r "$tmp/wheel/pyflink/bin" "$tmp/wheel/pyflink/conf" "$deps/lib" "$deps/opt" "$deps/plugins" \
    "$FLINK_HOME.partial/"
  cp "$deps"/bin/*.jar "$FLINK_HOME.partial/bin/"
  chmod +x "$FLINK_HOME.partial"/bin/*.sh "$FLINK_HOME.partial/bin/flink"
  touch "$FLINK_HOME.partial/.complete"
  rm -rf "$FLINK_HOME" && mv "$FLINK_HOME.partial" "$FLINK_HOME"
  rm -rf "$tmp"
}

fetch_job_server() {
  [ -f "$JOB_SERVER/job-server.jar" ] && return 0
  command -v mvn >/dev/null || die "Maven (mvn) is missing: it fetches Beam's Flink job server"
  command -v jar >/dev/null || die "the JDK's jar tool is missing (install a JDK 11 or 17)"
  echo "flink.sh: fetching Beam $BEAM_VERSION's Flink runner and its dependencies from Maven" >&2
  rm -rf "$JOB_SERVER.partial" && mkdir -p "$JOB_SERVER.partial"
  mvn -q -f "$HERE/job-server/pom.xml" dependency:copy-dependencies -DincludeScope=runtime -Dbeam.version="$BEAM_VERSION" \
    -DoutputDirectory="$JOB_SERVER.partial/lib" >&2 \
    || die "could not fetch Beam $BEAM_VERSION's Flink runner from Maven"
  # `java -jar` (how Beam starts a job server) ignores -cp: a jar whose manifest names the
  # class path and FlinkJobServerDriver stands in for Beam's shaded job-server jar.
  "$PYTHON" - "$JOB_SERVER.partial" <<'EOF'
import os, sys
root = sys.argv[1]
jars = " ".join(f"lib/{name}" for name in sorted(os.listdir(os.path.join(root, "lib"))))
text = f"Class-Path: {jars}"
lines = [text[:70]] + [" " + text[i:i + 69] for i in range(70, len(text), 69)]   # 72-byte lines
with open(os.path.join(root, "MANIFEST.MF"), "w") as out:
    out.write("Main-Class: org.apache.beam.runners.flink.FlinkJobServerDriver\n")
    out.write("\n".join(lines) + "\n")
EOF
  (cd "$JOB_SERVER.partial" && jar cfm job-server.jar MANIFEST.MF)
  rm -rf "$JOB_SERVER" && mv "$JOB_SERVER.partial" "$JOB_SERVER"
}

port_taken() {
  "$PYTHON" - "$1" <<'EOF'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # as the JVM binds: TIME_WAIT is no owner
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(0)
sys.exit(1)
EOF
}

registered() {
  # The number of TaskManagers the JobManager knows, or nothing while its REST API is not up.
  "$PYTHON" - "$REST_PORT" <<'EOF' 2>/dev/null || true
import json, sys, urllib.request
with urllib.request.urlopen(f"http://localhost:{sys.argv[1]}/overview", timeout=2) as r:
    print(json.load(r)["taskmanagers"])
EOF
}

flink_env() {
  export FLINK_HOME FLINK_LIB_DIR="$CLUSTER/lib" FLINK_CONF_DIR="$CLUSTER/conf" FLINK_LOG_DIR="$CLUSTER/log" FLINK_PID_DIR="$CLUSTER"
}

up() {
  command -v java >/dev/null || die "Java is missing: install a JDK 11 or 17 (Debian: openjdk-17-jdk-headless)"
  if [ -n "$(pids)" ]; then
    [ "$(registered)" = "$TASKMANAGERS" ] && { echo "flink.sh: already running on localhost:$REST_PORT" >&2; return 0; }
    down
  fi
  for port in "$REST_PORT" "$RPC_PORT"; do
    port_taken "$port" && die "port $port is taken (another Flink or service?): stop it, or set CSDATA_FLINK_REST_PORT / CSDATA_FLINK_RPC_PORT"
  done
  fetch_flink
  fetch_job_server
  rm -rf "$CLUSTER" && mkdir -p "$CLUSTER/conf" "$CLUSTER/log" "$CLUSTER/lib"
  cp "$FLINK_HOME"/conf/log4j*.properties "$FLINK_HOME"/conf/logback*.xml "$CLUSTER/conf/"
  sed -e "s/@REST_PORT@/$REST_PORT/; s/@RPC_PORT@/$RPC_PORT/; s:@TMP@:$CLUSTER/tmp:; s:@LOG@:$CLUSTER/log:" \
    -e "s/@BEAM_VERSION@/$BEAM_VERSION/" "$HERE/config.yaml" > "$CLUSTER/conf/config.yaml"
  # The cluster's class path: Flink's own jars, and Beam's Flink runner with what it needs (the
  # job server's, less the Flink jars it was built against, and the Kryo and SLF4J that Flink has).
  # Loaded parent-first (config.yaml), a job's Beam classes are the cluster's, and Beam's Flink
  # runner then keeps a job's Python workers from one stage to the next
  # (`--environment_cache_millis`) instead of booting new ones for every stage. Flink's scripts
  # put flink-dist last, so where both bring a library (commons-lang3, say) the job server's
  # copy is the one loaded: the Flink suite (make services-test) runs on this class path.
  ln -s "$FLINK_HOME"/lib/*.jar "$CLUSTER/lib/"
  for jar in "$JOB_SERVER"/lib/*.jar; do
    case "$(basename "$jar")" in flink-*|kryo-*|slf4j-*) continue ;; esac
    [ -e "$CLUSTER/lib/$(basename "$jar")" ] || ln -s "$jar" "$CLUSTER/lib/"   # Flink's own wins
  done
  flink_env
  "$FLINK_HOME/bin/jobmanager.sh" start >/dev/null
  for _ in $(seq "$TASKMANAGERS"); do "$FLINK_HOME/bin/taskmanager.sh" start >/dev/null; done
  # setsid: out of the caller's process group (make, a test), whose end must not stop it.
  setsid nohup "$HERE/flink.sh" watch >>"$CLUSTER/log/watchdog.log" 2>&1 </dev/null &
  echo $! > "$CLUSTER/watchdog.pid"
  local waited=0
  while [ "$(registered)" != "$TASKMANAGERS" ]; do
    sleep 1; waited=$((waited + 1))
    if [ "$waited" -ge 90 ]; then
      down >/dev/null 2>&1 || true
      die "the cluster did not come up in 90 s (logs: $CLUSTER/log)"
    fi
  done
  echo "flink.sh: Flink $FLINK_VERSION on localhost:$REST_PORT: 1 JobManager, $TASKMANAGERS TaskManagers x 2 slots (web UI http://localhost:$REST_PORT)" >&2
}

alive_in() {
  # The live pids listed in pid file $1.
  [ -f "$1" ] || return 0
  while read -r pid; do kill -0 "$pid" 2>/dev/null && echo "$pid"; done < "$1"
  true
}

watch() {
  # Until the JobManager goes: start a TaskManager for each one that died (SIGKILL, out of
  # memory), logging it. A lost TaskManager's slots come back on the new one within seconds.
  flink_env
  local jm tm
  jm="$(ls "$CLUSTER"/flink-*-standalonesession.pid)"; tm="${jm%-standalonesession.pid}-taskexecutor.pid"
  while [ -n "$(alive_in "$jm")" ]; do
    local live; live="$(alive_in "$tm" | wc -l)"
    if [ "$live" -lt "$TASKMANAGERS" ]; then
      echo "$(date -u +%FT%TZ) watchdog: $live of $TASKMANAGERS TaskManagers alive; starting one"
      "$FLINK_HOME/bin/taskmanager.sh" start >/dev/null || true
    fi
    sleep 2
  done
}

pids() {
  cat "$CLUSTER"/*.pid 2>/dev/null | while read -r pid; do
    kill -0 "$pid" 2>/dev/null && echo "$pid"
  done
  true
}

descendants() {
  local pid
  for pid in $(pgrep -P "$1" 2>/dev/null || true); do
    descendants "$pid"; echo "$pid"
  done
}

down() {
  local daemons all watchdog
  # The watchdog first: it would start TaskManagers again as they stop.
  watchdog="$(alive_in "$CLUSTER/watchdog.pid")"
  if [ -n "$watchdog" ]; then
    kill "$watchdog" 2>/dev/null || true
    timeout 10 tail --pid="$watchdog" -f /dev/null 2>/dev/null || kill -9 "$watchdog" 2>/dev/null || true
  fi
  daemons="$(pids)"
  [ -z "$daemons" ] && { echo "flink.sh: no cluster running" >&2; return 0; }
  # The TaskManagers' Python SDK workers (and anything they started) go with them.
  all="$(for pid in $daemons; do descendants "$pid"; echo "$pid"; done)"
  kill $all 2>/dev/null || true
  for _ in $(seq 30); do
    alive=""; for pid in $all; do kill -0 "$pid" 2>/dev/null && alive="$alive $pid"; done
    [ -z "$alive" ] && break
    sleep 1
  done
  if [ -n "${alive:-}" ]; then
    kill -9 $alive 2>/dev/null || true
    sleep 1
    left=""; for pid in $alive; do kill -0 "$pid" 2>/dev/null && left="$left $pid"; done
    [ -n "$left" ] && die "could not stop processes$left"
  fi
  rm -f "$CLUSTER"/*.pid
  echo "flink.sh: cluster stopped, no process left" >&2
}

status() {
  local daemons; daemons="$(pids)"
  [ -z "$daemons" ] && { echo "no cluster running"; return 0; }
  echo "cluster on localhost:$REST_PORT, processes: $daemons; TaskManagers registered: $(registered)"
}

case "${1:-}" in
  fetch) fetch_flink; fetch_job_server ;;
  up) up ;;
  down) down ;;
  status) status ;;
  watch) watch ;;
  home) echo "$FLINK_HOME" ;;
  job-server-jar) echo "$JOB_SERVER/job-server.jar" ;;
  *) echo "usage: flink.sh fetch|up|down|status|home|job-server-jar" >&2; exit 2 ;;
esac
