#!/usr/bin/env bash
# A real S3-compatible server (SeaweedFS) on loopback for csdata's tests and users, built once from
# the Go module proxy and cached (driven by `make s3-*`).
#
#   s3.sh fetch       SeaweedFS's `weed` binary, built from its Go module into the cache; offline
#                     after the first time
#   s3.sh up          the server: S3 API on http://127.0.0.1:9000 (access key `csdata`, secret
#                     `csdata-secret`), returns once it answers and buckets `csdata` (writable) and
#                     `csdata-full` (refuses every write, as a full disk would: a bucket quota below
#                     what it holds, enforced by the server) exist. The data is kept between `down`
#                     and `up`; `up --fresh` wipes it first.
#   s3.sh down        stops it, waits until its ports are free; leaves nothing running
#   s3.sh status      what runs now
#
# The credentials are for tests only: everything listens on 127.0.0.1 and nothing else. Ports:
# $CSDATA_S3_PORT (9000), $CSDATA_S3_MASTER_PORT (9333), $CSDATA_S3_VOLUME_PORT (8088),
# $CSDATA_S3_FILER_PORT (8888), and each one's gRPC port 10000 above it.
# The cache is $CSDATA_CACHE_DIR (default ~/.cache/csdata); the server's data, logs and pid file
# live in $CSDATA_CACHE_DIR/s3-server.
set -euo pipefail

SEAWEEDFS_VERSION="${CSDATA_SEAWEEDFS_VERSION:-v0.0.0-20261109003541-7506e5f91cd6}"
CACHE="${CSDATA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/csdata}"
SEAWEEDFS_HOME="$CACHE/seaweedfs-$SEAWEEDFS_VERSION"
WEED="$SEAWEEDFS_HOME/weed"
SERVER="$CACHE/s3-server"
S3_PORT="${CSDATA_S3_PORT:-9000}"
MASTER_PORT="${CSDATA_S3_MASTER_PORT:-9333}"
VOLUME_PORT="${CSDATA_S3_VOLUME_PORT:-8088}"
FILER_PORT="${CSDATA_S3_FILER_PORT:-8888}"
ACCESS_KEY=csdata
SECRET_KEY=csdata-secret
PYTHON="${PYTHON:-python3}"

die() { echo "s3.sh: $*" >&2; exit 1; }

find_go() {
  # $GO if set; else go on PATH, else where the official tarball puts it.
  if [ -n "${GO:-}" ]; then command -v "$GO" 2>/dev/null; return; fi
  command -v go 2>/dev/null || { [ -x /usr/local/go/bin/go ] && echo /usr/local/go/bin/go; }
}

fetch_seaweedfs() {
  [ -x "$WEED" ] && return 0
  local go dir
  go="$(find_go)" || die "Go is missing: it builds SeaweedFS from the Go module proxy (install Go >= 1.26.6, or set GO)"
  echo "s3.sh: building SeaweedFS $SEAWEEDFS_VERSION (github.com/seaweedfs/seaweedfs from the Go module proxy; minutes, once)" >&2
  # `go install pkg@version` refuses the module (it has replace directives): build in its own tree.
  dir="$("$go" mod download -json "github.com/seaweedfs/seaweedfs@$SEAWEEDFS_VERSION" \
         | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')" \
    || die "could not download SeaweedFS $SEAWEEDFS_VERSION from the Go module proxy"
  [ -n "$dir" ] || die "could not download SeaweedFS $SEAWEEDFS_VERSION from the Go module proxy"
  rm -rf "$SEAWEEDFS_HOME.partial" && mkdir -p "$SEAWEEDFS_HOME.partial"
  (cd "$dir" && "$go" build -buildvcs=false -o "$SEAWEEDFS_HOME.partial/weed" ./weed) >&2 \
    || die "could not build SeaweedFS $SEAWEEDFS_VERSION (go build in $dir)"
  rm -rf "$SEAWEEDFS_HOME" && mv "$SEAWEEDFS_HOME.partial" "$SEAWEEDFS_HOME"
}

port_taken() {
  # Whether any of the ports is taken.
  "$PYTHON" - "$@" <<'EOF'
import socket, sys
for port in sys.argv[1:]:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # as Go binds: TIME_WAIT is no owner
    try:
        s.bind(("127.0.0.1", int(port)))
    except OSError:
        sys.exit(0)
    s.close()
sys.exit(1)
EOF
}

# The running server's ports (saved by `up`, so `down` and `status` find it whatever the env says).
ports() {
  if [ -f "$SERVER/ports" ]; then cat "$SERVER/ports"; else echo "$S3_PORT $MASTER_PORT $VOLUME_PORT $FILER_PORT"; fi
}

all_ports() {
  local p; for p in "$@"; do echo "$p"; echo "$((p + 10000))"; done
}

pids() {
  local pid
  pid="$(cat "$SERVER/weed.pid" 2>/dev/null || true)"
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && [ "$(basename "$(ps -o comm= -p "$pid")")" = weed ]; then
    echo "$pid"
  fi
  true
}

# Waits for the S3 API, then makes sure `csdata` exists and `csdata-full` refuses writes. Run with
# the server's pid (to notice it dying) and how many seconds to wait for it.
setup_buckets() {
  "$PYTHON" - "$1" "$2" "$S3_PORT" "$ACCESS_KEY" "$SECRET_KEY" "$WEED" "$SERVER/log" \
    "$MASTER_PORT" "$FILER_PORT" <<'EOF'
import os, subprocess, sys, time
import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

pid, wait, port, key, secret, weed, logdir, master_port, filer_port = sys.argv[1:]
deadline = time.monotonic() + int(wait)
s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", aws_access_key_id=key,
                  aws_secret_access_key=secret, region_name="us-east-1",
                  config=Config(retries={"total_max_attempts": 1}, connect_timeout=2, read_timeout=30))
FULL = "csdata-full"


def shell(commands):
    subprocess.run([weed, f"-logdir={logdir}", "shell", f"-master=127.0.0.1:{master_port}",
                    f"-filer=127.0.0.1:{filer_port}"], input=commands, text=True,
                   capture_output=True, timeout=60, check=True)


def refused():
    """Whether the server refuses a write into csdata-full (as it refuses one over its quota)."""
    try:
        s3.put_object(Bucket=FULL, Key=".csdata-probe", Body=b"probe")
    except ClientError as error:
        if error.response["Error"]["Code"] == "AccessDenied":
            return True
        raise
    s3.delete_object(Bucket=FULL, Key=".csdata-probe")
    return False


def setup():
    have = {bucket["Name"] for bucket in s3.list_buckets()["Buckets"]}
    for bucket in ("csdata", FULL):
        if bucket not in have:
            s3.create_bucket(Bucket=bucket)
    # Ready is writable. Writes wait (in the server) for seconds after the API answers: a fresh
    # server's filer registers with its master; a restarted master hands out no volume for 15 s
    # after it becomes leader (SeaweedFS's warmup, while volume servers report in).
    s3.put_object(Bucket="csdata", Key=".csdata-probe", Body=b"probe")
    s3.delete_object(Bucket="csdata", Key=".csdata-probe")
    if refused():
        return True
    # A 2 MiB filler in a bucket whose quota is 1 MiB: `s3.bucket.quota.enforce` then makes the
    # bucket read-only on the filer, which refuses every write into it from then on.
    shell(f"s3.bucket.quota -name={FULL} -op=remove\n")       # writable again, for the filler
    s3.put_object(Bucket=FULL, Key="filler", Body=os.urandom(2 << 20))
    shell(f"s3.bucket.quota -name={FULL} -op=set -sizeMB=1\n")
    for _ in range(30):                 # the master learns the bucket's size from heartbeats
        shell("s3.bucket.quota.enforce -apply\n")
        if refused():
            return True
        time.sleep(1)
    sys.exit(f"bucket {FULL} still takes writes after its quota was enforced")


while True:
    try:
        os.kill(int(pid), 0)
    except OSError:
        sys.exit("the server exited")
    try:
        if setup():
            break
    except (BotoCoreError, ClientError, subprocess.SubprocessError, OSError) as error:
        if time.monotonic() > deadline:
            sys.exit(f"the S3 API did not get ready in {wait} s: {error}")
        time.sleep(0.5)
EOF
}

up() {
  local fresh=""
  [ "${1:-}" = "--fresh" ] && fresh=1
  if [ -n "$(pids)" ]; then
    read -r S3_PORT MASTER_PORT VOLUME_PORT FILER_PORT <<< "$(ports)"
    if [ -z "$fresh" ] && setup_buckets "$(pids)" 5 2>/dev/null; then
      echo "s3.sh: already running on http://127.0.0.1:$(ports | cut -d' ' -f1)" >&2; return 0
    fi
    down
  fi
  local port
  for port in "$S3_PORT" "$MASTER_PORT" "$VOLUME_PORT" "$FILER_PORT"; do
    [[ "$port" =~ ^[0-9]+$ ]] && [ "$port" -ge 1 ] && [ "$port" -le 55535 ] \
      || die "port $port is not one of 1-55535 (its gRPC port is 10000 above it)"
  done
  for port in $(all_ports "$S3_PORT" "$MASTER_PORT" "$VOLUME_PORT" "$FILER_PORT"); do
    port_taken "$port" && die "port $port is taken (another S3 server or service?): stop it, or set CSDATA_S3_PORT / CSDATA_S3_MASTER_PORT / CSDATA_S3_VOLUME_PORT / CSDATA_S3_FILER_PORT"
  done
  fetch_seaweedfs
  "$PYTHON" -c 'import boto3' 2>/dev/null || die "$PYTHON has no boto3 (it creates the buckets): pip install boto3, or set PYTHON"
  [ -n "$fresh" ] && rm -rf "$SERVER/data"
  mkdir -p "$SERVER/data" "$SERVER/log"
  echo "$S3_PORT $MASTER_PORT $VOLUME_PORT $FILER_PORT" > "$SERVER/ports"
  cat > "$SERVER/identities.json" <<EOF
{"identities": [{"name": "csdata", "credentials": [{"accessKey": "$ACCESS_KEY", "secretKey": "$SECRET_KEY"}],
                 "actions": ["Admin", "Read", "List", "Tagging", "Write"]}]}
EOF
  # Every listener on 127.0.0.1; no telemetry, no Iceberg / Lance / IAM endpoints. Volumes of
  # 1 GiB, 256 of them: each bucket takes 7 at once. Buckets are created explicitly, as on AWS.
  nohup "$WEED" -logtostderr=true server -dir="$SERVER/data" \
    -ip=127.0.0.1 -ip.bind=127.0.0.1 -master.port="$MASTER_PORT" -volume.port="$VOLUME_PORT" \
    -filer.port="$FILER_PORT" -s3 -s3.port="$S3_PORT" -s3.config="$SERVER/identities.json" \
    -s3.port.iceberg=0 -s3.port.lance=0 -s3.iam=false -s3.autoCreateBucket=false \
    -master.telemetry=false -master.electionTimeout=1s -master.volumeSizeLimitMB=1024 -volume.max=256 \
    -volume.preStopSeconds=0 >"$SERVER/log/weed.log" 2>&1 </dev/null &
  echo $! > "$SERVER/weed.pid"
  if ! setup_buckets "$!" 90 2>"$SERVER/log/setup.err"; then
    down >/dev/null 2>&1 || true
    die "the server did not come up: $(tail -n 1 "$SERVER/log/setup.err") (logs: $SERVER/log)"
  fi
  echo "s3.sh: SeaweedFS S3 API on http://127.0.0.1:$S3_PORT (key $ACCESS_KEY, secret $SECRET_KEY; buckets csdata, csdata-full refusing writes; data in $SERVER/data)" >&2
}

down() {
  local pid port alive="" s3 master volume filer
  pid="$(pids)"
  if [ -z "$pid" ]; then
    rm -f "$SERVER/weed.pid"
    echo "s3.sh: no server running" >&2; return 0
  fi
  read -r s3 master volume filer <<< "$(ports)"
  # SIGTERM first. Its S3, filer and volume servers stop within a second, their data on disk; then
  # it waits ~15 s for the filer to flush its change log onto the stopped volume server, in vain
  # (it drops it in the end). So SIGKILL a second after those servers' ports are free, or after 10 s.
  kill "$pid" 2>/dev/null || true
  local waited=0 settled=""
  while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt 100 ]; do
    sleep 0.1; waited=$((waited + 1))
    if [ -z "$settled" ] && ! port_taken $(all_ports "$s3" "$volume" "$filer"); then settled="$waited"; fi
    [ -n "$settled" ] && [ $((waited - settled)) -ge 10 ] && break
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -9 "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && die "could not stop the server (pid $pid)"
  fi
  for port in $(all_ports "$s3" "$master" "$volume" "$filer"); do
    for _ in $(seq 50); do port_taken "$port" || break; sleep 0.2; done
    port_taken "$port" && alive="$alive $port"
  done
  # The unix sockets it serves its own gRPC (and filer, S3) on, which a SIGKILL leaves behind.
  rm -f "/tmp/seaweedfs-master-grpc-$((master + 10000)).sock" "/tmp/seaweedfs-volume-grpc-$((volume + 10000)).sock" \
    "/tmp/seaweedfs-filer-grpc-$((filer + 10000)).sock" "/tmp/seaweedfs-s3-grpc-$((s3 + 10000)).sock" \
    "/tmp/seaweedfs-filer-$filer.sock" "/tmp/seaweedfs-s3-$s3.sock"
  rm -f "$SERVER/weed.pid"
  [ -n "$alive" ] && die "server stopped, but ports$alive are still taken"
  echo "s3.sh: server stopped, no process left (data kept in $SERVER/data)" >&2
}

status() {
  local pid; pid="$(pids)"
  [ -z "$pid" ] && { echo "no server running"; return 0; }
  echo "SeaweedFS S3 API on http://127.0.0.1:$(ports | cut -d' ' -f1), process $pid, data in $SERVER/data"
}

case "${1:-}" in
  fetch) fetch_seaweedfs ;;
  up) [ $# -le 2 ] && [ "${2:---fresh}" = "--fresh" ] || { echo "usage: s3.sh up [--fresh]" >&2; exit 2; }
      up "${2:-}" ;;
  down) down ;;
  status) status ;;
  *) echo "usage: s3.sh fetch|up [--fresh]|down|status" >&2; exit 2 ;;
esac
