#!/usr/bin/env bash
# Installs what evonb needs on a fresh machine: a JDK for Spark (through apt when
# `java` is missing), Chromium for the browser tests (with --test), and the Python packages.
# Safe to run again: each step is skipped when its result is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

want_test=0
[ "${1:-}" = "--test" ] && want_test=1

apt_install() {
  local sudo=""
  if [ "$(id -u)" != "0" ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
      echo "setup: need root (or sudo) to apt-get install $*" >&2; return 1
    fi
  fi
  if [ ! -f /tmp/.evonb-apt-updated ]; then
    $sudo apt-get update -qq && touch /tmp/.evonb-apt-updated
  fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@"
}

# A JDK: Spark runs on its Java, and its javac compiles evonb's Spark sources (Java) for
# merge-on-read reads on first use (without javac those reads use Spark's own readers).
if ! command -v java >/dev/null 2>&1; then
  echo "setup: installing a Java development kit for Spark"
  apt_install openjdk-17-jdk-headless || apt_install default-jdk-headless
elif ! command -v javac >/dev/null 2>&1 && [ ! -x "${JAVA_HOME:-/nonexistent}/bin/javac" ]; then
  echo "setup: installing javac (the JDK) for evonb's Spark sources"
  apt_install openjdk-17-jdk-headless || apt_install default-jdk-headless \
    || echo "setup: no javac; merge-on-read reads will use Spark's own readers" >&2
fi

if [ "$want_test" = "1" ] && [ ! -x /usr/bin/chromium ]; then
  echo "setup: installing Chromium for the browser tests"
  apt_install chromium fonts-dejavu-core
fi

PY="${PYTHON:-python3}"
stamp=".setup-stamp"
if [ "$want_test" = "1" ]; then extras=".[test]"; else extras="."; fi
if [ ! -f "$stamp$want_test" ] || [ pyproject.toml -nt "$stamp$want_test" ]; then
  echo "setup: installing Python packages ($extras)"
  if ! "$PY" -m pip install --quiet --disable-pip-version-check -e "$extras"; then
    # A distribution's own Python may refuse installs (PEP 668): use a virtual environment
    # there, or, as here, say so explicitly.
    "$PY" -m pip install --quiet --disable-pip-version-check --break-system-packages -e "$extras"
  fi
  touch "$stamp$want_test"
fi

# Azurite, Microsoft's Azure Storage emulator (from the npm registry), for the tests of tables in
# Azure storage: they start its Blob service on loopback. Needs Node.js (through apt if missing).
if [ "$want_test" = "1" ]; then
  azurite_dir="${EVONB_AZURITE_DIR:-$HOME/.cache/evonb/azurite}"
  if [ ! -x "$azurite_dir/node_modules/.bin/azurite-blob" ]; then
    if ! command -v npm >/dev/null 2>&1; then
      echo "setup: installing Node.js for the Azure storage emulator"
      apt_install nodejs npm
    fi
    echo "setup: installing Azurite (the Azure storage emulator) into $azurite_dir"
    mkdir -p "$azurite_dir"
    npm install --prefix "$azurite_dir" --no-audit --no-fund --loglevel=error azurite@3 >/dev/null
  fi
fi
