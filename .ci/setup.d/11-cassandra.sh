# Cassandra 5.0 for the impls tests (impls/tests/cassandra*.rs): Java 17 and Maven from Debian if
# missing, then org.apache.cassandra:cassandra-all and its runtime dependencies resolved from
# Maven Central into the cache folder the tests read (impls/src/harness/cassandra.rs). The tests
# start, kill and remove their own node. Sourced by .ci/run under `set -euo pipefail`.
LB_CASSANDRA_VERSION=5.0.5
LB_CASSANDRA_HOME="${LOADBEARING_CASSANDRA_HOME:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/loadbearing-impls/cassandra-$LB_CASSANDRA_VERSION}"
lb_need=()
if ! compgen -G '/usr/lib/jvm/java-1[17]-openjdk-*/bin/java' >/dev/null; then
  lb_need+=(openjdk-17-jre-headless)
fi
command -v mvn >/dev/null 2>&1 || lb_need+=(maven)
if [ "${#lb_need[@]}" -gt 0 ]; then
  echo "installing ${lb_need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${lb_need[@]}" >/dev/null
fi
if [ ! -f "$LB_CASSANDRA_HOME/lib/cassandra-all-$LB_CASSANDRA_VERSION.jar" ]; then
  echo "resolving cassandra-all:$LB_CASSANDRA_VERSION into $LB_CASSANDRA_HOME/lib"
  mkdir -p "$LB_CASSANDRA_HOME"
  cat > "$LB_CASSANDRA_HOME/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>loadbearing</groupId>
  <artifactId>cassandra-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.cassandra</groupId>
      <artifactId>cassandra-all</artifactId>
      <version>$LB_CASSANDRA_VERSION</version>
    </dependency>
  </dependencies>
</project>
POM
  (cd "$LB_CASSANDRA_HOME" && mvn -B -q \
    org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$LB_CASSANDRA_HOME/lib" \
    -Dmaven.repo.local="$LB_CASSANDRA_HOME/m2")
fi
lb_jars=$(find "$LB_CASSANDRA_HOME/lib" -name '*.jar' | wc -l)
echo "cassandra $LB_CASSANDRA_VERSION: $lb_jars jars in $LB_CASSANDRA_HOME/lib"
[ "$lb_jars" -gt 50 ]
unset lb_need lb_jars
