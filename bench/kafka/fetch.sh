#!/usr/bin/env bash
# Fetch Apache Kafka 4.4.0 (broker + tools + clients) jars from Maven Central into
# bench/.cache/kafka-4.4.0/libs (gitignored, reused between runs), and compile the
# bench's small Java client (bench/kafka/BenchClient.java) next to them.
# Prints the libs directory on stdout.
#
# $KAFKA_VERSION picks another release (default 4.4.0, what bench/run and
# bench/soak/run measure): the same pom.xml with -Dkafka.version, cached in bench/.cache/kafka-$KAFKA_VERSION.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="${KAFKA_VERSION:-4.4.0}"
cache="$here/../.cache/kafka-$version"
libs="$cache/libs"
if [[ ! -f "$libs/.complete" ]]; then
  mkdir -p "$libs"
  (cd "$here" && mvn -q -B dependency:copy-dependencies -DincludeScope=runtime \
      -Dkafka.version="$version" -DoutputDirectory="$libs") >&2
  ls "$libs/kafka_2.13-$version.jar" "$libs/kafka-tools-$version.jar" >/dev/null
  touch "$libs/.complete"
fi
classes="$cache/bench-client"
if [[ ! -f "$classes/BenchClient.class" || "$here/BenchClient.java" -nt "$classes/BenchClient.class" ]]; then
  mkdir -p "$classes"
  javac -nowarn -d "$classes" -cp "$libs/*" "$here/BenchClient.java" >&2
fi
cd "$libs" && pwd
