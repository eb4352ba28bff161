#!/usr/bin/env bash
# Installs what `make test` needs when it is missing: the Debian host tools
# named in ARCHITECTURE.md and the Go tools the checks run. Idempotent.
#
# --for-demo (make demo): without root, say exactly what to install and go
# on, so the demo runs what it can and says what it skipped, instead of
# stopping here; and skip the Go tools only the checks and tests run.
# --for-bench (make bench): the benchmarks' own commands too (need_bench).
set -euo pipefail
for_demo=""
[ "${1:-}" = --for-demo ] && for_demo=1

# command -> Debian package that provides it: every command the code, the
# tests and the scripts run (scripts/commands_test.go fails on one missing
# here). Those of Debian's essential set are on every Debian machine; they
# are named so that the table is whole.
declare -A need=(
  # the microVM host and its tests
  [qemu-system-x86_64]=qemu-system-x86
  [mke2fs]=e2fsprogs
  [e2fsck]=e2fsprogs
  [resize2fs]=e2fsprogs
  [dumpe2fs]=e2fsprogs
  [debugfs]=e2fsprogs
  [mksquashfs]=squashfs-tools
  # the exec tests give an app root a shell and tar as a layer
  [busybox]=busybox-static
  [unsquashfs]=squashfs-tools
  [nft]=nftables
  [ip]=iproute2
  [losetup]=mount
  [mount]=mount
  [umount]=mount
  [setpriv]=util-linux
  [unshare]=util-linux
  [setsid]=util-linux
  [cpio]=cpio
  # the guest image: Debian's kernel source package, and what building the
  # guest kernel from it runs (gcc and make are below; Kconfig's parser
  # needs bison and flex, kernel/time's constants bc, objtool libelf-dev)
  [bison]=bison
  [flex]=flex
  [bc]=bc
  [xz]=xz-utils
  [apt-get]=apt
  [apt-cache]=apt
  [dpkg]=dpkg
  [dpkg-deb]=dpkg
  [dpkg-query]=dpkg
  [update-ca-certificates]=ca-certificates
  # the proxy's differential test parses what it forwards with nginx's parser
  [nginx]=nginx
  # nibrunner/image's tests pull from the distribution registry on loopback
  [docker-registry]=docker-registry
  # the demo
  [jq]=jq
  [curl]=curl
  [pgrep]=procps
  # go test -race (cgo) and go generate ./ic/nns/registrypb
  [gcc]=gcc
  [protoc]=protobuf-compiler
  [git]=git
  [make]=make
  # Debian's essential set
  [bash]=bash
  [sh]=dash
  [awk]=mawk
  [grep]=grep
  [sed]=sed
  [find]=findutils
  [xargs]=findutils
  [tar]=tar
  [getconf]=libc-bin
  [timeout]=coreutils
  [basename]=coreutils
  [cat]=coreutils
  [cp]=coreutils
  [cut]=coreutils
  [date]=coreutils
  [dirname]=coreutils
  [env]=coreutils
  [head]=coreutils
  [id]=coreutils
  [ls]=coreutils
  [mkdir]=coreutils
  [mktemp]=coreutils
  [mv]=coreutils
  [nproc]=coreutils
  [paste]=coreutils
  [rm]=coreutils
  [rmdir]=coreutils
  [seq]=coreutils
  [sha256sum]=coreutils
  [sleep]=coreutils
  [sort]=coreutils
  [tail]=coreutils
  [tr]=coreutils
  [true]=coreutils
  [uname]=coreutils
  [chmod]=coreutils
  [wc]=coreutils
  # the jail tests enter a guest's jail
  [nsenter]=util-linux
  # the status page's test loads it headless and reads the DOM it rendered
  [chromium]=chromium
  # docs/images.md (run by a test) builds and pushes an image with them;
  # bench/image-pull.sh measures ours against them
  [skopeo]=skopeo
  [umoci]=umoci
)
# command -> Debian package, for what only the benchmarks run (bench/*.sh):
# installed by make bench (setup.sh --for-bench), not by make test.
declare -A need_bench=(
  [wrk]=wrk
  [openssl]=openssl
  [python3]=python3
  [time]=time
)
# command -> Debian package, for what setup runs only when the machine has
# it; never installed
declare -A optional=(
  [systemctl]=systemd
)
# file -> Debian package that provides it, for what is not a command: the C
# library headers cgo (go test -race) compiles against, and the well-known
# .proto files protoc imports, and the ELF library the guest kernel's
# objtool is built with
declare -A need_file=(
  [/usr/include/stdio.h]=libc6-dev
  [/usr/include/google/protobuf/empty.proto]=libprotobuf-dev
  [/usr/include/gelf.h]=libelf-dev
)
if [ "${1:-}" = --for-bench ]; then
  for cmd in "${!need_bench[@]}"; do need[$cmd]=${need_bench[$cmd]}; done
fi
missing=()
for cmd in "${!need[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || [ -x "/usr/sbin/$cmd" ] || [ -x "/sbin/$cmd" ] || missing+=("${need[$cmd]}")
done
for file in "${!need_file[@]}"; do
  [ -e "$file" ] || missing+=("${need_file[$file]}")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    if [ -n "$for_demo" ]; then
      echo "setup: not root, so nothing is installed; the demo runs what it can without: apt-get install ${missing[*]} (as root), or make demo as root" >&2
      missing=()
    else
      echo "setup: missing Debian packages ${missing[*]}; run as root or install them" >&2
      exit 1
    fi
  fi
fi
if [ ${#missing[@]} -gt 0 ]; then
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  echo "setup: installing ${missing[*]}" >&2
  apt-get update -qq
  # Nothing installed here is a service to run: the tests start their own
  # nginx, on loopback in a namespace. A policy-rc.d that refuses every
  # start (Debian's policy interface, as container images use) keeps the
  # packages' own services from starting on this machine's port 80.
  policy=/usr/sbin/policy-rc.d
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# scripts/setup.sh: no service starts while it installs\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    trap 'rm -f "$policy"' EXIT
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  if [ -e "$policy" ] && grep -q 'scripts/setup.sh' "$policy"; then rm -f "$policy"; trap - EXIT; fi
  # and none is enabled to start at the next boot either
  if printf '%s\n' "${missing[@]}" | grep -qx nginx && command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    systemctl disable --now nginx >/dev/null 2>&1 || true
  fi
fi

# The guest kernel is built from Debian's kernel source package (apt-get download),
# which needs package lists even when every tool above was already there.
if ! apt-cache show linux-source-6.1 >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    echo "setup: reading Debian package lists (apt-get update) for the guest kernel" >&2
    apt-get update -qq
  else
    echo "setup: apt-cache does not know linux-source-6.1; the guest image will not build until root runs apt-get update" >&2
  fi
fi

# The Go tools only the checks and tests run; the demo needs none of them.
gobin="$(go env GOPATH)/bin"
if [ -n "$for_demo" ]; then
  :
elif ! command -v staticcheck >/dev/null 2>&1 && [ ! -x "$gobin/staticcheck" ]; then
  echo "setup: installing staticcheck" >&2
  go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi
if [ -z "$for_demo" ] && ! command -v protoc-gen-go >/dev/null 2>&1 && [ ! -x "$gobin/protoc-gen-go" ]; then
  echo "setup: installing protoc-gen-go (go generate ./ic/nns/registrypb)" >&2
  go install google.golang.org/protobuf/cmd/protoc-gen-go@"$(go list -m -f '{{.Version}}' google.golang.org/protobuf)"
fi
if [ -z "$for_demo" ] && ! command -v versitygw >/dev/null 2>&1 && [ ! -x "$gobin/versitygw" ]; then
  echo "setup: installing versitygw (S3 server for the store tests)" >&2
  go install github.com/versity/versitygw/cmd/versitygw@v1.8.0
fi

# Last, everything the tests would otherwise download while they run: they
# run under the network guard (scripts/netguard.sh), where nothing can.
"$(dirname "$0")/prefetch.sh"
