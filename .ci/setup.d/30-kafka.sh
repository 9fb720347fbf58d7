# Sourced by .ci/run (set -euo pipefail, as root, CI=true) from the repository root.
# The Kafka tests (impls/kafka) start their own Apache Kafka 4.4 broker; this makes sure they
# can: Java 17+ and Maven to run it and resolve its jars, cmake to build librdkafka (rdkafka's
# cmake-build), and the broker's jars prefetched so test time stays bounded. In CI a Kafka
# test that cannot start its broker fails instead of skipping.

kafka_setup_missing=()
command -v java >/dev/null 2>&1 || kafka_setup_missing+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || kafka_setup_missing+=(maven)
command -v cmake >/dev/null 2>&1 || kafka_setup_missing+=(cmake)
command -v c++ >/dev/null 2>&1 || kafka_setup_missing+=(g++)
if [ "${#kafka_setup_missing[@]}" -gt 0 ]; then
  echo "kafka: installing ${kafka_setup_missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${kafka_setup_missing[@]}"
fi
unset kafka_setup_missing

java -version 2>&1 | sed -n 1p
bash impls/kafka/scripts/fetch-kafka.sh
