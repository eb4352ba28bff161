#!/usr/bin/env bash
# nibrunnerd's HTTP proxy against nginx, in front of the same backend.
#
# One `nibrunnerd serve --vmm fake` (running apps whose guests are local
# HTTP servers on loopback) and one nginx (a single worker, an upstream
# keepalive pool per app, access log on and buffered) proxy to the same
# guests, both plain processes, each in a session of its own. wrk
# alternates ours/nginx (`wrk -t2 --latency`, 10 s a run) ROUNDS times
# (default 5; issue 41 asks for at least 3) in each of four settings
# (SETTINGS, default all four):
#   c64       64 connections, one app
#   c1000     1,000 connections, one app
#   hosts200  200 apps, each its hostname, 64 connections asking them in turn
#   tls       64 connections over TLS on both (one certificate, TLS 1.3
#             with TLS_AES_128_GCM_SHA256 on both; the guest stays plain)
# and prints, per setting, the median throughput and the median p99 of
# each, their ratios, the spread of each one's rounds (a ratio inside
# that spread is noise), and the load average beside them.
#
# Usage: bench/proxy-vs-nginx.sh [seconds per run] (default 10)
# With BASE_REF=<git ref>, the proxy built from that ref runs too, in its
# own runs between ours and nginx (before/after a change, side by side).
# With OURS_GOMAXPROCS=N, nibrunnerd runs with N Ps.
# With EPOLL_PROXY=1, bench/epollproxy (a bare epoll-loop proxy, a
# measuring instrument) gets runs of its own in the c64 setting, in a
# session of its own as nginx and ours run, with EPOLL_GOMAXPROCS Ps
# (default one per core).
# With NGINX_TWICE=1, a second nginx, configured as the first, gets runs
# of its own ("nginx2"): how far nginx's ratios to itself swing, the
# noise under every ratio this prints.
# BENCH_PRIORITY=1 runs everything in one CPU cgroup of the largest
# weight (the issue 13 measurement); by default the proxies are plain
# processes, as the kernel schedules them on a host (issue 41).
# Needs root for apt-get when nginx-light or wrk is missing, and for the
# network guard it runs under (scripts/netguard.sh). Everything listens on
# 127.0.0.1. Leaves nothing running.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
dur=${1:-10}
rounds_n=${ROUNDS:-5}
settings=${SETTINGS:-c64 c1000 hosts200 tls}
conns=64

need=()
command -v wrk >/dev/null || need+=(wrk)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
for c in jq openssl mke2fs mksquashfs curl; do command -v "$c" >/dev/null || [ -x "/usr/sbin/$c" ] || need+=("$c"); done
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]}"
  pkgs=()
  for p in "${need[@]}"; do case $p in mke2fs) pkgs+=(e2fsprogs) ;; mksquashfs) pkgs+=(squashfs-tools) ;; *) pkgs+=("$p") ;; esac; done
  apt-get install -y "${pkgs[@]}" >/dev/null
fi
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
# The rest runs under the network guard, like every benchmark: a network
# namespace with only loopback (scripts/netguard.sh).
if [ "${NIB_NET_GUARD:-}" != 1 ] && [ -x scripts/netguard.sh ]; then
  exec scripts/netguard.sh "$repo/bench/proxy-vs-nginx.sh" "$@"
fi

# With BENCH_PRIORITY=1 the benchmark owns the CPU: every process it starts runs in a CPU cgroup
# of its own whose weight is the largest the kernel allows, so that on a
# shared machine the neighbours' builds and tests get what the benchmark
# leaves, instead of deciding its tails (docs/bench.md has the runs with
# and without). Off unless BENCH_PRIORITY=1: issue 41 measures plain
# processes.
cgroup="" cpu_enabled=""
own_cpu() {
  [ "${BENCH_PRIORITY:-0}" != 0 ] && [ "$(id -u)" = 0 ] || return 0
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
  for f in "$work"/nginx*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true; done
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

# 1,000 connections through a proxy hold 2,000 descriptors, and wrk 1,000.
ulimit -n "$(ulimit -Hn)"
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge 4096 ] || echo "bench: only $(ulimit -n) open files allowed; the 1,000-connection setting needs 4,096" >&2

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
  -addext subjectAltName=DNS:bench.example.com,DNS:*.example.com -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null

# host I: the hostname of app I (app 0 is bench.example.com).
host() { if [ "$1" = 0 ]; then echo bench.example.com; else echo "app$1.example.com"; fi; }

# start_ours NAME PORT APPS [tls] (NAME base…: the BASE_REF build): a host
# of its own under $work/NAME with APPS running apps, app I answering for
# host I; writes the guests' addresses, one a line, to $work/NAME.backends.
# Its connection caps are raised to nginx's worker_connections (4096) so
# that neither proxy refuses or queues what the other serves.
start_ours() {
  local name=$1 port=$2 apps=$3 tls=${4:-} root="$work/$1" bin="$work/nibrunnerd" i sep=""
  case $name in base*) bin="$work/nibrunnerd-base" ;; esac
  "$bin" install --root "$root" --no-guest-image >/dev/null
  local cfg="$root/etc/nibrunner/config.toml"
  sed -i -e "0,/^store_url = .*/s||store_url = \"$work/artifacts\"|" "$cfg"
  printf '\n[proxy.http]\nlisten_address = "127.0.0.1"\nport = %d\nmax_connections = 4096\nmax_connections_per_client = 4096\nmax_backend_connections_per_app = 4096\n' "$port" >>"$cfg"
  [ -n "$tls" ] && printf '\n[proxy.http.tls]\ncertificate = "%s"\nkey = "%s"\n' "$work/cert.pem" "$work/key.pem" >>"$cfg"
  local desired="$root/var/lib/nibrunner/desired/desired.json"
  mkdir -p "$(dirname "$desired")"
  {
    echo '{"hostId": "bench", "checkpoints": [], "exports": [], "volumes": ['
    for ((i = 0; i < apps; i++)); do
      printf '%s{"volumeId": "v%d", "appId": "app%d", "sizeBytes": 16777216, "desiredState": "present"}\n' "$sep" "$i" "$i"
      sep=,
    done
    echo '], "instances": ['
    sep=""
    for ((i = 0; i < apps; i++)); do
      cat <<JSON
$sep{"appId": "app$i", "deploymentId": "d1", "volumeId": "v$i", "desiredState": "running",
  "layers": [{"kind": "executable", "digest": "$sum", "objectKey": "apps/app", "destinationPath": "/app/app"}],
  "config": {"httpPort": 8080,
    "command": {"program": "/app/app", "args": [], "workingDirectory": "/data", "environment": {}},
    "resources": {"vcpuCount": 1, "memoryMib": 64},
    "healthCheck": {"kind": "tcp", "intervalMs": 10000, "timeoutMs": 1000, "gracePeriodMs": 10000, "healthyThreshold": 1, "unhealthyThreshold": 3},
    "restartPolicy": {"maxRestarts": 1, "initialBackoffMs": 1000, "maxBackoffMs": 1000, "backoffFactor": 1, "resetAfterMs": 60000}},
  "hostnames": [{"hostname": "$(host "$i")", "kind": "platform"}]}
JSON
      sep=,
    done
    echo ']}'
  } >"$desired"
  # In a session of its own, as nginx (which daemonizes) and the guests
  # are: with autogroup scheduling each session weighs the same, and in
  # the script's session ours would share one share with wrk.
  # OURS_GOMAXPROCS=N runs the daemon with N Ps (its guests, which nginx
  # proxies to as well, keep the default: the fake VMM gives them an
  # environment of their own).
  if [ -n "${OURS_GOMAXPROCS:-}" ]; then
    GOMAXPROCS=$OURS_GOMAXPROCS setsid "$bin" serve --config "$cfg" --vmm fake --reserve-mib 0 >"$root.log" 2>&1 &
  else
    setsid "$bin" serve --config "$cfg" --vmm fake --reserve-mib 0 >"$root.log" 2>&1 &
  fi
  pids+=($!)
  echo $! >"$work/$name.serve-pid"
  local report="$root/var/lib/nibrunner/reported.json"
  for _ in $(seq 1200); do
    [ "$(jq -r '[.instances[]? | select(.state == "running")] | length' "$report" 2>/dev/null)" = "$apps" ] && break
    sleep 0.1
  done
  local scheme=http
  [ -n "$tls" ] && scheme=https
  for ((i = 0; i < apps; i++)); do
    for _ in $(seq 100); do
      curl -ksf -o /dev/null --resolve "$(host "$i"):$port:127.0.0.1" "$scheme://$(host "$i"):$port/" && break
      sleep 0.1
    done
  done
  for ((i = 0; i < apps; i++)); do jq -r .endpoint "$root/run/nibrunner/app$i.pid"; done >"$work/$name.backends"
}

# start_nginx PORT BACKENDS-FILE [tls]: one worker, a keepalive upstream
# per app (128 idle connections, as ours keeps per app), host I to the
# backend on line I+1. The app gets from nginx the fields it gets from
# ours: Host, X-Forwarded-For, -Proto and -Host, and an X-Request-Id
# (nginx's $request_id); without the last two the guest parsed two
# fields fewer a request behind nginx, and nginx did less work than ours
# (docs/bench.md, "The same request to the app").
start_nginx() {
  local port=$1 backends=$2 tls=${3:-} name=${4:-nginx} listen i=0 b
  listen="listen 127.0.0.1:$port;"
  # The same certificate, and the same TLS 1.3 cipher suite Go's server
  # picks on a CPU with AES instructions (OpenSSL's default order would
  # give wrk AES-256).
  [ -n "$tls" ] && listen="listen 127.0.0.1:$port ssl; ssl_certificate $work/cert.pem; ssl_certificate_key $work/key.pem; ssl_protocols TLSv1.2 TLSv1.3; ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256;"
  [ -f "$work/$name.pid" ] && stop_nginx "$name"
  {
    cat <<NGINX
worker_processes 1;
worker_rlimit_nofile 16384;
pid $work/$name.pid;
error_log $work/$name-error.log warn;
events { worker_connections 4096; }
http {
  access_log $work/$name-access.log combined buffer=64k flush=1s;
  client_body_temp_path $work/$name-body;
  proxy_temp_path $work/$name-proxy;
  server_names_hash_bucket_size 64;
NGINX
    while read -r b; do
      cat <<NGINX
  upstream app$i { server $b; keepalive 128; }
  server {
    $listen
    server_name $(host $i);
    location / {
      proxy_pass http://app$i;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host \$host;
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto \$scheme;
      proxy_set_header X-Forwarded-Host \$host;
      proxy_set_header X-Request-Id \$request_id;
    }
  }
NGINX
      i=$((i + 1))
    done <"$backends"
    echo '}'
  } >"$work/$name.conf"
  "$nginx_bin" -c "$work/$name.conf" -p "$work"
  for _ in $(seq 50); do curl -ksf -o /dev/null --resolve "bench.example.com:$port:127.0.0.1" "${tls:+https}${tls:-http}://bench.example.com:$port/" && break; sleep 0.1; done
}

stop_nginx() {
  local m name=${1:-nginx}
  m=$(cat "$work/$name.pid" 2>/dev/null) || return 0
  kill "$m" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$m" 2>/dev/null || break; sleep 0.1; done
  rm -f "$work/$name.pid"
}

# stop_ours NAME: the daemon, then its guests by their pidfiles.
stop_ours() {
  local f p
  p=$(cat "$work/$1.serve-pid")
  kill "$p" 2>/dev/null || true
  wait "$p" 2>/dev/null || true
  for f in "$work/$1"/run/nibrunner/*.pid; do
    [ -e "$f" ] && kill "$(jq -r .pid "$f")" 2>/dev/null || true
  done
  rm -f "$work/$1.serve-pid"
}

# ticks PID...: CPU time (user + system, clock ticks) the processes used.
ticks() {
  local t=0 p
  for p in "$@"; do
    [ -r "/proc/$p/stat" ] && t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat")))
  done
  echo "$t"
}

# guest_pids SETTING: the guests of the setting's host (both proxies'
# backends).
guest_pids() {
  local f
  for f in "$work/ours-$1"/run/nibrunner/*.pid; do [ -e "$f" ] && jq -r .pid "$f"; done
}

# cpu_idle: the machine's idle and total clock ticks so far (/proc/stat).
cpu_idle() { awk '$1 == "cpu" { t = 0; for (i = 2; i <= NF; i++) t += $i; print $5 + $6, t; exit }' /proc/stat; }

# ms converts wrk's latency (e.g. 812.00us, 1.20ms, 1.01s) to milliseconds.
ms() { awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n += 0; else if (v ~ /s$/) n *= 1000; print n }'; }

# round SETTING WHO URL [PID...]: one wrk run; prints req/s, p50, p99,
# the CPU the PIDs (the proxy under test) spent per request and the load
# average, and records them.
round() {
  local setting=$1 who=$2 url=$3 out rps p50 p99 reqs t0 t1 cpu=- errs sock load g0 g1 gcpu=- i0 i1 idle=-
  shift 3
  local args=(-t2 -c"$conns" -d"${dur}s" --latency) guests
  if [ "$setting" = hosts200 ]; then args+=(-s "$work/hosts.lua"); else args+=(-H 'Host: bench.example.com'); fi
  guests=$(guest_pids "$setting")
  t0=$(ticks "$@") g0=$(ticks $guests) i0=$(cpu_idle)
  out=$(wrk "${args[@]}" "$url")
  t1=$(ticks "$@") g1=$(ticks $guests) i1=$(cpu_idle)
  load=$(cut -d' ' -f1 /proc/loadavg)
  rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$out")
  p50=$(awk '$1 == "50%" {print $2}' <<<"$out")
  p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
  reqs=$(awk '/requests in/ {print $1}' <<<"$out")
  errs=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
  sock=$(awk '/Socket errors/ {print}' <<<"$out")
  [ $# -gt 0 ] && [ "${reqs:-0}" -gt 0 ] && cpu=$(awk -v t=$((t1 - t0)) -v r="$reqs" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", t * 1e6 / hz / r }')
  # What the rest of the machine did meanwhile: the guests' CPU a request,
  # and the share of both cores left idle (a proxy that is cheaper a
  # request gains nothing where the guests or idle gaps set the pace).
  [ "${reqs:-0}" -gt 0 ] && gcpu=$(awk -v t=$((g1 - g0)) -v r="$reqs" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", t * 1e6 / hz / r }')
  idle=$(awk -v a="$i0" -v b="$i1" 'BEGIN { split(a, x, " "); split(b, y, " "); if (y[2] > x[2]) printf "%.1f", 100 * (y[1] - x[1]) / (y[2] - x[2]); else print "-" }')
  printf '%-9s %-6s %10s req/s  p50 %8s  p99 %8s  cpu %6s us/req  guests %6s us/req  idle %5s%%  load %5s%s%s\n' "$setting" "$who" "$rps" "$p50" "$p99" "$cpu" "$gcpu" "$idle" "$load" \
    "${errs:+  ($errs answers were not 2xx: this run does not count)}" "${sock:+  ($sock)}"
  [ -z "$errs" ] && echo "$setting $who $rps $(ms "$p50") $(ms "$p99") $cpu $load $gcpu $idle" >>"$work/results"
  return 0
}

nginx_pids() { local m; m=$(cat "$work/${1:-nginx}.pid"); echo "$m" $(pgrep -P "$m"); }

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# spread SETTING WHO: the lowest and highest throughput and p99 of WHO's
# rounds in SETTING.
spread() {
  awk -v s="$1" -v w="$2" '$1 == s && $2 == w { if (n == 0 || $3 < r0) r0 = $3; if (n == 0 || $3 > r1) r1 = $3; if (n == 0 || $5 < p0) p0 = $5; if (n == 0 || $5 > p1) p1 = $5; n++ }
    END { if (n) printf "%.0f-%.0f req/s, p99 %.2f-%.2f ms", r0, r1, p0, p1 }' "$work/results"
}

# summary SETTING: the medians of each proxy's runs and ours over nginx's.
summary() {
  local s=$1 who rps p99 cpu n nr np
  nr=$(awk -v s="$s" '$1 == s && $2 == "nginx" { print $3 }' "$work/results" | median)
  np=$(awk -v s="$s" '$1 == s && $2 == "nginx" { print $5 }' "$work/results" | median)
  for who in ours base epoll nginx2; do
    n=$(awk -v s="$s" -v w="$who" '$1 == s && $2 == w' "$work/results" | wc -l)
    [ "$n" -gt 0 ] || continue
    rps=$(awk -v s="$s" -v w="$who" '$1 == s && $2 == w { print $3 }' "$work/results" | median)
    p99=$(awk -v s="$s" -v w="$who" '$1 == s && $2 == w { print $5 }' "$work/results" | median)
    cpu=$(awk -v s="$s" -v w="$who" '$1 == s && $2 == w { print $6 }' "$work/results" | median)
    awk -v s="$s" -v w="$who" -v n="$n" -v r="$rps" -v p="$p99" -v c="$cpu" -v nr="$nr" -v np="$np" \
      -v nc="$(awk -v s="$s" '$1 == s && $2 == "nginx" { print $6 }' "$work/results" | median)" \
      -v l="$(awk -v s="$s" '$1 == s { print $7 }' "$work/results" | sort -g | sed -n '1p;$p' | paste -sd-)" \
      -v sw="$(spread "$s" "$who")" -v sn="$(spread "$s" nginx)" \
      -v gw="$(awk -v s="$s" -v w="$who" '$1 == s && $2 == w { print $8 }' "$work/results" | median)" \
      -v gn="$(awk -v s="$s" '$1 == s && $2 == "nginx" { print $8 }' "$work/results" | median)" \
      -v iw="$(awk -v s="$s" -v w="$who" '$1 == s && $2 == w { print $9 }' "$work/results" | median)" \
      -v ig="$(awk -v s="$s" '$1 == s && $2 == "nginx" { print $9 }' "$work/results" | median)" \
      'BEGIN { printf "%-9s %s (median of %d): %.0f req/s, p99 %.2f ms, %s us CPU/req; nginx %.0f req/s, p99 %.2f ms, %s us CPU/req: throughput %.2fx nginx, p99 %.2fx nginx (rounds: %s %s, nginx %s; guests %s vs %s us/req, idle %s%% vs %s%%; load %s)\n", s, w, n, r, p, c, nr, np, nc, (nr > 0 ? r / nr : 0), (np > 0 ? p / np : 0), w, sw, sn, gw, gn, iw, ig, l }'
  done
}

# cipher PORT: the TLS version and cipher suite wrk's library gets.
cipher() {
  openssl s_client -connect "127.0.0.1:$1" -servername bench.example.com </dev/null 2>/dev/null | awk '/^New,/ { print $2, $NF }'
}

echo "machine: $(nproc) vCPU, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r), $(go version | cut -d' ' -f3), $("$nginx_bin" -v 2>&1 | cut -d' ' -f3), autogroup $(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null || echo -), load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "$cgroup" ]; then echo "priority: every process of the benchmark runs in $cgroup, the largest CPU weight"; else echo "priority: none, plain processes (BENCH_PRIORITY=1: one cgroup of the largest weight)"; fi
echo "command: wrk -t2 -c(64|1000) -d${dur}s --latency (-H 'Host: bench.example.com' | -s hosts.lua) URL, $rounds_n alternating rounds per setting"
{
  echo 'local hosts, i = {}, 0'
  for ((i = 0; i < 200; i++)); do echo "hosts[$((i + 1))] = \"$(host "$i")\""; done
  echo 'request = function() i = i % #hosts + 1; return wrk.format("GET", "/", { ["Host"] = hosts[i] }) end'
} >"$work/hosts.lua"

for setting in $settings; do
  apps=1 tls="" scheme=http conns=64
  case $setting in
    c64) ;;
    c1000) conns=1000 ;;
    hosts200) apps=200 ;;
    tls) tls=tls scheme=https ;;
    *) echo "bench: no setting $setting (c64, c1000, hosts200, tls)" >&2; exit 2 ;;
  esac
  ours=$(free_port)
  start_ours "ours-$setting" "$ours" "$apps" "$tls"
  ours_pid=$(cat "$work/ours-$setting.serve-pid")
  if [ -n "${BASE_REF:-}" ]; then
    base=$(free_port)
    start_ours "base-$setting" "$base" "$apps" "$tls"
    base_pid=$(cat "$work/base-$setting.serve-pid")
  fi
  ng=$(free_port)
  start_nginx "$ng" "$work/ours-$setting.backends" "$tls"
  ep=""
  if [ "${EPOLL_PROXY:-}" = 1 ] && [ "$setting" = c64 ]; then
    ep=$(free_port)
    GOMAXPROCS=${EPOLL_GOMAXPROCS:-$(nproc)} setsid "$work/epollproxy" -listen "127.0.0.1:$ep" -backend "$(head -1 "$work/ours-$setting.backends")" &
    ep_pid=$!
    pids+=("$ep_pid")
    for _ in $(seq 50); do curl -sf -o /dev/null -H 'Host: bench.example.com' "http://127.0.0.1:$ep/" && break; sleep 0.1; done
  fi
  ng2=""
  if [ "${NGINX_TWICE:-}" = 1 ]; then
    ng2=$(free_port)
    start_nginx "$ng2" "$work/ours-$setting.backends" "$tls" nginx2
  fi
  echo
  echo "$setting: $conns connections, $apps app(s), $scheme (guests $(head -1 "$work/ours-$setting.backends")…)"
  if [ -n "$tls" ]; then echo "  TLS: ours $(cipher "$ours"), nginx $(cipher "$ng")"; fi
  for ((r = 0; r < rounds_n; r++)); do
    round "$setting" ours "$scheme://127.0.0.1:$ours/" "$ours_pid"
    if [ -n "${BASE_REF:-}" ]; then round "$setting" base "$scheme://127.0.0.1:$base/" "$base_pid"; fi
    round "$setting" nginx "$scheme://127.0.0.1:$ng/" $(nginx_pids)
    if [ -n "$ep" ]; then round "$setting" epoll "http://127.0.0.1:$ep/" "$ep_pid"; fi
    if [ -n "$ng2" ]; then round "$setting" nginx2 "$scheme://127.0.0.1:$ng2/" $(nginx_pids nginx2); fi
  done
  stop_nginx
  if [ -n "$ng2" ]; then stop_nginx nginx2; fi
  stop_ours "ours-$setting"
  if [ -n "${BASE_REF:-}" ]; then stop_ours "base-$setting"; fi
  if [ -n "$ep" ]; then kill "$ep_pid" 2>/dev/null || true; wait "$ep_pid" 2>/dev/null || true; ep=""; fi
done

echo
echo "medians, ours over nginx:"
for setting in $settings; do summary "$setting"; done
