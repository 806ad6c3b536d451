# The two commands of the README: `make demo` and `make test`.
# Both install the C libraries the package links (Debian -dev packages: libyaml-dev,
# libcurl4-openssl-dev, zlib1g-dev, libgpgme-dev, libssl-dev) and gnupg (the gpg that GPGME runs
# for encrypted outputs) when missing.

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps demo test build release

deps:
	@{ pkg-config --exists yaml-0.1 libcurl zlib gpgme libcrypto && command -v gpg; } >/dev/null 2>&1 || { \
		echo "installing libyaml-dev, libcurl4-openssl-dev, zlib1g-dev, libgpgme-dev, libssl-dev (the C libraries showbatch links) and gnupg"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq libyaml-dev libcurl4-openssl-dev zlib1g-dev libgpgme-dev libssl-dev gnupg pkg-config; }

build: deps
	swift build

release: deps
	swift build -c release

# The main job on the built-in emulator: no account, no network. Rows print to the terminal.
demo: deps
	swift run showbatch run samples/nightly-card-export.yaml --emulate --output -

test: deps
	swift build
	swift test --disable-xctest

# Packaging (packaging/README.md): the container image, the release tarball in dist/, and a test
# of that tarball on a minimal Debian root (debootstrap + chroot, and podman when it works).
.PHONY: image bundle bundle-check k8s-check

image:
	packaging/build-image.sh

bundle: deps
	packaging/make-bundle.sh

bundle-check: bundle
	packaging/check-bundle.sh

k8s-check:
	python3 packaging/check-k8s-samples.py
