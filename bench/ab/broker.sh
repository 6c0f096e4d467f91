# Sourced by the bench/ab scripts: one fresh Sluice broker per run, and the bench's load
# generator client settings.
#
#   start_broker BINARY DIR PARTITIONS     once PORT is free (the last run's broker gone),
#                                          starts BINARY on DIR/data with the bench's broker
#                                          settings (PORT, default 19092; SHARDS, default 1
#                                          as in bench/run;
#                                          EXTRA="key = value" adds a TOML line; SEGMENT_BYTES
#                                          sets log.segment.bytes, default 1 GiB), waits until it
#                                          is ready and sets PID; it is killed when the script
#                                          exits.
# shellcheck shell=bash

PORT=${PORT:-19092}
# The load generator's client settings: those of the Java producer and consumer in bench/run.
COMMON="--batch-bytes 131072 --linger-ms 5 --max-in-flight 5 --max-request-bytes 1048576 --buffer-bytes 33554432 --fetch-max-wait-ms 500 --fetch-min-bytes 1 --fetch-max-bytes 52428800 --partition-max-bytes 1048576"

start_broker() {
  local bin=$1 dir=$2 partitions=$3
  # The last run's broker may still hold the port while it exits (its releaser freeing a
  # deleted topic's GBs): wait for it, at most 5 minutes.
  for _ in $(seq 600); do ss -ltn | grep -q ":$PORT " || break; sleep 0.5; done
  rm -rf "$dir"; mkdir -p "$dir/data"
  cat > "$dir/sluice.toml" <<T
listeners = "PLAINTEXT://127.0.0.1:$PORT"
log.dirs = "$dir/data"
num.partitions = $partitions
log.segment.bytes = ${SEGMENT_BYTES:-1073741824}
log.flush.interval.messages = 9223372036854775807
group.initial.rebalance.delay.ms = 0
sluice.shards = ${SHARDS:-1}
${EXTRA:-}
T
  "$bin" --config "$dir/sluice.toml" > "$dir/log" 2>&1 &
  PID=$!
  # shellcheck disable=SC2064
  trap "kill $PID 2>/dev/null || true" EXIT
  for _ in $(seq 100); do grep -qi ready "$dir/log" && break; sleep 0.1; done
}

# TCP segments this host has sent so far (/proc/net/snmp's OutSegs): on loopback every segment
# is a pass through the send and receive paths, so segments per MiB show how an answer left.
tcp_out_segs() {
  awk '/^Tcp:/ { if (!c) { for (i = 1; i <= NF; i++) if ($i == "OutSegs") c = i } else print $c }' /proc/net/snmp
}
