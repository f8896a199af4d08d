#!/usr/bin/env bash
# A throwaway CA and a broker certificate for 127.0.0.1 / localhost, for the
# TLS runs (perf/kafka_peer.sh --ssl, perf/tls_cost.sh), made with the
# openssl CLI as `shardlog bench --security-protocol SSL` makes its own
# (src/loadgen/bench/certs.rs): RSA 2048, SHA-256, SAN IP:127.0.0.1 and
# DNS:localhost, valid two days.
#
#   perf/tls_certs.sh DIR      writes into DIR:
#     ca.pem                  the CA (clients' ssl.ca.location, PEM truststores)
#     broker-keystore.pem     PKCS#8 key + chain (ssl.keystore.type=PEM)
#     broker.p12              the same as PKCS12, password $TLS_STORE_PASSWORD
#                             (default "bench-secret"; ssl.keystore.type=PKCS12)
#     truststore.p12          the CA as a PKCS12 truststore made by keytool
set -euo pipefail
DIR="${1:?usage: tls_certs.sh DIR}"
PASS="${TLS_STORE_PASSWORD:-bench-secret}"
command -v openssl >/dev/null || { echo "tls_certs.sh: openssl missing: apt-get install openssl" >&2; exit 2; }
mkdir -p "$DIR"
cd "$DIR"
printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
  "extendedKeyUsage=serverAuth,clientAuth" "subjectAltName=IP:127.0.0.1,DNS:localhost" >broker.ext
openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 2 -subj /CN=shardlog-perf-ca -keyout ca.key -out ca.pem \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
openssl req -newkey rsa:2048 -nodes -sha256 -subj /CN=localhost -keyout broker.key -out broker.csr 2>/dev/null
openssl x509 -req -sha256 -days 2 -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
  -extfile broker.ext -out broker.crt 2>/dev/null
cat broker.key broker.crt >broker-keystore.pem
openssl pkcs12 -export -name broker -inkey broker.key -in broker.crt -certfile ca.pem \
  -passout "pass:$PASS" -out broker.p12
if command -v keytool >/dev/null; then
  rm -f truststore.p12
  keytool -importcert -noprompt -alias ca -file ca.pem -keystore truststore.p12 -storetype PKCS12 \
    -storepass "$PASS" >/dev/null 2>&1
fi
