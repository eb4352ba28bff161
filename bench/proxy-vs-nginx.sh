#!/usr/bin/env bash
# nibrunnerd's HTTP proxy against nginx, in front of the same backend.
#
# One `nibrunnerd serve --vmm fake` (a running app whose guest is a local
# HTTP server on loopback) and one nginx (a single worker, an upstream
# keepalive pool, access log on and buffered) proxy to that same guest.
# wrk then alternates ours/nginx/ours/nginx (`wrk -t2 -c64 -d15s --latency`)
# and hits the guest directly once, as the ceiling. Plain HTTP/1.1
# keep-alive first, then HTTPS (a self-signed certificate; ours and nginx
# both terminate TLS, the backend stays plain).
#
# Usage: bench/proxy-vs-nginx.sh [seconds per round] (default 15)
# With BASE_REF=<git ref>, the proxy built from that ref runs too, in its
# own rounds between ours and nginx (before/after a change, side by side).
# With EPOLL_PROXY=1, bench/epollproxy (a bare epoll-loop proxy, a
# measuring instrument) gets plain-HTTP rounds of its own after nginx's.
# Needs root for apt-get when nginx-light or wrk is missing, and for the
# network guard it runs under (scripts/netguard.sh). Everything listens on
# 127.0.0.1. Leaves nothing running.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
dur=${1:-15}
conns=${BENCH_CONNECTIONS:-64}

need=()
command -v wrk >/dev/null || need+=(wrk)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
for c in jq openssl mke2fs curl; do command -v "$c" >/dev/null || [ -x "/usr/sbin/$c" ] || need+=("$c"); done
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]}"
  pkgs=()
  for p in "${need[@]}"; do case $p in mke2fs) pkgs+=(e2fsprogs) ;; *) pkgs+=("$p") ;; esac; done
  apt-get install -y "${pkgs[@]}" >/dev/null
fi
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
# The rest runs under the network guard, like every benchmark: a network
# namespace with only loopback (scripts/netguard.sh).
if [ "${NIB_NET_GUARD:-}" != 1 ] && [ -x scripts/netguard.sh ]; then
  exec scripts/netguard.sh "$repo/bench/proxy-vs-nginx.sh" "$@"
fi

# The benchmark owns the CPU: every process it starts runs in a CPU cgroup
# of its own whose weight is the largest the kernel allows, so that on a
# shared machine the neighbours' builds and tests get what the benchmark
# leaves, instead of deciding its tails (docs/bench.md has the runs with
# and without). BENCH_PRIORITY=0 runs without it.
cgroup="" cpu_enabled=""
own_cpu() {
  [ "${BENCH_PRIORITY:-1}" != 0 ] && [ "$(id -u)" = 0 ] || return 0
  local root
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    root=/sys/fs/cgroup
    if ! grep -qw cpu "$root/cgroup.subtree_control"; then
      echo +cpu >"$root/cgroup.subtree_control" 2>/dev/null || return 0
      cpu_enabled=1
    fi
    cgroup=$root/nibbench-$$
    mkdir "$cgroup" 2>/dev/null && echo 10000 >"$cgroup/cpu.weight" || { cgroup=""; return 0; }
  elif [ -f /sys/fs/cgroup/cpu/cpu.shares ]; then
    root=/sys/fs/cgroup/cpu
    cgroup=$root/nibbench-$$
    mkdir "$cgroup" 2>/dev/null && echo 262144 >"$cgroup/cpu.shares" || { cgroup=""; return 0; }
  else
    return 0
  fi
  echo $$ >"$cgroup/cgroup.procs"
  cgroup_root=$root
}
leave_cgroup() {
  if [ -n "$cgroup" ]; then
    echo $$ >"$cgroup_root/cgroup.procs" 2>/dev/null || true
    rmdir "$cgroup" 2>/dev/null || echo "bench: could not remove $cgroup (a process of the benchmark outlived it: $(cat "$cgroup/cgroup.procs" 2>/dev/null | tr '\n' ' '))" >&2
  fi
  # Give the root back the controllers it had (refused while another group uses it).
  [ "${cpu_enabled:-}" = 1 ] && { echo -cpu >/sys/fs/cgroup/cgroup.subtree_control; } 2>/dev/null || true
}
own_cpu

work=$(mktemp -d /tmp/nibbench.XXXXXX)
pids=()
cleanup() {
  [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
  # start_ours runs in a command substitution, so its pids are in files.
  for f in "$work"/*.serve-pid; do
    [ -e "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
  done
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  # Guests outlive their daemon by design: stop them by their pidfiles.
  for f in "$work"/*/run/nibrunner/*.pid; do
    [ -e "$f" ] && kill "$(jq -r .pid "$f")" 2>/dev/null || true
  done
  rm -rf "$work"
  leave_cgroup
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

go build -o "$work/nibrunnerd" ./cmd/nibrunnerd
[ "${EPOLL_PROXY:-}" = 1 ] && go build -o "$work/epollproxy" ./bench/epollproxy
if [ -n "${BASE_REF:-}" ]; then
  mkdir -p "$work/base-src"
  git archive "$BASE_REF" | tar -x -C "$work/base-src"
  (cd "$work/base-src" && go build -o "$work/nibrunnerd-base" ./cmd/nibrunnerd)
fi
mkdir -p "$work/artifacts/apps"
cp /bin/true "$work/artifacts/apps/app"
sum=$(sha256sum "$work/artifacts/apps/app" | cut -d' ' -f1)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=bench.example.com \
  -addext subjectAltName=DNS:bench.example.com -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null

# start_ours NAME PORT [tls] (NAME base…: the BASE_REF build): a host of its own under $work/NAME, one running
# app answering for bench.example.com; prints the guest's address.
start_ours() {
  local name=$1 port=$2 tls=${3:-} root="$work/$1" bin="$work/nibrunnerd"
  case $name in base*) bin="$work/nibrunnerd-base" ;; esac
  "$bin" install --root "$root" --no-guest-image >/dev/null
  local cfg="$root/etc/nibrunner/config.toml"
  sed -i -e "0,/^store_url = .*/s||store_url = \"$work/artifacts\"|" "$cfg"
  printf '\n[proxy.http]\nlisten_address = "127.0.0.1"\nport = %d\n' "$port" >>"$cfg"
  [ -n "$tls" ] && printf '\n[proxy.http.tls]\ncertificate = "%s"\nkey = "%s"\n' "$work/cert.pem" "$work/key.pem" >>"$cfg"
  local desired="$root/var/lib/nibrunner/desired/desired.json"
  mkdir -p "$(dirname "$desired")"
  cat >"$desired" <<JSON
{"hostId": "bench", "checkpoints": [], "exports": [],
 "volumes": [{"volumeId": "v", "appId": "bench", "sizeBytes": 16777216, "desiredState": "present"}],
 "instances": [{
  "appId": "bench", "deploymentId": "d1", "volumeId": "v", "desiredState": "running",
  "layers": [{"kind": "executable", "digest": "$sum", "objectKey": "apps/app", "destinationPath": "/app/app"}],
  "config": {"httpPort": 8080,
    "command": {"program": "/app/app", "args": [], "workingDirectory": "/data", "environment": {}},
    "resources": {"vcpuCount": 1, "memoryMib": 64},
    "healthCheck": {"kind": "tcp", "intervalMs": 1000, "timeoutMs": 1000, "gracePeriodMs": 10000, "healthyThreshold": 1, "unhealthyThreshold": 3},
    "restartPolicy": {"maxRestarts": 1, "initialBackoffMs": 1000, "maxBackoffMs": 1000, "backoffFactor": 1, "resetAfterMs": 60000}},
  "hostnames": [{"hostname": "bench.example.com", "kind": "platform"}]}]}
JSON
  # In a session of its own, as nginx (which daemonizes) and the guest
  # are: with autogroup scheduling each session weighs the same, and in
  # the script's session ours would share one share with wrk.
  setsid "$bin" serve --config "$cfg" --vmm fake --reserve-mib 0 >"$root.log" 2>&1 &
  pids+=($!)
  echo $! >"$work/$name.serve-pid"
  local report="$root/var/lib/nibrunner/reported.json"
  for _ in $(seq 300); do
    [ "$(jq -r '.instances[0].state // empty' "$report" 2>/dev/null)" = running ] && break
    sleep 0.1
  done
  local scheme=http
  [ -n "$tls" ] && scheme=https
  for _ in $(seq 100); do
    curl -ksf -o /dev/null --resolve "bench.example.com:$port:127.0.0.1" "$scheme://bench.example.com:$port/" && break
    sleep 0.1
  done
  jq -r .endpoint "$root/run/nibrunner/bench.pid"
}

# start_nginx PORT BACKEND [tls]: one worker, keepalive upstream.
start_nginx() {
  local port=$1 backend=$2 tls=${3:-} listen
  listen="listen 127.0.0.1:$port;"
  [ -n "$tls" ] && listen="listen 127.0.0.1:$port ssl; ssl_certificate $work/cert.pem; ssl_certificate_key $work/key.pem;"
  [ -f "$work/nginx.pid" ] && { kill "$(cat "$work/nginx.pid")"; sleep 0.5; }
  cat >"$work/nginx.conf" <<NGINX
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log $work/nginx-access.log combined buffer=64k flush=1s;
  client_body_temp_path $work/nginx-body;
  proxy_temp_path $work/nginx-proxy;
  upstream app { server $backend; keepalive 64; }
  server {
    $listen
    server_name bench.example.com;
    location / {
      proxy_pass http://app;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host \$host;
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto \$scheme;
    }
  }
}
NGINX
  "$nginx_bin" -c "$work/nginx.conf" -p "$work"
  for _ in $(seq 50); do curl -ksf -o /dev/null -H 'Host: bench.example.com' "${tls:+https}${tls:-http}://127.0.0.1:$port/" && break; sleep 0.1; done
}

# ticks PID...: CPU time (user + system, clock ticks) the processes used.
ticks() {
  local t=0 p
  for p in "$@"; do
    [ -r "/proc/$p/stat" ] && t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat")))
  done
  echo "$t"
}

# round LABEL URL [PID...]: one wrk run; prints req/s, p50, p99 and the
# CPU the PIDs (the proxy under test) spent per request, which the other
# builds on this shared machine disturb far less than throughput.
round() {
  local label=$1 url=$2 out rps p50 p99 reqs t0 t1 cpu=- errs
  shift 2
  t0=$(ticks "$@")
  out=$(wrk -t2 -c"$conns" -d"${dur}s" --latency -H 'Host: bench.example.com' "$url")
  t1=$(ticks "$@")
  rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$out")
  p50=$(awk '$1 == "50%" {print $2}' <<<"$out")
  p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
  reqs=$(awk '/requests in/ {print $1}' <<<"$out")
  errs=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
  [ $# -gt 0 ] && [ "${reqs:-0}" -gt 0 ] && cpu=$(awk -v t=$((t1 - t0)) -v r="$reqs" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", t * 1e6 / hz / r }')
  printf '%-14s %12s req/s  p50 %8s  p99 %8s  cpu %6s us/req%s\n' "$label" "$rps" "$p50" "$p99" "$cpu" "${errs:+  ($errs answers were not 2xx: this round does not count)}"
  [ -z "$errs" ] && echo "$label $rps $p50 $p99 $cpu" >>"$work/results"
  return 0
}

nginx_pids() { local m; m=$(cat "$work/nginx.pid"); echo "$m" $(pgrep -P "$m"); }

# ms converts wrk's latency (e.g. 812.00us, 1.20ms, 1.01s) to milliseconds.
ms() { awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n += 0; else if (v ~ /s$/) n *= 1000; print n }'; }

summary() {
  [ -s "$work/results" ] || return 0
  local kind=$1
  awk -v k="$kind" '$1 ~ "^"k"-" { print }' "$work/results" | while read -r label rps p50 p99 cpu; do
    echo "$label $rps $(ms "$p50") $(ms "$p99") $cpu"
  done | awk -v k="$kind" '
    $1 == k"-ours" { or += $2; op = ($4 > op ? $4 : op); oc += $5; on++ }
    $1 == k"-nginx" { nr += $2; np = ($4 > np ? $4 : np); nc += $5; nn++ }
    $1 == k"-base" { br += $2; bp = ($4 > bp ? $4 : bp); bc += $5; bn++ }
    $1 == k"-epoll" { er += $2; ep = ($4 > ep ? $4 : ep); ec += $5; en++ }
    END {
      if (on && nn) printf "%s: ours %.0f req/s (worst p99 %.2f ms, %.1f us CPU/req), nginx %.0f req/s (worst p99 %.2f ms, %.1f us CPU/req): throughput %.2fx nginx, p99 %.2fx nginx, CPU per request %.2fx nginx\n", k, or/on, op, oc/on, nr/nn, np, nc/nn, (or/on)/(nr/nn), op/np, (oc/on)/(nc/nn)
      if (en && nn) printf "%s: epollproxy %.0f req/s (worst p99 %.2f ms, %.1f us CPU/req): throughput %.2fx nginx, p99 %.2fx nginx, CPU per request %.2fx nginx\n", k, er/en, ep, ec/en, (er/en)/(nr/nn), ep/np, (ec/en)/(nc/nn)
      if (bn && nn) printf "%s: base %.0f req/s (worst p99 %.2f ms, %.1f us CPU/req): throughput %.2fx nginx, p99 %.2fx nginx; ours is %.2fx base throughput, %.2fx its CPU per request\n", k, br/bn, bp, bc/bn, (br/bn)/(nr/nn), bp/np, (or/on)/(br/bn), (oc/on)/(bc/bn)
    }'
}

echo "machine: $(nproc) vCPU, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(. /etc/os-release && echo "$PRETTY_NAME"), $(go version | cut -d' ' -f3), load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "$cgroup" ]; then echo "priority: every process of the benchmark runs in $cgroup, the largest CPU weight (BENCH_PRIORITY=0: none)"; else echo "priority: none (the neighbours on this machine share the CPU equally)"; fi
echo "command: wrk -t2 -c$conns -d${dur}s --latency -H 'Host: bench.example.com' URL"
echo

# rounds KIND SCHEME: ours, (base,) nginx, twice, alternating.
rounds() {
  local kind=$1 scheme=$2 i
  for i in 1 2; do
    round "$kind-ours" "$scheme://127.0.0.1:$ours/" "$ours_pid"
    [ -n "${BASE_REF:-}" ] && round "$kind-base" "$scheme://127.0.0.1:$base/" "$base_pid"
    round "$kind-nginx" "$scheme://127.0.0.1:$ng/" $(nginx_pids)
    if [ "${EPOLL_PROXY:-}" = 1 ] && [ "$kind" = http ]; then round "$kind-epoll" "$scheme://127.0.0.1:$ep/" "$ep_pid"; fi
  done
}

ours=$(free_port)
backend=$(start_ours plain "$ours")
ours_pid=$(cat "$work/plain.serve-pid")
[ -n "${BASE_REF:-}" ] && base=$(free_port) && start_ours base "$base" >/dev/null && base_pid=$(cat "$work/base.serve-pid")
ng=$(free_port)
start_nginx "$ng" "$backend"
if [ "${EPOLL_PROXY:-}" = 1 ]; then
  ep=$(free_port)
  "$work/epollproxy" -listen "127.0.0.1:$ep" -backend "$backend" &
  ep_pid=$!
  pids+=("$ep_pid")
  for _ in $(seq 50); do curl -sf -o /dev/null -H 'Host: bench.example.com' "http://127.0.0.1:$ep/" && break; sleep 0.1; done
fi
echo "HTTP/1.1 keep-alive (backend $backend)"
rounds http http
round http-direct "http://$backend/"

ours=$(free_port)
backend=$(start_ours tls "$ours" tls)
ours_pid=$(cat "$work/tls.serve-pid")
[ -n "${BASE_REF:-}" ] && base=$(free_port) && start_ours base-tls "$base" tls >/dev/null && base_pid=$(cat "$work/base-tls.serve-pid")
ng=$(free_port)
start_nginx "$ng" "$backend" tls
echo
echo "HTTPS, HTTP/1.1 keep-alive (backend $backend)"
rounds https https
echo
summary http
summary https
