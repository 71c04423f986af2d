#!/usr/bin/env bash
# Installs the system tools kinfer's tests use, only those that are missing.
#
#   scripts/install-test-deps.sh [kubectl] [docker-registry] ...   (default: all)
#
# - kubectl: `kubectl kustomize` for deploy/, and a real client against `kinfer cluster`
#   (Debian package kubernetes-client).
# - docker-registry: the reference OCI distribution server for kinfer-oci's registry tests
#   (Debian package docker-registry; the tests start the binary themselves on loopback, the
#   package's own service is not used).
# - musl-gcc: the C compiler for the static musl binaries of `cargo xtask image` (Debian
#   package musl-tools; ring compiles C).
# - promtool: checks the alert rules of deploy/monitoring (Debian package prometheus; its
#   server is not started by the tests).
#
# Tests call this themselves when a tool is missing, so nothing is ever installed by hand.
# Installing needs root, or password-less sudo, and Debian's package mirror (as on CI).
set -euo pipefail

tools=("$@")
[ ${#tools[@]} -gt 0 ] || tools=(kubectl docker-registry musl-gcc promtool)

# tool -> "package binary"
describe() {
    case "$1" in
        kubectl) echo "kubernetes-client kubectl" ;;
        docker-registry) echo "docker-registry /usr/bin/docker-registry" ;;
        musl-gcc) echo "musl-tools musl-gcc" ;;
        promtool) echo "prometheus promtool" ;;
        *) echo "install-test-deps: unknown tool: $1" >&2; return 1 ;;
    esac
}

present() { command -v "$1" >/dev/null 2>&1 || [ -x "$1" ]; }

missing=()
for tool in "${tools[@]}"; do
    read -r package binary <<<"$(describe "$tool")"
    present "$binary" || missing+=("$tool")
done
[ ${#missing[@]} -gt 0 ] || exit 0

if [ "$(id -u)" -eq 0 ]; then
    sudo=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
else
    echo "install-test-deps: missing ${missing[*]}: run as root, or install with apt-get" >&2
    exit 1
fi

# Tests run in parallel: serialise concurrent callers, then look again.
exec 9>/tmp/kinfer-install-test-deps.lock
flock 9
packages=()
reinstall=()
for tool in "${missing[@]}"; do
    read -r package binary <<<"$(describe "$tool")"
    present "$binary" && continue
    # A package registered as installed whose binary is gone needs --reinstall.
    if dpkg -s "$package" >/dev/null 2>&1; then reinstall+=("$package"); else packages+=("$package"); fi
done
export DEBIAN_FRONTEND=noninteractive
if [ ${#packages[@]} -gt 0 ] || [ ${#reinstall[@]} -gt 0 ]; then
    "${sudo[@]}" apt-get update -qq >&2
fi
if [ ${#packages[@]} -gt 0 ]; then
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${packages[@]}" >&2
fi
if [ ${#reinstall[@]} -gt 0 ]; then
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends --reinstall "${reinstall[@]}" >&2
fi
for tool in "${missing[@]}"; do
    read -r package binary <<<"$(describe "$tool")"
    present "$binary" || { echo "install-test-deps: $tool still missing after installing $package" >&2; exit 1; }
done
