#!/usr/bin/env bash
# Builds strand's container image (deploy/Dockerfile) from a static binary
# built on this host: no base image is pulled.
#
#   deploy/image.sh [TAG]        TAG defaults to strand:<short commit>
#
# Needs Go and a Docker daemon. Prints the tag it built on its last line.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
commit_time=$(git show -s --format=%cI HEAD 2>/dev/null || true)
if [ "$commit" != unknown ] && [ -n "$(git status --porcelain 2>/dev/null)" ]; then
	commit="$commit+dirty"
fi
tag=${1:-strand:${commit:0:12}}

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
pkg=github.com/strand-ledger/strand/internal/buildinfo
CGO_ENABLED=0 go build -trimpath \
	-ldflags "-s -w -X $pkg.Commit=$commit -X $pkg.CommitTime=$commit_time -X $pkg.BuildTime=$(date -u +%FT%TZ)" \
	-o "$ctx/strand" ./cmd/strand
mkdir -p "$ctx/rootfs/tmp" "$ctx/rootfs/var/lib/strand"
chmod 1777 "$ctx/rootfs/tmp"
cp deploy/Dockerfile "$ctx/Dockerfile"
# The legacy builder needs no BuildKit frontend image (nothing to pull).
DOCKER_BUILDKIT=0 docker build --quiet --tag "$tag" "$ctx" >/dev/null
echo "$tag"
