#!/usr/bin/env bash
# Resolve Apache Kafka's broker jars (org.apache.kafka:kafka_2.13 and its runtime dependencies)
# from Maven Central into one folder, once. Used by the test harness on first use and by
# .ci/setup.d/30-kafka.sh to prefetch.
#
#   fetch-kafka.sh [CACHE]     CACHE defaults to $LOADBEARING_KAFKA_CACHE or
#                              $HOME/.cache/loadbearing/kafka-$VERSION
# The jars land in CACHE/jars; CACHE/jars/.complete-2 marks a finished resolution (the number
# goes up when the list below changes, so an older cache is resolved again).
set -euo pipefail

VERSION="${LOADBEARING_KAFKA_VERSION:-4.4.0}"
CACHE="${1:-${LOADBEARING_KAFKA_CACHE:-$HOME/.cache/loadbearing/kafka-$VERSION}}"
JARS="$CACHE/jars"

if [ -f "$JARS/.complete-2" ]; then
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
    <!-- The operator's tools (kafka-transactions.sh: describe and abort hanging transactions). -->
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka-tools</artifactId>
      <version>$VERSION</version>
    </dependency>
    <!-- The broker logs through SLF4J 1.7; without this binding it logs nothing at all. -->
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>2.25.5</version>
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
touch "$JARS/.complete-2"
echo "kafka $VERSION: $count jars in $JARS"
