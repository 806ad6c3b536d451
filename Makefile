# The two commands of the README: `make demo` and `make test`.
# Both install the C libraries the package links (Debian -dev packages: libyaml-dev,
# libcurl4-openssl-dev, zlib1g-dev, libgpgme-dev, libssl-dev) and gnupg (the gpg that GPGME runs
# for encrypted outputs) when missing; `make test` also installs Debian's nginx-light,
# prometheus-pushgateway and openssh-server, which tests run on loopback ports of their own, and
# prometheus (promtool), python3 and openssl.

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps test-deps demo test build release

deps:
	@{ pkg-config --exists yaml-0.1 libcurl zlib gpgme libcrypto && command -v gpg; } >/dev/null 2>&1 || { \
		echo "installing libyaml-dev, libcurl4-openssl-dev, zlib1g-dev, libgpgme-dev, libssl-dev (the C libraries showbatch links) and gnupg"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq libyaml-dev libcurl4-openssl-dev zlib1g-dev libgpgme-dev libssl-dev gnupg pkg-config; }

# What the tests run besides showbatch: nginx-light (an HTTP/2 server with its own GOAWAY policy),
# prometheus-pushgateway and openssh-server (the processor's SFTP server), each started by the
# tests on a loopback port of their own. Installing the pushgateway or sshd enables and starts its
# system service (port 9091, port 22). The tests never use them, so when this target installed the
# package it stops the service and keeps it from starting at boot: nothing is left running on the
# machine's behalf.
test-deps: deps
	@[ -x /usr/sbin/nginx ] || { \
		echo "installing nginx-light (the HTTP/2 failure-path tests start their own on a loopback port)"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq --no-install-recommends nginx-light && \
		{ $(SUDO) invoke-rc.d nginx stop >/dev/null 2>&1 || true; }; }
	@[ -x /usr/bin/prometheus-pushgateway ] || { \
		echo "installing prometheus-pushgateway (the --metrics-push tests start their own on a loopback port)"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq --no-install-recommends prometheus-pushgateway && \
		if [ -d /run/systemd/system ]; then \
			$(SUDO) systemctl disable --now prometheus-pushgateway.service >/dev/null 2>&1 || true; \
		else \
			$(SUDO) invoke-rc.d prometheus-pushgateway stop >/dev/null 2>&1 || true; \
			$(SUDO) update-rc.d prometheus-pushgateway disable >/dev/null 2>&1 || true; \
		fi; }
	@[ -x /usr/bin/promtool ] || { \
		echo "installing prometheus (for promtool: the monitoring sample's rules are checked and unit-tested with it)"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq --no-install-recommends prometheus && \
		if [ -d /run/systemd/system ]; then \
			$(SUDO) systemctl disable --now prometheus.service >/dev/null 2>&1 || true; \
		else \
			$(SUDO) invoke-rc.d prometheus stop >/dev/null 2>&1 || true; \
			$(SUDO) update-rc.d prometheus disable >/dev/null 2>&1 || true; \
		fi; }
	@{ [ -x /usr/bin/python3 ] && [ -x /usr/bin/openssl ]; } || { \
		echo "installing python3 and openssl (test stand-ins for hostile servers; the HTTPS tests' own CA)"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq --no-install-recommends python3 openssl; }
	@[ -x /usr/sbin/sshd ] || { \
		echo "installing openssh-server (the SFTP delivery tests start their own sshd on a loopback port)"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq --no-install-recommends openssh-server && \
		if [ -d /run/systemd/system ]; then \
			$(SUDO) systemctl disable --now ssh.service ssh.socket >/dev/null 2>&1 || true; \
		else \
			$(SUDO) invoke-rc.d ssh stop >/dev/null 2>&1 || true; \
			$(SUDO) update-rc.d ssh disable >/dev/null 2>&1 || true; \
		fi; }

build: deps
	swift build

release: deps
	swift build -c release

# The main job on the built-in emulator: no account, no network. Rows print to the terminal.
demo: deps
	swift run showbatch run samples/nightly-card-export.yaml --emulate --output -

test: test-deps
	swift build
	swift test --disable-xctest

# The YAML test suite's data (not stored here; README, "The YAML read"): every case that can be a
# payload is sent as its in.json says, but for the differences the test lists. YAML_TEST_SUITE is a
# folder holding the data-2022-01-17 tag, e.g. from
#   git clone -b data-2022-01-17 --depth 1 https://github.com/yaml/yaml-test-suite /tmp/yaml-test-suite
.PHONY: yaml-test-suite
yaml-test-suite: deps
	@[ -d "$(YAML_TEST_SUITE)" ] || { echo "YAML_TEST_SUITE=folder: the yaml-test-suite data (see the Makefile)"; exit 2; }
	YAML_TEST_SUITE="$(YAML_TEST_SUITE)" swift test --disable-xctest --filter YAMLTestSuiteTests

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
