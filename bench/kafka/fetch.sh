#!/usr/bin/env bash
# Fetch Apache Kafka 4.1.1 (broker + tools + clients) jars from Maven Central into
# bench/.cache/kafka-4.1.1/libs (gitignored, reused between runs), and compile the
# bench's small Java client (bench/kafka/BenchClient.java) next to them.
# Prints the libs directory on stdout.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="$here/../.cache/kafka-4.1.1"
libs="$cache/libs"
if [[ ! -f "$libs/.complete" ]]; then
  mkdir -p "$libs"
  (cd "$here" && mvn -q -B dependency:copy-dependencies -DincludeScope=runtime \
      -DoutputDirectory="$libs") >&2
  ls "$libs"/kafka_2.13-4.1.1.jar "$libs"/kafka-tools-4.1.1.jar >/dev/null
  touch "$libs/.complete"
fi
classes="$cache/bench-client"
if [[ ! -f "$classes/BenchClient.class" || "$here/BenchClient.java" -nt "$classes/BenchClient.class" ]]; then
  mkdir -p "$classes"
  javac -nowarn -d "$classes" -cp "$libs/*" "$here/BenchClient.java" >&2
fi
cd "$libs" && pwd
