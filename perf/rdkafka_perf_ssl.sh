#!/usr/bin/env bash
# librdkafka's rdkafka_performance built WITH OpenSSL, for the TLS cost runs
# (perf/tls_cost.sh): the shared ../shared/tools/rdkafka-perf is configured
# with --disable-ssl ("OpenSSL not available at build time" for
# security.protocol=ssl). Same source (the rdkafka-sys crate's librdkafka,
# same version), same flags otherwise, linked against the system OpenSSL
# (libssl-dev). Usage as rdkafka-perf, e.g.
#   perf/rdkafka_perf_ssl.sh -P -t bench -b 127.0.0.1:9093 -s 1024 -X acks=1 \
#       -X security.protocol=ssl -X ssl.ca.location=ca.pem
# Build folder: $RDKAFKA_PERF_SSL_HOME (default ~/.cache/rdkafka-perf-ssl).
set -euo pipefail
VER="${RDKAFKA_SYS_VERSION:-4.10.0+2.12.1}"
HOME_DIR="${RDKAFKA_PERF_SSL_HOME:-$HOME/.cache/rdkafka-perf-ssl}"
BIN="$HOME_DIR/rdkafka_performance"
if [ ! -x "$BIN" ]; then
  mkdir -p "$HOME_DIR"
  command -v gcc >/dev/null && command -v make >/dev/null || { echo "rdkafka_perf_ssl.sh: needs gcc and make" >&2; exit 2; }
  [ -e /usr/include/zlib.h ] || { echo "rdkafka_perf_ssl.sh: needs zlib1g-dev (apt-get install zlib1g-dev)" >&2; exit 2; }
  [ -e /usr/include/openssl/ssl.h ] || { echo "rdkafka_perf_ssl.sh: needs libssl-dev (apt-get install libssl-dev)" >&2; exit 2; }
  crate="$(ls "$HOME"/.cargo/registry/cache/*/rdkafka-sys-"$VER".crate 2>/dev/null | head -1 || true)"
  [ -n "$crate" ] || { echo "rdkafka_perf_ssl.sh: rdkafka-sys-$VER.crate not in ~/.cargo/registry/cache (run ../shared/tools/rdkafka-perf once)" >&2; exit 2; }
  src="$HOME_DIR/src"; rm -rf "$src"; mkdir -p "$src"; tar xzf "$crate" -C "$src"
  lib="$src/rdkafka-sys-$VER/librdkafka"
  (cd "$lib" && ./configure --enable-ssl --disable-gssapi --disable-sasl --disable-curl \
      --disable-zstd --disable-lz4-ext --disable-regex-ext >/dev/null && make -C src -j"$(nproc)" librdkafka.a >/dev/null) >&2
  gcc -O2 -I"$lib/src" -o "$BIN" "$lib/examples/rdkafka_performance.c" "$lib/src/librdkafka.a" -lssl -lcrypto -lm -lz -ldl -lpthread -lrt
fi
exec "$BIN" "$@"
