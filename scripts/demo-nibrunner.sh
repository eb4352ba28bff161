#!/usr/bin/env bash
# The nibrunnerd part of `make demo` (scripts/demo.sh calls it with the bin
# folder): one on-request app in a real microVM on this machine — it boots,
# answers at its host port, sleeps to a snapshot and wakes with its memory
# and its volume intact. Without root or QEMU it says so and shows what it
# can: the document check and the fake VMM (apps as local processes).
#
# Leaves nothing running: the guest is stopped through desired.json before
# the daemon stops (guests outlive their daemon by design).
#
# Each part records what it did (ran, skipped and why, failed and why) in
# $NIB_DEMO_SUMMARY (scripts/demo-summary.sh); scripts/demo.sh prints those
# lines as the demo's closing summary. Run alone, this script prints them
# itself at the end.
set -uo pipefail
bin=$(cd "${1:-bin}" && pwd)
repo=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/demo-summary.sh
. "$repo/scripts/demo-summary.sh"
# QEMU's unix sockets need a short path, so not $TMPDIR's depths.
work=$(mktemp -d /tmp/nibdemo.XXXXXX)
standalone=""
if [ -z "${NIB_DEMO_SUMMARY:-}" ]; then
  export NIB_DEMO_SUMMARY="$work/summary.tsv"
  standalone=1
fi
# The guest image (Debian's kernel, our initramfs and base) is kept across
# demos: the first run downloads the kernel .deb, later ones reuse it.
if [ "$(id -u)" = 0 ]; then cache=${NIBRUNNER_DEMO_CACHE:-/var/cache/nibrunner}; else cache=${NIBRUNNER_DEMO_CACHE:-$HOME/.cache/nibrunner}; fi

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
explain() { printf '\033[2m%s\033[0m\n' "$*"; }
run() { printf '\033[36m$ %s\033[0m\n' "$*"; "$@"; rc=$?; [ $rc -ne 0 ] && printf '\033[2m(exit status %d)\033[0m\n' $rc; return $rc; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
secs() { printf '%d.%03d s' $(($1 / 1000)) $(($1 % 1000)); }

root="$work/root"
cfg="$root/etc/nibrunner/config.toml"
state="$root/var/lib/nibrunner"
runtime="$root/run/nibrunner"
report="$state/reported.json"
desired="$state/desired/desired.json"
daemon_pid=""

# stop_guests asks the daemon to stop every guest (an empty document) and
# waits for their processes to end; a guest still up after that is killed
# by its pidfile's pid, which only this demo's runtime folder holds.
stop_guests() {
  local pids=() p
  for f in "$runtime"/*.pid; do
    [ -e "$f" ] || continue
    p=$(jq -r '.pid // empty' "$f" 2>/dev/null) && [ -n "$p" ] && pids+=("$p")
  done
  [ ${#pids[@]} -eq 0 ] && return 0
  if [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; then
    write_desired '[]' '[]'
    for _ in $(seq 300); do
      local up=0
      for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && up=1; done
      [ $up = 0 ] && return 0
      sleep 0.2
    done
    echo "the daemon did not stop the guest within 60 s; killing it"
  fi
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
}

cleanup() {
  stop_guests
  if [ -n "$daemon_pid" ]; then kill "$daemon_pid" 2>/dev/null; wait "$daemon_pid" 2>/dev/null; fi
  if [ -n "$standalone" ]; then
    say "What ran"
    print_summary
  fi
}
trap cleanup EXIT

# fail prints what there is to read about a failure and ends the demo.
fail() {
  printf '\033[31mthe microVM demo failed: %s\033[0m\n' "$*"
  if [ "${mode:-qemu}" = fake ]; then record failed "nibrunnerd on the fake VMM" "$*"; else record failed "nibrunnerd in a microVM" "$*"; fi
  for f in "$report" "$work/nibrunnerd.log" "$runtime/counter/console.log" "$runtime/counter/tenant.log" "$runtime/counter/qemu.log"; do
    [ -s "$f" ] && { echo "--- $f (last 40 lines)"; tail -n 40 "$f"; }
  done
  # Without root or QEMU the demo only shows what it can; it does not fail.
  [ "${mode:-qemu}" = fake ] && exit 0
  exit 1
}

# field prints one field of the counter's instance in reported.json.
field() { jq -r --arg f "$1" '.instances[] | select(.appId == "counter") | .[$f] // empty' "$report" 2>/dev/null; }

# wait_state waits (at most $2 seconds) for the report to say the counter
# is in state $1.
wait_state() {
  local want=$1 limit=$2 start
  start=$(now_ms)
  while [ $(($(now_ms) - start)) -lt $((limit * 1000)) ]; do
    case $(field state) in
    "$want") return 0 ;;
    failed) fail "the report says the counter failed: $(field message)" ;;
    esac
    if [ -n "$daemon_pid" ] && ! kill -0 "$daemon_pid" 2>/dev/null; then fail "nibrunnerd serve exited"; fi
    sleep 0.1
  done
  fail "the report did not say $want within $limit s (it says: $(field state) $(field message))"
}

# write_desired writes desired.json atomically (the daemon watches it):
# instances, volumes, and optionally checkpoints and exports.
write_desired() {
  local instances=$1 volumes=$2 checkpoints=${3:-[]} exports=${4:-[]}
  mkdir -p "$(dirname "$desired")"
  cat >"$desired.tmp" <<JSON
{
  "hostId": "demo-host",
  "volumes": $volumes,
  "instances": $instances,
  "checkpoints": $checkpoints,
  "exports": $exports
}
JSON
  mv "$desired.tmp" "$desired"
}

# operator_view shows the day-two commands on the app the demo ran.
operator_view() {
  say "nibrunnerd ps, logs, events — what an operator reads on day two, over the same socket"
  local ok=1
  run "$bin/nibrunnerd" ps --config "$cfg" || ok=""
  run "$bin/nibrunnerd" logs counter --tail 5 --config "$cfg" || ok=""
  run "$bin/nibrunnerd" events --config "$cfg" || ok=""
  if [ -n "$ok" ]; then
    record ran "nibrunnerd ps, logs, events" "the app's row, the last lines of its logs, and what each pass did"
  else
    record failed "nibrunnerd ps, logs, events" "one of them exited non-zero (above)"
  fi
}

say "nibrunnerd check — a desired.json is validated whole before the daemon acts on it"
if run "$bin/nibrunnerd" check "$repo/examples/desired.json"; then
  record ran "nibrunnerd check" "examples/desired.json is accepted"
else
  record failed "nibrunnerd check" "examples/desired.json was refused (exit $rc)"
fi

missing=()
[ "$(id -u)" = 0 ] || missing+=("root")
for c in qemu-system-x86_64 mke2fs mksquashfs apt-get dpkg-deb jq curl; do
  command -v "$c" >/dev/null 2>&1 || [ -x "/usr/sbin/$c" ] || [ -x "/sbin/$c" ] || missing+=("$c")
done
mode=qemu
if [ ${#missing[@]} -gt 0 ]; then
  mode=fake
  pkgs=$(debian_packages "${missing[@]}")
  tools=("${missing[@]/root/}")
  why="this host lacks ${tools[*]}"
  [ "${missing[0]}" = root ] && why="not run as root${tools[*]:+, and this host lacks ${tools[*]}}"
  why=$(echo "$why" | tr -s ' ')
  say "No microVMs here: $why"
  install="run make demo as root"
  [ -n "$pkgs" ] && install="as root: apt-get install $pkgs, then make demo as root"
  [ -n "$pkgs" ] && [ "$(id -u)" = 0 ] && install="apt-get install $pkgs (make demo's setup step installs them)"
  explain "A real microVM needs root, QEMU (qemu-system-x86), e2fsprogs, squashfs-tools, apt-get/dpkg-deb for
the guest kernel, and jq/curl for this script. To see it: $install.
Instead, the same daemon runs the app with --vmm fake: each guest is a local process answering HTTP."
  record skipped "nibrunnerd in a microVM" "$why; $install"
  for c in mke2fs mksquashfs jq curl; do
    if ! command -v "$c" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$c" ] && [ ! -x "/sbin/$c" ]; then
      explain "(the fake VMM still needs $c for the app's volume, layer and this script; stopping here)"
      record skipped "nibrunnerd on the fake VMM" "it needs $c too; install $(debian_packages "$c")"
      exit 0
    fi
  done
fi

say "The app: examples/apps/counter, a static Go HTTP server"
explain "It counts requests in memory (lost on a cold boot, kept by a wake from a snapshot) and appends
to visits.log on its volume; greeting.txt is seeded into the volume from a tar.gz."
mkdir -p "$work/artifacts/apps" "$work/artifacts/seeds" "$work/seed"
(cd "$repo" && run env CGO_ENABLED=0 go build -trimpath -buildvcs=false -o "$work/artifacts/apps/counter" ./examples/apps/counter) || fail "building the counter"
echo "seeded by the demo on $(date -u +%Y-%m-%d)" >"$work/seed/greeting.txt"
tar -czf "$work/artifacts/seeds/counter-seed.tar.gz" -C "$work/seed" greeting.txt
app_sum=$(sha256sum "$work/artifacts/apps/counter" | cut -d' ' -f1)
seed_sum=$(sha256sum "$work/artifacts/seeds/counter-seed.tar.gz" | cut -d' ' -f1)
echo "artifact store $work/artifacts: apps/counter sha256:$app_sum"
echo "                                     seeds/counter-seed.tar.gz sha256:$seed_sum"

say "nibrunnerd install --root — a host of its own under $root"
explain "install writes the default configuration, the folders and the systemd unit; the guest image is
built in a second step, into $cache/guest so later demos reuse it."
run "$bin/nibrunnerd" install --root "$root" --no-guest-image || fail "install"
sed -i -e "0,/^store_url = .*/s||store_url = \"$work/artifacts\"|" \
  -e "s|^guest_image_dir = .*|guest_image_dir = \"$cache/guest\"|" "$cfg"
explain "Pointed the configuration at the demo's artifact folder and the cached guest image:"
grep -E '^(store_url|guest_image_dir|runtime_dir|snapshot_dir) ' "$cfg"

if [ "$mode" = qemu ]; then
  say "The guest image: a kernel of our own build, an initramfs with nibrun-init as PID 1, a squashfs base"
  if [ -s "$cache/guest/image.json" ]; then
    explain "Built by an earlier run in $cache/guest; install only re-hashes its inputs."
  else
    explain "First run: the image is built in $cache/guest around the guest kernel make demo built
before from Debian's linux-source-6.1 (scripts/prefetch.sh, into /var/cache/nibrunner/kernel);
nothing is installed on this host."
  fi
  mkdir -p "$cache"
  run "$bin/nibrunnerd" install --root "$root" || fail "building the guest image"
fi

app=$(
  cat <<JSON
[{
    "appId": "counter", "deploymentId": "counter-1", "volumeId": "counter-data",
    "desiredState": "on-request", "idleTimeoutMs": 600000,
    "layers": [{"kind": "executable", "digest": "$app_sum", "objectKey": "apps/counter", "destinationPath": "/app/counter"}],
    "config": {
      "httpPort": 8080,
      "command": {"program": "/app/counter", "args": [], "workingDirectory": "/data", "environment": {}},
      "resources": {"vcpuCount": 1, "memoryMib": 128},
      "healthCheck": {"kind": "http", "path": "/healthz", "intervalMs": 500, "timeoutMs": 5000,
        "gracePeriodMs": 180000, "healthyThreshold": 1, "unhealthyThreshold": 3},
      "restartPolicy": {"maxRestarts": 2, "initialBackoffMs": 1000, "maxBackoffMs": 10000, "backoffFactor": 2, "resetAfterMs": 600000}
    },
    "hostnames": []
}]
JSON
)
vols=$(
  cat <<JSON
[{
    "volumeId": "counter-data", "appId": "counter", "sizeBytes": 67108864, "desiredState": "present",
    "initialContents": {"digest": "$seed_sum", "objectKey": "seeds/counter-seed.tar.gz", "destinationPath": "/data"}
}]
JSON
)

say "desired.json — one on-request app: the executable layer, a 64 MiB volume seeded from the tar.gz, an http health check"
explain "No hostnames: this host has no [proxy.http] to route them, so the app is reached at its host port."
write_desired "$app" "$vols"
run "$bin/nibrunnerd" check "$desired" || fail "the demo's desired.json was refused"

if [ "$mode" = qemu ]; then
  say "nibrunnerd serve --user-network — the daemon converges on it: volume, layer, microVM, health check"
  explain "--user-network gives the guest QEMU's user-mode network with its host port on 127.0.0.1
(the production path is a tap per guest and one nftables table). Under TCG a boot takes seconds."
  printf '\033[36m$ %s\033[0m\n' "$bin/nibrunnerd serve --config $cfg --user-network &"
  "$bin/nibrunnerd" serve --config "$cfg" --user-network >"$work/nibrunnerd.log" 2>&1 &
else
  say "nibrunnerd serve --vmm fake — the daemon converges on it with a local process for a guest"
  printf '\033[36m$ %s\033[0m\n' "$bin/nibrunnerd serve --config $cfg --vmm fake &"
  "$bin/nibrunnerd" serve --config "$cfg" --vmm fake >"$work/nibrunnerd.log" 2>&1 &
fi
daemon_pid=$!
wait_state running 300
running_ms=$(now_ms)
cold_ms=$((running_ms - $(date -d "$(field startedAt)" +%s%N) / 1000000))
port=$(field hostPort)
addr="127.0.0.1:$port"
# A fake guest listens where its pidfile says, not on the host port.
[ "$mode" = fake ] && addr=$(jq -r .endpoint "$runtime/counter.pid")
explain "reported.json says:"
jq '.instances[] | select(.appId == "counter") | {appId, state, hostPort, startedAt}' "$report"
if [ "$mode" = qemu ]; then
  qemu_pid=$(jq -r .pid "$runtime/counter.pid" 2>/dev/null)
  qemu_cmd=$(tr '\0' ' ' <"/proc/$qemu_pid/cmdline" 2>/dev/null)
  accel=$(grep -o -- '-accel [a-z]*' <<<"$qemu_cmd" | cut -d' ' -f2)
  echo "QEMU pid $qemu_pid (${accel:-?}): ${qemu_cmd:0:160}…"
fi

if [ "$mode" = fake ]; then
  say "curl the fake guest — it answers with its own view of the app (it does not run the counter)"
  run curl -sS --max-time 20 "http://$addr/" || fail "the fake guest did not answer"
  say "nibrunnerd sleep / wake work the same on the fake VMM"
  run "$bin/nibrunnerd" sleep counter --config "$cfg" || fail "sleep"
  wait_state idle 60
  run "$bin/nibrunnerd" wake counter --config "$cfg" || fail "wake"
  wait_state running 60
  record ran "nibrunnerd on the fake VMM" "the counter's guest as a local process: it answered, slept and woke over the control socket"
  operator_view
  explain "On a host with root and QEMU this demo does the same with a real microVM and its snapshot."
  record skipped "checkpoint and export" "this demo takes them of a running microVM's volume, and no microVM ran"
  exit 0
fi

say "curl the app's host port twice — the counter goes 1, 2"
for _ in 1 2; do
  run curl -sS --max-time 20 "http://$addr/" || fail "the app did not answer at its host port"
done

say "nibrunnerd sleep counter — asked over the daemon's control socket (runtime_dir/nibrunnerd.sock, root only)"
explain "The guest is paused, its devices and memory saved to snapshot_dir/counter/ with a stamp
(deployment, guest image, host boot), and QEMU ends: an idle app costs disk, not memory."
t=$(now_ms)
run "$bin/nibrunnerd" sleep counter --config "$cfg" || fail "sleep"
sleep_ms=$(($(now_ms) - t))
wait_state idle 60
explain "The same socket serves the report (what reported.json holds):"
printf '\033[36m$ %s\033[0m\n' "curl -sS --unix-socket $runtime/nibrunnerd.sock http://nibrunnerd/v1/report | jq '.instances[] | {appId, state}'"
curl -sS --max-time 10 --unix-socket "$runtime/nibrunnerd.sock" http://nibrunnerd/v1/report | jq '.instances[] | {appId, state}' || fail "GET /v1/report"
kill -0 "$qemu_pid" 2>/dev/null && fail "QEMU $qemu_pid is still running after the sleep"
echo "QEMU pid $qemu_pid has exited. The snapshot:"
run ls -l "$root/var/lib/nibrunner/snapshots/counter"
run du -sh --apparent-size "$root/var/lib/nibrunner/snapshots/counter"
explain "Nothing answers at its host port while it sleeps (with [proxy.http] and a hostname, the proxy
would wake it for this request; here it is woken by hand):"
run curl -sS --max-time 5 "http://$addr/"

say "nibrunnerd wake counter — restore the snapshot, resume, wait for the health check"
t=$(now_ms)
run "$bin/nibrunnerd" wake counter --config "$cfg" || fail "wake"
wake_ms=$(($(now_ms) - t))
wait_state running 60

say "curl again — request #3: the process's memory survived, and visits.log on the volume has 3 lines"
answer=$(curl -sS --max-time 20 "http://127.0.0.1:$port/") || fail "the woken app did not answer"
printf '\033[36m$ curl -sS http://127.0.0.1:%s/\033[0m\n%s\n' "$port" "$answer"
case $answer in
*"request #3 since boot"*"visits.log has 3 lines"*) ;;
*) fail "expected request #3 and 3 lines in visits.log after the wake" ;;
esac

say "Times measured here ($(nproc) CPUs, QEMU accelerator ${accel:-unknown})"
printf '  cold boot (QEMU start to a passing health check)  %s\n' "$(secs "$cold_ms")"
printf '  sleep (nibrunnerd sleep, snapshot written)         %s\n' "$(secs "$sleep_ms")"
printf '  wake (nibrunnerd wake, restored and healthy)       %s\n' "$(secs "$wake_ms")"
record ran "nibrunnerd in a microVM" "the counter booted on QEMU (${accel:-?}) in $(secs "$cold_ms"), slept to a snapshot in $(secs "$sleep_ms") and woke in $(secs "$wake_ms") with its memory (request #3) and its volume (3 lines in visits.log)"
operator_view

say "A checkpoint and an export of the running app's volume — asked for in desired.json"
explain "The daemon asks the guest's init to freeze the volume's filesystem (FIFREEZE, bounded by
[checkpoints] freeze_timeout_ms), copies the volume file sparsely, thaws it, and then — in the
background, beside the passes — uploads the checkpoint to [checkpoints] store_url and streams the
export (a tar.gz: the app's files under data/, its environment as .env) to exports.store_url."
ckpts='[{"checkpointId": "demo-ckpt", "volumeId": "counter-data", "desiredState": "present"}]'
exps='[{"exportId": "demo-export", "appId": "counter", "volumeId": "counter-data", "objectKey": "demo/counter.tar.gz", "desiredState": "present", "environment": {"GREETING": "hello from the demo"}}]'
write_desired "$app" "$vols" "$ckpts" "$exps"
t=$(now_ms)
ready=""
for _ in $(seq 600); do
  if [ "$(jq -r '[.checkpoints[]?.state, .exports[]?.state] | join(" ")' "$report" 2>/dev/null)" = "ready ready" ]; then ready=1; break; fi
  sleep 0.2
done
[ -n "$ready" ] || fail "the checkpoint and the export were not ready within 120 s: $(jq -c '{checkpoints, exports}' "$report")"
export_ms=$(($(now_ms) - t))
jq '{checkpoints, exports}' "$report"
exports_dir=$(awk '/^\[exports\]/{s=1;next} /^\[/{s=0} s && /^store_url/{gsub(/"/,"",$3); print $3}' "$cfg")
run tar -tzvf "$exports_dir/demo/counter.tar.gz"
run tar -xzOf "$exports_dir/demo/counter.tar.gz" .env
lines=$(tar -xzOf "$exports_dir/demo/counter.tar.gz" data/data/visits.log | wc -l)
echo "data/data/visits.log in the export has $lines lines"
answer=$(curl -sS --max-time 20 "http://127.0.0.1:$port/") || fail "the app did not answer after its checkpoint"
printf '\033[36m$ curl -sS http://127.0.0.1:%s/\033[0m\n%s\n' "$port" "$answer"
explain "Thawed: the app answers (request #4). Given to another host as a volume's initialContents with
destinationPath \"/\", the export gives back these files (docs/microvm.md)."
if [ "$lines" = 3 ]; then
  record ran "checkpoint and export" "of the running counter's volume in $(secs "$export_ms"): the checkpoint is $(jq -r '.checkpoints[0].reference' "$report"), the export $(jq -r '.exports[0].sizeBytes' "$report") bytes with visits.log's 3 lines and .env"
else
  record failed "checkpoint and export" "the export's visits.log has $lines lines, not 3"
fi

say "Stop the guest, then the daemon — guests outlive their daemon, so an empty desired.json stops it first"
write_desired '[]' "$vols"
explain "desired.json now lists no instances; the daemon shuts the microVM down."
for _ in $(seq 300); do
  kill -0 "$(jq -r .pid "$runtime/counter.pid" 2>/dev/null || echo 0)" 2>/dev/null || break
  sleep 0.2
done
stop_guests
kill "$daemon_pid" && wait "$daemon_pid" 2>/dev/null
daemon_pid=""
left=$(pgrep -f "$runtime" | wc -l)
echo "processes left from this demo's runtime folder: $left"
if [ "$left" = 0 ]; then record ran "stop" "an empty desired.json stopped the microVM, then the daemon; nothing is left running"; else record failed "stop" "$left processes are left running from $runtime"; fi
echo "the demo's files are in $work"
