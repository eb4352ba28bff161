#!/usr/bin/env bash
# Pull and convert an image of about 100 MB (issue 33), as root: ours
# (bench/imagepull: nibrunner/image's pull, flatten and mksquashfs) beside
# `skopeo copy` to an OCI layout + `umoci unpack` + the same mksquashfs
# flags, alternating, ROUNDS times each (default 3), each with a fresh
# cache. Reports wall time and peak RSS (GNU time's %M, KiB) of each run,
# and the ratio of the medians. The image is built here with umoci
# (a random half and a compressible half, in two layers) and pushed to
# Debian's docker-registry on loopback with skopeo.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-3}
work=$(mktemp -d /tmp/nibimagepull.XXXXXX)
reg_pid=""
trap '[ -n "$reg_pid" ] && kill "$reg_pid" 2>/dev/null; rm -rf "$work"' EXIT
go build -o "$work/imagepull" ./bench/imagepull
port=35$((RANDOM % 900 + 100))
cat >"$work/registry.yml" <<YML
version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $work/registry
http:
  addr: 127.0.0.1:$port
  secret: bench
YML
docker-registry serve "$work/registry.yml" >"$work/registry.log" 2>&1 &
reg_pid=$!
for _ in $(seq 100); do
	curl -fs "http://127.0.0.1:$port/v2/" >/dev/null && break
	sleep 0.1
done
# The image: layer 1 holds 50 MB of random bytes, layer 2 50 MB of text.
mkdir -p "$work/src1/data" "$work/src2/data"
head -c 50000000 /dev/urandom >"$work/src1/data/random.bin"
seq 1 6600000 >"$work/src2/data/text.txt"
umoci init --layout "$work/layout"
umoci new --image "$work/layout:bench"
umoci insert --image "$work/layout:bench" "$work/src1/data" /data1
umoci insert --image "$work/layout:bench" "$work/src2/data" /data2
umoci config --image "$work/layout:bench" --os linux --architecture amd64
skopeo copy -q --dest-tls-verify=false "oci:$work/layout:bench" "docker://127.0.0.1:$port/bench:1"
digest=$(skopeo inspect --tls-verify=false --format '{{.Digest}}' "docker://127.0.0.1:$port/bench:1")
ref="127.0.0.1:$port/bench@$digest"
echo "image $ref"
ours() {
	rm -rf "$work/c"
	/usr/bin/time -f "%e %M" -o "$work/t" "$work/imagepull" -ref "$ref" -cache "$work/c" -plain-http "127.0.0.1:$port" >/dev/null
	cat "$work/t"
}
theirs() {
	rm -rf "$work/oci" "$work/bundle" "$work/theirs.sqfs"
	/usr/bin/time -f "%e %M" -o "$work/t" bash -c "
		skopeo copy -q --src-tls-verify=false docker://$ref oci:$work/oci:x &&
		umoci unpack --image $work/oci:x $work/bundle >/dev/null &&
		mksquashfs $work/bundle/rootfs $work/theirs.sqfs -noappend -no-xattrs -comp gzip -mkfs-time 0 -all-time 0 -quiet -no-progress"
	cat "$work/t"
}
: >"$work/ours" >"$work/theirs"
for i in $(seq "$rounds"); do
	o=$(ours); t=$(theirs)
	echo "round $i: ours ${o% *} s ${o#* } KiB; skopeo+umoci+mksquashfs ${t% *} s ${t#* } KiB"
	echo "$o" >>"$work/ours"; echo "$t" >>"$work/theirs"
done
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mo=$(cut -d' ' -f1 "$work/ours" | median); mt=$(cut -d' ' -f1 "$work/theirs" | median)
ro=$(cut -d' ' -f2 "$work/ours" | median); rt=$(cut -d' ' -f2 "$work/theirs" | median)
echo "median: ours $mo s, $ro KiB peak RSS; skopeo+umoci+mksquashfs $mt s, $rt KiB (time measured for the whole pipeline, RSS of its largest process)"
awk -v a="$mo" -v b="$mt" 'BEGIN { printf "ratio ours/theirs: %.2f (issue 33 asks at most 1.2)\n", a / b }'
