# Sourced by scripts/demo.sh and scripts/demo-nibrunner.sh: the demo's
# closing summary is built from what actually ran. Each part records one
# line as it ends — ran, skipped (and why) or failed (and why) — into
# $NIB_DEMO_SUMMARY, and print_summary shows those lines and nothing else,
# so the summary cannot claim a step that did not run.

# record STATUS PART DETAIL: STATUS is ran, skipped or failed.
record() {
  [ -n "${NIB_DEMO_SUMMARY:-}" ] || return 0
  printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$NIB_DEMO_SUMMARY"
}

# print_summary shows every recorded line, ran in green, skipped in yellow,
# failed in red.
print_summary() {
  local status part detail colour
  [ -s "${NIB_DEMO_SUMMARY:-}" ] || { echo "(nothing was recorded)"; return 0; }
  while IFS=$'\t' read -r status part detail; do
    case $status in
    ran) colour='\033[32m' ;;
    skipped) colour='\033[33m' ;;
    *) colour='\033[31m' ;;
    esac
    printf "  ${colour}%-8s\033[0m %s" "$status" "$part"
    [ -n "$detail" ] && printf ' — %s' "$detail"
    printf '\n'
  done <"$NIB_DEMO_SUMMARY"
}

# debian_packages prints the Debian packages that provide the commands
# given, one line, for an apt-get install the reader can copy.
debian_packages() {
  local c out=()
  for c in "$@"; do
    case $c in
    qemu-system-x86_64) out+=(qemu-system-x86) ;;
    mke2fs) out+=(e2fsprogs) ;;
    mksquashfs) out+=(squashfs-tools) ;;
    apt-get) out+=(apt) ;;
    dpkg-deb) out+=(dpkg) ;;
    root) ;;
    *) out+=("$c") ;;
    esac
  done
  echo "${out[*]}"
}
