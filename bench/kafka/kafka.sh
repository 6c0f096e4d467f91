#!/usr/bin/env bash
# Apache Kafka 4.4.0 ($KAFKA_VERSION, passed on to fetch.sh, picks another
# release), KRaft single node in combined mode (broker+controller), for the bench.
#
#   kafka.sh start DIR PORT [key=value ...]   format storage in DIR, start, wait until ready;
#                                             prints the broker's pid (also in DIR/kafka.pid)
#   kafka.sh stop DIR                         SIGTERM, wait for exit (SIGKILL after 60 s)
#   kafka.sh format DIR PORT [key=value ...]  only write DIR/server.properties and format DIR
#   kafka.sh run DIR                          exec the broker in the foreground on an already
#                                             formatted DIR (no format, output to stdout; the
#                                             bench's timed restarts; $KAFKA_LIBS skips fetch.sh)
#
# The controller listens on PORT+1. Settings that the bench matches with Sluice's are given
# as key=value (num.partitions, log.segment.bytes, log.flush.interval.messages, ...); they are
# appended to the generated DIR/server.properties. Heap: $KAFKA_HEAP_OPTS (default -Xmx1G -Xms1G,
# as kafka-server-start.sh), JVM flags as kafka-run-class.sh's defaults plus $KAFKA_JVM_EXTRA
# (bench/run --profile sets -XX:+PreserveFramePointer, so that perf can walk JIT'd frames).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cmd="${1:-}"; dir="${2:-}"
[[ -n "$cmd" && -n "$dir" ]] || { sed -n '2,18p' "$0"; exit 2; }

heap="${KAFKA_HEAP_OPTS:--Xmx1G -Xms1G}"
jvm="-server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -Djava.awt.headless=true ${KAFKA_JVM_EXTRA:-}"
log4j="-Dlog4j2.configurationFile=$here/log4j2-broker.properties"

format_dir() {  # writes $dir/server.properties (port $port, extra key=value "$@") and formats $dir
  cport=$((port + 1))
  mkdir -p "$dir/data"
  dir="$(cd "$dir" && pwd)"
  cat > "$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$dir/data
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
PROPS
  for kv in "$@"; do echo "$kv" >> "$dir/server.properties"; done
  echo "java $heap $jvm $log4j -cp '$libs/*' kafka.Kafka $dir/server.properties" > "$dir/command.txt"
  java -Xmx256m $log4j -cp "$libs/*" kafka.tools.StorageTool format --standalone \
      -t MkU3OEVBNTcwNTJENDM2Qg -c "$dir/server.properties" > "$dir/format.log" 2>&1 \
    || { cat "$dir/format.log" >&2; exit 1; }
}

case "$cmd" in
start)
  port="${3:?port}"; shift 3
  libs="$("$here/fetch.sh")"
  format_dir "$@"
  # shellcheck disable=SC2086
  nohup java $heap $jvm $log4j -cp "$libs/*" kafka.Kafka "$dir/server.properties" \
      > "$dir/kafka.log" 2>&1 < /dev/null &
  pid=$!
  echo "$pid" > "$dir/kafka.pid"
  for _ in $(seq 1 600); do
    if grep -q "Kafka Server started" "$dir/kafka.log" 2>/dev/null; then echo "$pid"; exit 0; fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "kafka exited during start-up; log tail:" >&2; tail -30 "$dir/kafka.log" >&2; exit 1
    fi
    sleep 0.1
  done
  echo "kafka not ready after 60 s; log tail:" >&2; tail -30 "$dir/kafka.log" >&2
  kill "$pid" 2>/dev/null || true
  exit 1
  ;;
format)
  port="${3:?port}"; shift 3
  libs="$("$here/fetch.sh")"
  format_dir "$@"
  ;;
run)
  [[ -f "$dir/server.properties" ]] || { echo "$dir is not formatted (kafka.sh format)" >&2; exit 1; }
  libs="${KAFKA_LIBS:-$("$here/fetch.sh")}"
  dir="$(cd "$dir" && pwd)"
  echo "$$" > "$dir/kafka.pid"
  # shellcheck disable=SC2086
  exec java $heap $jvm $log4j -cp "$libs/*" kafka.Kafka "$dir/server.properties"
  ;;
stop)
  pidf="$dir/kafka.pid"
  [[ -f "$pidf" ]] || exit 0
  pid="$(cat "$pidf")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && { echo "kafka did not stop in 60 s: SIGKILL" >&2; kill -KILL "$pid"; }
  fi
  rm -f "$pidf"
  ;;
*) sed -n '2,18p' "$0"; exit 2 ;;
esac
