#!/usr/bin/env bash
# The one test command (README "Test"; .ci/run runs exactly this).
# Installs what the integration tests need, idempotently, then runs cargo test.
#   - kcat and python3-venv from Debian (skipped when present)
#   - a Python venv with confluent-kafka and kafka-python (skipped when present)
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO=sudo; fi

need_apt=()
command -v kcat >/dev/null || need_apt+=(kcat)
python3 -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)
if [ ${#need_apt[@]} -gt 0 ]; then
    echo "tests/run.sh: installing ${need_apt[*]}" >&2
    $SUDO apt-get update
    $SUDO apt-get install -y --no-install-recommends "${need_apt[@]}"
fi

VENV="${SHARDLOG_TEST_VENV:-$HOME/.cache/shardlog/test-venv}"
if ! "$VENV/bin/python" -c 'import confluent_kafka, kafka' 2>/dev/null; then
    echo "tests/run.sh: creating Python venv at $VENV" >&2
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --upgrade pip
    "$VENV/bin/pip" install --quiet confluent-kafka kafka-python
fi
export SHARDLOG_TEST_VENV="$VENV"

# Dependencies are optimised even in dev builds (Cargo.toml), so a debug
# build of our crate is the faster way through build + tests.
exec cargo test "$@"
