#!/usr/bin/env bash
# The Apache Kafka 3.9 jars (client, command-line tools, broker, reload4j
# logging) that the Java tests (tests/java_*.rs) and perf/kafka_peer.sh use,
# copied from Maven Central with tests/java/pom.xml into a cache folder, once.
#
#   bash tests/java/fetch_jars.sh        # prints the folder on its last stdout line
#
# Folder: $SHARDLOG_KAFKA_JARS, default $HOME/.cache/shardlog/kafka-jars-<version>.
# Skipped when the folder is complete (its .complete marker names the POM's
# checksum, so a changed POM fetches again). Needs java, javac and mvn:
#   apt-get install -y --no-install-recommends openjdk-17-jdk-headless maven
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
POM="$HERE/pom.xml"
VERSION="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$POM")"
DEST="${SHARDLOG_KAFKA_JARS:-$HOME/.cache/shardlog/kafka-jars-$VERSION}"
SUM="$(sha256sum "$POM" | cut -d' ' -f1)"

if [ -f "$DEST/.complete" ] && [ "$(cat "$DEST/.complete")" = "$SUM" ]; then
  echo "$DEST"
  exit 0
fi
for tool in java javac mvn; do
  command -v "$tool" >/dev/null || {
    echo "fetch_jars.sh: $tool missing: apt-get install -y --no-install-recommends openjdk-17-jdk-headless maven (tests/run.sh does this)" >&2
    exit 2
  }
done
echo "fetch_jars.sh: resolving Kafka $VERSION jars into $DEST (mvn dependency:copy-dependencies)" >&2
# Copy into a sibling temp folder and rename it into place, so an
# interrupted run never leaves a folder that looks complete.
mkdir -p "$(dirname "$DEST")"
TMP="$(mktemp -d "$DEST.tmp.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
mvn -q -B -Dstyle.color=never -f "$POM" dependency:copy-dependencies \
  -DincludeScope=runtime -DoutputDirectory="$TMP" >&2
for jar in kafka-clients kafka-tools kafka_2.13; do
  ls "$TMP/$jar-$VERSION.jar" >/dev/null || { echo "fetch_jars.sh: $jar-$VERSION.jar missing after mvn" >&2; exit 1; }
done
echo "$SUM" >"$TMP/.complete"
rm -rf "$DEST"
mv "$TMP" "$DEST"
trap - EXIT
echo "$DEST"
