#!/usr/bin/env bash
# make image: build the Containerfile at the repository root with podman or docker.
#
#   IMAGE=ghcr.io/example/showbatch:<version>   the tag (default; <version> read from the sources)
#   ENGINE=podman|docker                        pick one (default: podman if installed, else docker)
#   BUILD_ARGS="--build-arg SWIFT_IMAGE=..."    extra arguments for `<engine> build`
set -euo pipefail
cd "$(dirname "$0")/.."

version="$(packaging/version.sh)"
image="${IMAGE:-ghcr.io/example/showbatch:${version}}"
revision="$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"

engine="${ENGINE:-}"
if [ -z "$engine" ]; then
    if command -v podman >/dev/null 2>&1; then engine=podman
    elif command -v docker >/dev/null 2>&1; then engine=docker
    else
        echo "make image: neither podman nor docker is installed." >&2
        echo "  Debian/Ubuntu: apt-get install podman   (or install Docker Engine), then rerun." >&2
        echo "  Without a container engine, 'make bundle' builds the tarball and" >&2
        echo "  'make bundle-check' tests it on a debootstrap root." >&2
        exit 127
    fi
fi
command -v "$engine" >/dev/null 2>&1 || { echo "make image: ENGINE=$engine is not installed" >&2; exit 127; }
if [ "$engine" = docker ] && ! docker info >/dev/null 2>&1; then
    echo "make image: the docker client is installed but no Docker daemon answers" >&2
    echo "  (docker info fails). Start dockerd, set DOCKER_HOST, or install podman." >&2
    exit 1
fi

echo "building $image with $engine (version $version, revision $revision)"
# shellcheck disable=SC2086  # BUILD_ARGS is a list of words on purpose
"$engine" build -f Containerfile \
    --build-arg "VERSION=$version" --build-arg "REVISION=$revision" \
    ${BUILD_ARGS:-} -t "$image" .
"$engine" image ls "$image"
