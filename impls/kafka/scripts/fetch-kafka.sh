#!/usr/bin/env bash
# Resolve Apache Kafka's broker jars (org.apache.kafka:kafka_2.13 and its runtime dependencies)
# from Maven Central into one folder, once. Used by the test harness on first use and by
# .ci/setup.d/30-kafka.sh to prefetch.
#
#   fetch-kafka.sh [CACHE]     CACHE defaults to $LOADBEARING_KAFKA_CACHE or
#                              $HOME/.cache/loadbearing/kafka-$VERSION
# The jars land in CACHE/jars; CACHE/jars/.complete marks a finished resolution.
set -euo pipefail

VERSION="${LOADBEARING_KAFKA_VERSION:-4.4.0}"
CACHE="${1:-${LOADBEARING_KAFKA_CACHE:-$HOME/.cache/loadbearing/kafka-$VERSION}}"
JARS="$CACHE/jars"

if [ -f "$JARS/.complete" ]; then
  echo "kafka $VERSION jars already in $JARS"
  exit 0
fi
command -v mvn >/dev/null || { echo "mvn not found (install Debian's maven package)" >&2; exit 3; }

mkdir -p "$CACHE/pom"
cat > "$CACHE/pom/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>loadbearing</groupId>
  <artifactId>kafka-broker-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_2.13</artifactId>
      <version>$VERSION</version>
    </dependency>
  </dependencies>
</project>
POM

rm -rf "$JARS.partial"
mvn -B -q -f "$CACHE/pom/pom.xml" \
  -Dmaven.repo.local="$CACHE/m2" \
  org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
  -DoutputDirectory="$JARS.partial" -DincludeScope=runtime

count=$(find "$JARS.partial" -name '*.jar' | wc -l)
if [ "$count" -lt 20 ]; then
  echo "only $count jars resolved into $JARS.partial: the transitive dependencies were dropped" >&2
  exit 4
fi
rm -rf "$JARS"
mv "$JARS.partial" "$JARS"
touch "$JARS/.complete"
echo "kafka $VERSION: $count jars in $JARS"
