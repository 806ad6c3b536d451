#!/usr/bin/env bash
# make bundle: dist/showbatch-<version>-linux-<arch>.tar.gz (+ .sha256) holding
#   showbatch-<version>-linux-<arch>/showbatch          release binary, Swift runtime linked in statically, stripped
#   showbatch-<version>-linux-<arch>/LICENSE
#   showbatch-<version>-linux-<arch>/RUNTIME-PACKAGES   the Debian packages the binary needs
#   showbatch-<version>-linux-<arch>/README
# The tarball is reproducible: sorted names, owner 0, mtime of the last commit, gzip -n.
set -euo pipefail
cd "$(dirname "$0")/.."

version="$(packaging/version.sh)"
arch="$(uname -m)"
name="showbatch-${version}-linux-${arch}"
dist="dist"
stage="$dist/$name"
tarball="$dist/$name.tar.gz"

# One incremental release build (a no-op when nothing changed since the last one).
echo "==> swift build -c release --static-swift-stdlib --product showbatch"
swift build -c release --static-swift-stdlib --product showbatch
bin="$(swift build -c release --static-swift-stdlib --show-bin-path)/showbatch"

got="$("$bin" --version)"
[ "$got" = "showbatch $version" ] || { echo "make-bundle: $bin --version says '$got', the sources say $version" >&2; exit 1; }

# Every shared library the binary loads directly must come from a package in the list.
packages="$(grep -v '^[[:space:]]*#' packaging/runtime-packages.txt | tr -s ' \n' '\n' | sed '/^$/d')"
if command -v dpkg >/dev/null 2>&1 && command -v readelf >/dev/null 2>&1; then
    echo "==> NEEDED libraries -> Debian packages"
    missing=0
    ldcache="$(ldconfig -p)"
    for soname in $(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
        path="$(awk -v s="$soname" '$1 == s && !p { print $NF; p = 1 }' <<<"$ldcache")"
        pkg=""
        for candidate in "$path" "$(readlink -f "$path")" "${path#/usr}" "$(readlink -f "$path" | sed 's|^/usr||')"; do
            [ -n "$candidate" ] || continue
            pkg="$(dpkg -S "$candidate" 2>/dev/null | sed -n '1s/:.*//p')" && [ -n "$pkg" ] && break
        done
        if [ -n "$pkg" ] && grep -qx "$pkg" <<<"$packages"; then
            printf '    %-24s %s\n' "$soname" "$pkg"
        else
            printf '    %-24s %s  <- NOT in packaging/runtime-packages.txt\n' "$soname" "${pkg:-?}"
            missing=1
        fi
    done
    [ "$missing" = 0 ] || { echo "make-bundle: add the packages above to packaging/runtime-packages.txt" >&2; exit 1; }
fi

echo "==> staging $stage"
rm -rf "$stage" && mkdir -p "$stage"
strip -o "$stage/showbatch" "$bin"
chmod 0755 "$stage" "$stage/showbatch"
cp LICENSE "$stage/LICENSE"
{
    echo "# Debian 12 (bookworm) packages showbatch $version needs at run time:"
    echo "#   apt-get install --no-install-recommends \$(grep -v '^#' RUNTIME-PACKAGES)"
    printf '%s\n' "$packages"
} > "$stage/RUNTIME-PACKAGES"
cat > "$stage/README" <<EOF
showbatch $version for Linux $arch: reveal VGS aliases in bulk from a YAML manifest.

Contents
  showbatch          the program; the Swift runtime and Foundation are linked in statically
  RUNTIME-PACKAGES   the Debian 12 (bookworm) packages it needs, one a line
  LICENSE            MIT

Install on Debian 12 (or a distribution with the same libraries):
  apt-get install --no-install-recommends \$(grep -v '^#' RUNTIME-PACKAGES)
  install -m 0755 showbatch /usr/local/bin/showbatch
  showbatch --version

Try it without an account or network (the built-in emulator on 127.0.0.1):
  showbatch help run
  showbatch run MANIFEST --emulate --output -

Exit codes: 0 all rows ok, 1 some rows partial or failed (outputs written), 2 usage or invalid
manifest, 3 runtime failure, 130 interrupted (rerun with --resume).
EOF
chmod 0644 "$stage/LICENSE" "$stage/RUNTIME-PACKAGES" "$stage/README"

echo "==> $tarball"
epoch="$(git log -1 --format=%ct 2>/dev/null || date +%s)"
tmp="$tarball.tmp"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
    -C "$dist" -cf - "$name" | gzip -9n > "$tmp"
mv "$tmp" "$tarball"
(cd "$dist" && sha256sum "$name.tar.gz" > "$name.tar.gz.sha256")
rm -rf "$stage"

tar -tvzf "$tarball"
printf 'bundle: %s  %s bytes (%s), binary %s bytes unpacked\n' "$tarball" \
    "$(stat -c %s "$tarball")" "$(du -h "$tarball" | cut -f1)" "$(tar -xzOf "$tarball" "$name/showbatch" | wc -c)"
cat "$dist/$name.tar.gz.sha256"
