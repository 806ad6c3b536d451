#!/usr/bin/env bash
# make bundle-check: prove that the bundle's binary runs on a Debian root file system that holds
# only the bundle's RUNTIME-PACKAGES.
#
#   1. debootstrap --variant=minbase --include=<RUNTIME-PACKAGES> bookworm, cached under
#      .build/debian-root/ (keyed by suite + package list, so reruns take seconds)
#   2. chroot, as user nobody, with an empty environment: ldd finds every library,
#      `showbatch --version`, and `showbatch run samples/nightly-card-export.yaml --emulate --output -`
#      prints the CSV header and the sample's 3 rows, all ok
#   3. podman (when installed; PODMAN=no skips it, PODMAN=yes requires it): `podman import` the
#      same root as a base image, build packaging/check-image.Containerfile on it with the bundle's
#      binary, run it read-only with no network, report the image size
#
# usage: packaging/check-bundle.sh [TARBALL]     (default: dist/showbatch-<version>-linux-<arch>.tar.gz)
# env:   MIRROR (default: the Debian mirror of this machine's apt sources), SUITE (bookworm),
#        PODMAN (auto|yes|no), PODMAN_RUNTIME (runc). Any failed check exits non-zero.
# Needs root (debootstrap, chroot, rootful podman).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"

t0="$(date +%s.%N)"
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f s", b - a }'; }
step() { printf '\n==> %s\n' "$*"; }
ok() { printf '    ok: %s\n' "$*"; }
fail() { printf '    FAILED: %s\n' "$*" >&2; exit 1; }

suite="${SUITE:-bookworm}"
podman_mode="${PODMAN:-auto}"
version="$(packaging/version.sh)"
arch="$(uname -m)"
name="showbatch-${version}-linux-${arch}"
tarball="${1:-dist/$name.tar.gz}"
sample="samples/nightly-card-export.yaml"

[ "$(id -u)" = 0 ] || { echo "check-bundle: needs root (debootstrap, chroot)" >&2; exit 1; }
[ -f "$tarball" ] || { echo "check-bundle: no $tarball; run 'make bundle' first" >&2; exit 1; }
[ -f "$sample" ] || { echo "check-bundle: no $sample" >&2; exit 1; }
topdir="$(tar -tzf "$tarball" | sed -n '1s|/.*||p')"
packages="$(tar -xzOf "$tarball" "$topdir/RUNTIME-PACKAGES" | grep -v '^[[:space:]]*#' | sed '/^[[:space:]]*$/d')"
[ -n "$packages" ] || fail "the bundle has no RUNTIME-PACKAGES list"
include="$(paste -sd, <<<"$packages")"
echo "bundle:           $tarball ($(stat -c %s "$tarball") bytes)"
echo "runtime packages: $include"

# --- the Debian mirror this machine's apt uses -------------------------------------------------
find_mirror() {
    local f uri
    # deb822 (.sources): the first stanza of Types deb whose Suites has the suite itself.
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        uri="$(awk -v suite="$suite" '
            function flush() { if (deb && has && uri != "" && !found) { print uri; found = 1 } deb = has = 0; uri = "" }
            /^[[:space:]]*$/ { flush(); next }
            /^[[:space:]]*#/ { next }
            tolower($1) == "types:" { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
            tolower($1) == "uris:" { uri = $2 }
            tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == suite) has = 1 }
            END { flush() }' "$f")"
        [ -n "$uri" ] && { echo "$uri"; return; }
    done
    # one-line format: deb [options] URI SUITE COMPONENTS...
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        uri="$(awk -v suite="$suite" '$1 == "deb" {
                i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
                if ($(i + 1) == suite) { print $i; exit } }' "$f")"
        [ -n "$uri" ] && { echo "$uri"; return; }
    done
    echo "http://deb.debian.org/debian"
}
mirror="${MIRROR:-$(find_mirror)}"
echo "debian mirror:    $mirror (from this machine's apt sources; MIRROR=... overrides)"

# --- 1. the minimal root, cached -----------------------------------------------------------------
cache="$repo/.build/debian-root"
# make_root DIR [INCLUDE]: debootstrap a minbase root into DIR unless a complete one is cached there.
make_root() {
    local dir="$1" inc="${2:-}" t log
    if [ -f "$dir/.showbatch-check-complete" ]; then
        ok "cached root $dir (built $(cat "$dir/.showbatch-check-complete"))"
        return
    fi
    if ! command -v debootstrap >/dev/null 2>&1; then
        echo "    installing debootstrap"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
    fi
    mkdir -p "$cache"
    rm -rf "$dir.tmp"
    t="$(date +%s.%N)"
    log="$dir.debootstrap.log"
    if ! debootstrap --variant=minbase ${inc:+--include="$inc"} "$suite" "$dir.tmp" "$mirror" > "$log" 2>&1; then
        tail -n 20 "$log" >&2
        fail "debootstrap (log: $log)"
    fi
    # As debian:*-slim: no downloaded .debs, no apt lists.
    rm -rf "$dir.tmp"/var/cache/apt/archives/*.deb "$dir.tmp"/var/lib/apt/lists/*
    date -u +%Y-%m-%dT%H:%M:%SZ > "$dir.tmp/.showbatch-check-complete"
    mv "$dir.tmp" "$dir"
    ok "debootstrap of $dir took $(elapsed "$t")"
}
key="$(printf '%s\n%s\n%s\n' "$suite" minbase "$packages" | sha256sum | cut -c1-12)"
root="$cache/$suite-minbase-$key"
step "1. Debian root: debootstrap --variant=minbase --include=$include $suite"
make_root "$root" "$include"
ok "root: $(du -sh --exclude=showbatch-check "$root" | cut -f1), $(chroot "$root" dpkg-query -f '.\n' -W | wc -l) packages"
for p in $packages; do
    # shellcheck disable=SC2016  # ${Status} is dpkg-query's field, not a shell variable
    status="$(chroot "$root" dpkg-query -W -f '${Status}' "$p" 2>/dev/null || true)"
    [ "$status" = "install ok installed" ] || fail "package $p is not installed in the root"
done
ok "every runtime package is installed in the root"

# --- 2. chroot -----------------------------------------------------------------------------------
step "2. chroot: the bundle unpacked into the root, run as nobody with an empty environment"
dest="$root/opt/showbatch-check"
rm -rf "$dest" && mkdir -p "$dest"
tar -xzf "$tarball" -C "$dest" --strip-components=1 --no-same-owner
cp "$sample" "$dest/sample.yaml"
chmod -R a+rX "$dest"
ok "unpacked into /opt/showbatch-check: $(cd "$dest" && echo *)"

# showbatch needs /proc, as every container runtime provides it: without it the Swift runtime
# cannot read the process's arguments (CommandLine.arguments comes back empty, so every command
# line behaves as a bare `showbatch`: help text, exit 0). A chroot has no /proc unless mounted.
proc_mounted=0
unmount_proc() { if [ "$proc_mounted" = 1 ]; then umount "$root/proc" && proc_mounted=0; fi; }
trap unmount_proc EXIT
if ! mountpoint -q "$root/proc"; then
    mount -t proc proc "$root/proc"
    proc_mounted=1
fi
ok "/proc mounted in the root (unmounted again at the end of this step)"

in_root() { chroot --userspec=65534:65534 "$root" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/nonexistent LANG=C.UTF-8 "$@"; }

lddout="$(chroot "$root" /usr/bin/ldd /opt/showbatch-check/showbatch)" || fail "ldd in the root"
if grep -q 'not found' <<<"$lddout"; then
    grep 'not found' <<<"$lddout" >&2
    fail "ldd: libraries missing in the root"
fi
ok "ldd: all $(grep -c '=>' <<<"$lddout") libraries resolve inside the root"

got="$(in_root /opt/showbatch-check/showbatch --version)" || fail "showbatch --version exited $?"
[ "$got" = "showbatch $version" ] || fail "--version printed '$got', expected 'showbatch $version'"
ok "showbatch --version -> $got"

check_rows() { # $1: CSV text; the sample's header and its 3 rows, every one ok
    local csv="$1" header rows
    header="$(sed -n 1p <<<"$csv")"
    rows="$(sed 1d <<<"$csv" | sed '/^$/d')"
    [[ "$header" == request,status,http_status,attempts,error,* ]] || fail "CSV header is '$header'"
    [ "$(wc -l <<<"$rows")" = 3 ] || { printf '%s\n' "$csv" | cut -c1-60 >&2; fail "expected 3 rows, got $(wc -l <<<"$rows")"; }
    [ "$(cut -d, -f2 <<<"$rows" | sort -u)" = ok ] || fail "a row is not ok: $(cut -d, -f1,2 <<<"$rows" | paste -sd' ')"
    ok "CSV header + 3 rows, all ok: $(cut -d, -f1 <<<"$rows" | paste -sd' ')"
}
t="$(date +%s.%N)"
out="$(in_root /opt/showbatch-check/showbatch run /opt/showbatch-check/sample.yaml --emulate --output - --quiet)" \
    || fail "showbatch run --emulate exited $?"
check_rows "$out"
ok "run took $(elapsed "$t") (revealed values are not printed here)"

# Encrypted exports need gpg (gnupg) and GPGME at run time: the same sample, its output
# encrypted to a key made here, must decrypt (outside the root, with the secret key) to the
# rows just printed.
gnupghome="$(mktemp -d)"
gpg_here() { gpg --homedir "$gnupghome" --batch --quiet --pinentry-mode loopback --passphrase '' "$@"; }
gpg_here --quick-gen-key "showbatch bundle check <check@example.test>" future-default default 1d
gpg_here --armor --export check@example.test > "$dest/recipient.asc"
sed 's|^  path: out/nightly-cards.csv$|  path: /opt/showbatch-check/out/nightly-cards.csv.pgp\n  encrypt: {recipients: [/opt/showbatch-check/recipient.asc]}|' \
    "$sample" > "$dest/encrypted.yaml"
grep -q 'encrypt:' "$dest/encrypted.yaml" || fail "the encrypted sample was not made (the sample's output path changed?)"
rm -rf "$dest/out" && install -d -m 0777 "$dest/out"
chmod a+r "$dest/recipient.asc" "$dest/encrypted.yaml"
in_root /opt/showbatch-check/showbatch run /opt/showbatch-check/encrypted.yaml --emulate --quiet \
    || { gpgconf --homedir "$gnupghome" --kill all; rm -rf "$gnupghome"; fail "showbatch run of the encrypted sample exited $?"; }
decrypted="$(gpg_here --decrypt "$dest/out/nightly-cards.csv.pgp")" || fail "gpg could not decrypt the encrypted sample's output"
gpgconf --homedir "$gnupghome" --kill all
rm -rf "$gnupghome"
[ "$decrypted" = "$out" ] || fail "the encrypted sample's output does not decrypt to the rows of the plain run"
[ -z "$(find "$dest/out" -type f ! -name nightly-cards.csv.pgp)" ] || fail "the encrypted run left files beside its output: $(ls "$dest/out")"
ok "an encrypted export (output.encrypt) runs in the root and decrypts to the same rows"
unmount_proc

# --- 3. podman ---------------------------------------------------------------------------------
step "3. podman: import the root as a base image, build the check image, run it"
if [ "$podman_mode" = no ]; then
    echo "    skipped (PODMAN=no)"
elif ! command -v podman >/dev/null 2>&1 && [ "$podman_mode" = auto ]; then
    echo "    skipped: podman is not installed (apt-get install podman; PODMAN=yes installs it)"
else
    if ! command -v podman >/dev/null 2>&1; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc >/dev/null
    fi
    # On these machines the default OCI runtime (crun) and podman's default ulimits do not work
    # inside the sandbox: use runc and no default ulimits.
    work="$repo/.build/podman-check"
    mkdir -p "$work"
    printf '[containers]\ndefault_ulimits = []\n' > "$work/containers.conf"
    export CONTAINERS_CONF="$work/containers.conf"
    runtime=(--runtime "${PODMAN_RUNTIME:-runc}")

    # The base is the root made as lean as debian:bookworm-slim is made from a minbase root (the
    # same paths slim's dpkg filter leaves out: docs but their copyright, man, info, locales), so
    # the image size below is close to what `make image` gives on the real debian:bookworm-slim.
    import_slim() { # import_slim ROOT TAG
        local t
        if podman image exists "$2"; then ok "cached base image $2"; return; fi
        t="$(date +%s.%N)"
        # slim's dpkg filter too, so that packages installed on top of the stand-in leave out the
        # same paths as on the real debian:bookworm-slim
        mkdir -p "$1/etc/dpkg/dpkg.cfg.d"
        printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
            'path-exclude /usr/share/groff/*' 'path-exclude /usr/share/info/*' 'path-exclude /usr/share/lintian/*' \
            'path-exclude /usr/share/locale/*' 'path-include /usr/share/locale/locale.alias' \
            'path-exclude /usr/share/man/*' > "$1/etc/dpkg/dpkg.cfg.d/showbatch-check-slim"
        (cd "$1" && find . \( -path './proc/*' -o -path ./opt/showbatch-check -o -path ./.showbatch-check-complete \
                -o -path './usr/share/man/*' -o -path './usr/share/info/*' -o -path './usr/share/groff/*' \
                -o -path './usr/share/lintian/*' -o \( -path './usr/share/locale/*' ! -name locale.alias \) \
                -o \( -path './usr/share/doc/*' ! -type d ! -name copyright \) \) -prune -o -print0 \
            | tar --null --no-recursion --numeric-owner -T - -cf -) \
            | podman import --quiet - "$2" >/dev/null || fail "podman import"
        ok "podman import of $1 (slimmed) -> $2 ($(elapsed "$t"))"
    }
    base="localhost/showbatch-check-base:$suite-slim-$key"
    import_slim "$root" "$base"

    ctx="$work/context"
    rm -rf "$ctx" && mkdir -p "$ctx"
    cp "$dest/showbatch" "$dest/LICENSE" "$ctx/"
    image="localhost/showbatch-check:$version"
    podman rmi -f "$image" >/dev/null 2>&1 || true
    t="$(date +%s.%N)"
    podman build --quiet --layers=false "${runtime[@]}" -f packaging/check-image.Containerfile \
        --build-arg "BASE=$base" --build-arg "VERSION=$version" -t "$image" "$ctx" >/dev/null \
        || fail "podman build"
    ok "podman build -> $image ($(elapsed "$t"))"

    run=(podman run --rm "${runtime[@]}" --network none --read-only)
    got="$("${run[@]}" "$image" --version)" || fail "podman run $image --version"
    [ "$got" = "showbatch $version" ] || fail "--version in the container printed '$got'"
    ok "podman run --network none --read-only $image --version -> $got (uid $("${run[@]}" --entrypoint id "$image" -u))"

    out="$("${run[@]}" -v "$repo/$sample:/config/manifest.yaml:ro" "$image" \
        run /config/manifest.yaml --emulate --output - --quiet)" || fail "podman run ... run --emulate"
    check_rows "$out"

    # As in samples/kubernetes: read-only root, manifest read-only under /config, shard 1 of 2 from
    # JOB_COMPLETION_INDEX, the output (and its journal) on a writable volume owned by uid 10001.
    vol="$work/data"
    rm -rf "$vol" && install -d -o 10001 -g 10001 "$vol"
    rc=0
    "${run[@]}" -e JOB_COMPLETION_INDEX=1 -v "$repo/$sample:/config/manifest.yaml:ro" -v "$vol:/data" "$image" \
        run /config/manifest.yaml --emulate --shard auto/2 --resume --log-format json \
        --output /data/out/nightly-cards.csv --quiet || rc=$?
    [ "$rc" = 0 ] || fail "sharded run in the container exited $rc"
    shard="$vol/out/nightly-cards-shard-1.csv"
    [ -f "$shard" ] || fail "no $shard: $(ls -R "$vol")"
    ok "sharded run (auto/2, index 1) wrote out/$(basename "$shard"): $(($(wc -l < "$shard") - 1)) row(s), mode $(stat -c '%a, owner %u' "$shard")"
    rm -rf "$vol"

    echo "    podman image ls:"
    podman image ls --format '      {{.Repository}}:{{.Tag}}  {{.Size}}' | grep -E 'showbatch-check' || true
    ok "image $image: $(podman image inspect --format '{{.Size}}' "$image") bytes; base: $(podman image inspect --format '{{.Size}}' "$base") bytes"

    # --- 4. the Containerfile's runtime stage, as written ------------------------------------------
    # The real bases cannot be pulled here. The runtime stage of ../Containerfile is built verbatim
    # (its apt step, user, labels, entrypoint) on a stand-in for debian:bookworm-slim: a plain minbase
    # root, slimmed the same way. Its build stage is replaced by the check image above, which holds
    # the bundle's binary at the path the stage copies from. apt reaches the Debian mirror.
    step "4. podman: the Containerfile's runtime stage, verbatim, on a debian:bookworm-slim stand-in"
    plain="$cache/$suite-minbase"
    make_root "$plain"
    slim="localhost/showbatch-check-slim:$suite"
    import_slim "$plain" "$slim"
    stagefile="$work/runtime-stage.Containerfile"
    {
        echo "# Generated by packaging/check-bundle.sh: the runtime stage of Containerfile, as written;"
        echo "# the build stage is the check image, which holds the bundle's binary. (The LABEL gives the"
        echo "# stage an image of its own: podman removes a FROM-only stage's image, the check image, after the build.)"
        echo "ARG DEBIAN_IMAGE"
        echo "FROM $image AS build"
        echo "LABEL showbatch.check.stage=build"
        awk '/^FROM /{ n++ } n >= 2' Containerfile
    } > "$stagefile"
    grep -q 'COPY --from=build /usr/local/bin/showbatch' "$stagefile" || fail "Containerfile's runtime stage not found"
    rimage="localhost/showbatch-runtime-check:$version"
    podman rmi -f "$rimage" >/dev/null 2>&1 || true
    t="$(date +%s.%N)"
    podman build --quiet --layers=false "${runtime[@]}" -f "$stagefile" --build-arg "DEBIAN_IMAGE=$slim" \
        --build-arg "VERSION=$version" --build-arg "REVISION=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)" \
        -t "$rimage" "$repo" >/dev/null || fail "podman build of the runtime stage"
    ok "podman build -> $rimage ($(elapsed "$t"))"
    got="$("${run[@]}" "$rimage" --version)" || fail "podman run $rimage --version"
    [ "$got" = "showbatch $version" ] || fail "--version in the container printed '$got'"
    ok "podman run $rimage --version -> $got"
    out="$("${run[@]}" -v "$repo/$sample:/config/manifest.yaml:ro" "$rimage" \
        run /config/manifest.yaml --emulate --output - --quiet)" || fail "podman run ... run --emulate"
    check_rows "$out"
    # An encrypted export in the image (its gnupg runs GPGME's gpg; GnuPG's private home goes to
    # /tmp, the tmpfs of a read-only container): the key from a read-only mount, the message on the
    # volume, decrypted here to the rows just printed.
    gnupghome="$(mktemp -d)"
    gpg_here() { gpg --homedir "$gnupghome" --batch --quiet --pinentry-mode loopback --passphrase '' "$@"; }
    gpg_here --quick-gen-key "showbatch image check <check@example.test>" future-default default 1d
    keys="$work/keys" && rm -rf "$keys" && mkdir -p "$keys"
    gpg_here --armor --export check@example.test > "$keys/processor.asc"
    sed 's|^  path: out/nightly-cards.csv$|  path: /data/nightly-cards.csv.pgp\n  encrypt: {recipients: [/keys/processor.asc]}|' "$sample" > "$keys/manifest.yaml"
    chmod -R a+rX "$keys"
    rm -rf "$vol" && install -d -o 10001 -g 10001 "$vol"
    "${run[@]}" -v "$keys:/keys:ro" -v "$keys/manifest.yaml:/config/manifest.yaml:ro" -v "$vol:/data" "$rimage" \
        run /config/manifest.yaml --emulate --quiet || fail "podman run ... an encrypted export exited $?"
    decrypted="$(gpg_here --decrypt "$vol/nightly-cards.csv.pgp")" || fail "gpg could not decrypt the image's encrypted export"
    gpgconf --homedir "$gnupghome" --kill all
    rm -rf "$gnupghome"
    [ "$decrypted" = "$out" ] || fail "the image's encrypted export does not decrypt to the plain run's rows"
    ok "an encrypted export runs in the image (read-only, no network) and decrypts to the same rows"
    ok "user $(podman image inspect --format '{{.Config.User}}' "$rimage"), workdir $(podman image inspect --format '{{.Config.WorkingDir}}' "$rimage"), entrypoint $(podman image inspect --format '{{json .Config.Entrypoint}}' "$rimage"), labels: $(podman image inspect --format '{{range $k, $v := .Labels}}{{$k}} {{end}}' "$rimage" | tr ' ' '\n' | grep -c '^org.opencontainers') OCI"
    n_slim="$(podman run --rm "${runtime[@]}" --network none --entrypoint dpkg-query "$slim" -W | wc -l)"
    n_img="$("${run[@]}" --entrypoint dpkg-query "$rimage" -W | wc -l)"
    ok "apt added $((n_img - n_slim)) packages to the $n_slim of the slim stand-in"
    echo "    podman image ls:"
    podman image ls --format '      {{.Repository}}:{{.Tag}}  {{.Size}}' | grep -E 'showbatch-(check-slim|runtime-check)' || true
    ok "image $rimage: $(podman image inspect --format '{{.Size}}' "$rimage") bytes; slim stand-in: $(podman image inspect --format '{{.Size}}' "$slim") bytes"
fi

printf '\nbundle check passed in %s\n' "$(elapsed "$t0")"
