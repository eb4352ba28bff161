#!/usr/bin/env bash
# land.sh moves main to the current branch once the branch passes the gate
# every commit on main has passed: gofmt-clean Go files, the whole module
# building, and go vet and staticcheck clean on the packages the branch
# changes (with LAND_TEST=1, their tests too, under the network guard).
#
# Run it in a worktree, on the branch to land:  scripts/land.sh
# It rebases the branch on main first (a conflict stops it, with git's own
# message), checks, and then fast-forwards main: in the worktree that has
# main checked out when there is one, else the branch ref alone. Nothing
# moves when a check fails. LAND_MAIN names another target branch.
set -euo pipefail
target=${LAND_MAIN:-main}
branch=$(git symbolic-ref --short HEAD 2>/dev/null) || { echo "land: not on a branch; check out the branch to land" >&2; exit 2; }
[ "$branch" != "$target" ] || { echo "land: this is $target itself; run it on the branch to land" >&2; exit 2; }
[ -z "$(git status --porcelain --untracked-files=no)" ] || { echo "land: uncommitted changes; commit or stash them first" >&2; exit 2; }
cd "$(git rev-parse --show-toplevel)"

git rebase -q "$target"
base=$(git rev-parse "$target")
[ "$(git rev-parse HEAD)" != "$base" ] || { echo "land: $branch has nothing $target lacks"; exit 0; }

changed=$(git diff --name-only --diff-filter=AMR "$base" HEAD -- '*.go')
if [ -n "$changed" ]; then
  # shellcheck disable=SC2086
  bad=$(gofmt -l $changed)
  [ -z "$bad" ] || { echo "land: not gofmt-clean (gofmt -w them):" >&2; echo "$bad" >&2; exit 1; }
fi
pkgs=$(git diff --name-only "$base" HEAD -- '*.go' | xargs -r -n1 dirname | sort -u |
  while read -r d; do ls "$d"/*.go >/dev/null 2>&1 && echo "./$d"; done | tr '\n' ' ')
go build ./...
if [ -n "$pkgs" ]; then
  # shellcheck disable=SC2086
  go vet $pkgs
  sc=$(command -v staticcheck || echo "$(go env GOPATH)/bin/staticcheck")
  [ -x "$sc" ] || { echo "land: staticcheck is missing (make setup installs it)" >&2; exit 1; }
  # shellcheck disable=SC2086
  "$sc" $pkgs
  if [ "${LAND_TEST:-}" = 1 ]; then
    # shellcheck disable=SC2086
    scripts/netguard.sh go test -race $pkgs
  fi
fi

# main may have moved while the checks ran: land only onto what was checked.
[ "$(git rev-parse "$target")" = "$base" ] || { echo "land: $target moved during the checks; run land.sh again" >&2; exit 1; }
where=$(git worktree list --porcelain | awk -v b="refs/heads/$target" '/^worktree /{w=substr($0, 10)} $0 == "branch " b {print w}')
if [ -n "$where" ]; then
  git -C "$where" merge -q --ff-only "$branch"
else
  git update-ref "refs/heads/$target" HEAD "$base"
fi
echo "land: $target is now $(git log -1 --format='%h %s' HEAD)"
