package sluice.clients;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DeletedRecords;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TopicListing;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Command-line Kafka client used by Sluice's end-to-end tests (tests/clients).
 *
 * <pre>
 * produce --bootstrap B --topic T --count N [--acks all|1|0] [--compression none|gzip|snappy|lz4|zstd]
 *         [--acked-file F] [--key-prefix k] [--start 0] [--value-size 0] [--max-rate 0]
 *         [--allow-failures false] [--linger-ms 5] [--batch-size 65536] [--max-in-flight 5] [--spread N]
 *         [--idempotence false|true|default]   (default: leave enable.idempotence to Kafka, i.e. on)
 *         [--stop-file S]   (stop sending once S exists, then flush; --count is then an upper bound)
 * consume --bootstrap B --topic T [--expect N] [--acked-file F] [--mode exact|acked] [--timeout-s 180]
 *         [--client-rack R]   (KIP-392: client.rack; prints NODE_BYTES <node-id> <bytes received> per broker)
 * group-consume --bootstrap B --topic T --group G --events F --stop-file S [--assignor range|roundrobin|sticky|cooperative-sticky]
 *         [--session-timeout-ms 45000] [--heartbeat-interval-ms 3000] [--max-poll-records 500] [--max-runtime-s 300]
 *         (subscribes as a classic group member, commitSync after each processed poll; events file lines:
 *          ASSIGN|REVOKE|LOST ts p,p..., REC p offset key, COMMITTED ts p=o,..., COMMIT_FAILED ts msg; exits when S exists)
 * session-consume --bootstrap B --topic T --phases "0,1;0,1,2,3;2,3;0,3" [--per-phase 200] [--timeout-s 120]
 *         (fetch sessions: per phase, produces --per-phase records to every partition, assigns the phase's
 *          partitions — kept ones keep their position, added ones resume where they left off — and reads
 *          each to its end: offsets contiguous from 0, value seq = offset; FetchSessionHandler logs at debug)
 * admin create --bootstrap B --topic T --partitions N [--configs k=v,k=v]   (exit 10 on TopicExistsException)
 * admin describe-configs --bootstrap B --topic T         (lines: config NAME=VALUE source=SOURCE)
 * admin alter-configs --bootstrap B --topic T [--set k=v,k=v] [--delete k,k]   (incrementalAlterConfigs)
 * admin delete-records --bootstrap B --topic T --partition P --before N   (prints low_watermark=L)
 * admin first-offset --bootstrap B --topic T --partition P (seekToBeginning + poll: position=P first_offset=O)
 * admin delete|describe-topic|autocreate --bootstrap B --topic T
 * admin list|describe-cluster --bootstrap B
 * streams-wordcount --bootstrap B --app-id A --input T --output T --state-dir D [--commit-ms N]
 *         (Kafka Streams word count with a RocksDB store, see StreamsWordCount; runs until killed)
 * admin list-detail --bootstrap B [--internal true]   (lines: listing NAME id=TOPIC_ID internal=BOOL)
 * admin describe-topics --bootstrap B --topics T1,T2,...   (per topic: "topic NAME id=ID internal=BOOL partitions=N"
 *         and "partition NAME P leader=L replicas=R1;R2 isr=I1;I2", or "error NAME ExceptionClass"; exit 0)
 * </pre>
 *
 * Message format shared with the Python tests: key = prefix + seq, value = key + "|" + seq + "|" + 'x' * value-size.
 * Exit codes: 0 ok, 1 verification failure or client exception, 2 produce failures, 10 topic exists, 64 usage.
 */
public final class Main {
    private static final PrintStream OUT = System.out;

    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            usage("missing command");
        }
        int rc;
        try {
            switch (args[0]) {
                case "produce":
                    rc = produce(parse(args, 1));
                    break;
                case "consume":
                    rc = consume(parse(args, 1));
                    break;
                case "group-consume":
                    rc = groupConsume(parse(args, 1));
                    break;
                case "session-consume":
                    rc = sessionConsume(parse(args, 1));
                    break;
                case "streams-wordcount":
                    rc = StreamsWordCount.run(parse(args, 1));
                    break;
                case "admin":
                    if (args.length < 2) {
                        usage("admin needs a sub-command");
                    }
                    rc = admin(args[1], parse(args, 2));
                    break;
                default:
                    usage("unknown command " + args[0]);
                    return;
            }
        } catch (Exception e) {
            Throwable c = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
            OUT.println("ERROR " + c.getClass().getName() + ": " + c.getMessage());
            c.printStackTrace(System.err);
            rc = 1;
        }
        OUT.flush();
        System.exit(rc);
    }

    private static void usage(String msg) {
        System.err.println("usage error: " + msg);
        System.exit(64);
    }

    private static Map<String, String> parse(String[] args, int from) {
        Map<String, String> m = new HashMap<>();
        for (int i = from; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--") || i + 1 >= args.length) {
                usage("bad argument " + a);
            }
            m.put(a.substring(2), args[++i]);
        }
        return m;
    }

    private static String req(Map<String, String> o, String k) {
        String v = o.get(k);
        if (v == null) {
            usage("missing --" + k);
        }
        return v;
    }

    // ------------------------------------------------------------------ produce

    private static int produce(Map<String, String> o) throws Exception {
        String topic = req(o, "topic");
        long count = Long.parseLong(req(o, "count"));
        long start = Long.parseLong(o.getOrDefault("start", "0"));
        String prefix = o.getOrDefault("key-prefix", "k");
        int valueSize = Integer.parseInt(o.getOrDefault("value-size", "0"));
        long maxRate = Long.parseLong(o.getOrDefault("max-rate", "0"));
        boolean allowFailures = Boolean.parseBoolean(o.getOrDefault("allow-failures", "false"));
        String ackedFile = o.get("acked-file");
        // --spread N: explicit partition seq % N instead of the key hash
        int spread = Integer.parseInt(o.getOrDefault("spread", "0"));
        // --stop-file S: the fault test runs the producer for as long as its schedule lasts.
        java.nio.file.Path stopFile = o.containsKey("stop-file") ? Paths.get(o.get("stop-file")) : null;
        long sent = 0;

        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, req(o, "bootstrap"));
        p.put(ProducerConfig.ACKS_CONFIG, o.getOrDefault("acks", "all"));
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, o.getOrDefault("compression", "none"));
        // --idempotence false (the default here, as before), true, or default: leave
        // enable.idempotence unset, i.e. Kafka's default (on, with acks=all).
        String idempotence = o.getOrDefault("idempotence", "false");
        if (!idempotence.equals("default")) {
            p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, idempotence);
        }
        p.put(ProducerConfig.LINGER_MS_CONFIG, o.getOrDefault("linger-ms", "5"));
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, o.getOrDefault("batch-size", "65536"));
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, o.getOrDefault("request-timeout-ms", "15000"));
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, o.getOrDefault("delivery-timeout-ms", "60000"));
        p.put(ProducerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "500");
        p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, o.getOrDefault("max-in-flight", "5"));
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, o.getOrDefault("max-block-ms", "60000"));
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());

        AtomicLong acked = new AtomicLong();
        AtomicLong failed = new AtomicLong();
        AtomicReference<String> firstError = new AtomicReference<>();
        BufferedWriter w = ackedFile == null ? null : Files.newBufferedWriter(Paths.get(ackedFile), StandardCharsets.UTF_8);
        Object lock = new Object();
        String pad = "x".repeat(valueSize);
        long t0 = System.nanoTime();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            for (long i = 0; i < count; i++) {
                // Checked every 64 records: a file system call per record would cap the rate.
                if (stopFile != null && i % 64 == 0 && Files.exists(stopFile)) {
                    break;
                }
                sent++;
                long seq = start + i;
                String key = prefix + seq;
                String value = key + "|" + seq + "|" + pad;
                if (maxRate > 0) {
                    long due = t0 + (long) (i * 1e9 / maxRate);
                    long now = System.nanoTime();
                    if (due > now) {
                        TimeUnit.NANOSECONDS.sleep(due - now);
                    }
                }
                producer.send(new ProducerRecord<>(topic, spread > 0 ? (Integer) (int) (seq % spread) : null, key.getBytes(StandardCharsets.UTF_8),
                        value.getBytes(StandardCharsets.UTF_8)), (md, ex) -> {
                    if (ex != null) {
                        failed.incrementAndGet();
                        firstError.compareAndSet(null, ex.getClass().getName() + ": " + ex.getMessage());
                        return;
                    }
                    long n = acked.incrementAndGet();
                    if (w != null) {
                        synchronized (lock) {
                            try {
                                w.write(md.partition() + " " + md.offset() + " " + key + "\n");
                                if (n % 1000 == 0) {
                                    w.flush();
                                }
                            } catch (IOException e) {
                                throw new RuntimeException(e);
                            }
                        }
                    }
                });
            }
            producer.flush();
        } finally {
            if (w != null) {
                synchronized (lock) {
                    w.close();
                }
            }
        }
        double secs = (System.nanoTime() - t0) / 1e9;
        OUT.printf("produced topic=%s sent=%d acked=%d failed=%d seconds=%.2f%n", topic, sent, acked.get(), failed.get(), secs);
        if (firstError.get() != null) {
            OUT.println("first_error=" + firstError.get());
        }
        if (acked.get() + failed.get() != sent) {
            OUT.println("ERROR callbacks " + (acked.get() + failed.get()) + " != sent " + sent);
            return 1;
        }
        return failed.get() == 0 || allowFailures ? 0 : 2;
    }

    // ------------------------------------------------------------------ consume

    private static String partitionList(Collection<TopicPartition> tps) {
        List<Integer> ps = new ArrayList<>();
        for (TopicPartition tp : tps) {
            ps.add(tp.partition());
        }
        Collections.sort(ps);
        StringBuilder sb = new StringBuilder();
        for (int p : ps) {
            if (sb.length() > 0) {
                sb.append(',');
            }
            sb.append(p);
        }
        return sb.length() == 0 ? "-" : sb.toString();
    }

    private static int groupConsume(Map<String, String> o) throws Exception {
        String topic = req(o, "topic");
        java.nio.file.Path stopFile = Paths.get(req(o, "stop-file"));
        long maxRuntimeMs = Long.parseLong(o.getOrDefault("max-runtime-s", "300")) * 1000;
        String assignor = o.getOrDefault("assignor", "range");
        Map<String, String> assignors = new HashMap<>();
        assignors.put("range", "org.apache.kafka.clients.consumer.RangeAssignor");
        assignors.put("roundrobin", "org.apache.kafka.clients.consumer.RoundRobinAssignor");
        assignors.put("sticky", "org.apache.kafka.clients.consumer.StickyAssignor");
        assignors.put("cooperative-sticky", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
        if (!assignors.containsKey(assignor)) {
            usage("--assignor range|roundrobin|sticky|cooperative-sticky");
        }
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, req(o, "bootstrap"));
        p.put(ConsumerConfig.GROUP_ID_CONFIG, req(o, "group"));
        p.put("group.protocol", "classic");
        p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignors.get(assignor));
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, o.getOrDefault("session-timeout-ms", "45000"));
        p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, o.getOrDefault("heartbeat-interval-ms", "3000"));
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, o.getOrDefault("max-poll-records", "500"));
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        if (o.containsKey("group-instance-id")) {
            p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, o.get("group-instance-id"));
        }
        try (BufferedWriter events = Files.newBufferedWriter(Paths.get(req(o, "events")), StandardCharsets.UTF_8,
                java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
             KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
                private void event(String kind, Collection<TopicPartition> tps) {
                    try {
                        events.write(kind + " " + System.currentTimeMillis() + " " + partitionList(tps) + "\n");
                        events.flush();
                    } catch (IOException e) {
                        throw new RuntimeException(e);
                    }
                }

                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                    event("REVOKE", tps);
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                    event("ASSIGN", tps);
                }

                @Override
                public void onPartitionsLost(Collection<TopicPartition> tps) {
                    event("LOST", tps);
                }
            };
            consumer.subscribe(Collections.singletonList(topic), listener);
            long t0 = System.currentTimeMillis();
            while (!Files.exists(stopFile)) {
                if (System.currentTimeMillis() - t0 > maxRuntimeMs) {
                    OUT.println("ERROR max runtime reached");
                    return 1;
                }
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) {
                    continue;
                }
                Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    events.write("REC " + r.partition() + " " + r.offset() + " "
                            + new String(r.key(), StandardCharsets.UTF_8) + "\n");
                    next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                events.flush();
                try {
                    consumer.commitSync(next);
                    StringBuilder sb = new StringBuilder("COMMITTED " + System.currentTimeMillis() + " ");
                    for (Map.Entry<TopicPartition, OffsetAndMetadata> e : next.entrySet()) {
                        sb.append(e.getKey().partition()).append('=').append(e.getValue().offset()).append(',');
                    }
                    events.write(sb.append('\n').toString());
                } catch (Exception e) {
                    events.write("COMMIT_FAILED " + System.currentTimeMillis() + " " + e.getClass().getSimpleName() + "\n");
                }
                events.flush();
            }
        }
        OUT.println("stopped");
        return 0;
    }

    private static int sessionConsume(Map<String, String> o) throws Exception {
        // Before any Kafka class makes its logger: the session handler's decisions go to stderr,
        // where the test reads which fetches were full, incremental, or failed.
        System.setProperty("org.slf4j.simpleLogger.log.org.apache.kafka.clients.FetchSessionHandler", "debug");
        String topic = req(o, "topic");
        int perPhase = Integer.parseInt(o.getOrDefault("per-phase", "200"));
        long timeoutMs = Long.parseLong(o.getOrDefault("timeout-s", "120")) * 1000;
        List<Set<Integer>> phases = new ArrayList<>();
        for (String phase : req(o, "phases").split(";")) {
            Set<Integer> ps = new TreeSet<>();
            for (String part : phase.split(",")) {
                ps.add(Integer.parseInt(part.trim()));
            }
            phases.add(ps);
        }
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, req(o, "bootstrap"));
        pp.put(ProducerConfig.ACKS_CONFIG, "all");
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, req(o, "bootstrap"));
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        cp.put(ConsumerConfig.CHECK_CRCS_CONFIG, "true");
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        List<String> errors = new ArrayList<>();
        Map<Integer, Long> produced = new HashMap<>();
        Map<Integer, Long> position = new HashMap<>();
        long read = 0;
        long t0 = System.currentTimeMillis();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp);
             KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(cp)) {
            int partitions = consumer.partitionsFor(topic, Duration.ofSeconds(30)).size();
            Set<TopicPartition> assigned = new HashSet<>();
            for (int phase = 0; phase < phases.size(); phase++) {
                for (int p = 0; p < partitions; p++) {
                    for (int i = 0; i < perPhase; i++) {
                        long seq = produced.merge(p, 1L, Long::sum) - 1;
                        String key = "s" + p + "-" + seq;
                        producer.send(new ProducerRecord<>(topic, p, key.getBytes(StandardCharsets.UTF_8),
                                (key + "|" + seq + "|").getBytes(StandardCharsets.UTF_8))).get();
                    }
                }
                Set<TopicPartition> next = new HashSet<>();
                for (int p : phases.get(phase)) {
                    next.add(new TopicPartition(topic, p));
                }
                consumer.assign(next);
                for (TopicPartition tp : next) {
                    if (!assigned.contains(tp)) {
                        consumer.seek(tp, position.getOrDefault(tp.partition(), 0L));
                    }
                }
                assigned = next;
                while (true) {
                    boolean done = true;
                    for (TopicPartition tp : assigned) {
                        if (position.getOrDefault(tp.partition(), 0L) < produced.get(tp.partition())) {
                            done = false;
                        }
                    }
                    if (done) {
                        break;
                    }
                    if (System.currentTimeMillis() - t0 > timeoutMs) {
                        OUT.println("ERROR timeout in phase " + phase + "; positions " + position + " produced " + produced);
                        return 1;
                    }
                    for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                        read++;
                        int p = r.partition();
                        long expected = position.getOrDefault(p, 0L);
                        String value = new String(r.value(), StandardCharsets.UTF_8);
                        String[] f = value.split("\\|", -1);
                        if (!phases.get(phase).contains(p)) {
                            err(errors, "phase " + phase + ": record of unassigned partition " + p);
                        } else if (r.offset() != expected) {
                            err(errors, "partition " + p + ": offset " + r.offset() + " but expected " + expected);
                        } else if (f.length != 3 || Long.parseLong(f[1]) != r.offset()) {
                            err(errors, "partition " + p + " offset " + r.offset() + ": value '" + abbreviate(value) + "'");
                        }
                        position.put(p, Math.max(expected, r.offset() + 1));
                    }
                }
                OUT.println("phase " + phase + " partitions " + phases.get(phase) + " positions " + position);
            }
        }
        for (String e : errors) {
            OUT.println("ERROR " + e);
        }
        OUT.println((errors.isEmpty() ? "OK" : "FAILED") + " phases=" + phases.size() + " read=" + read
                + " ms=" + (System.currentTimeMillis() - t0));
        return errors.isEmpty() ? 0 : 1;
    }

    private static int consume(Map<String, String> o) throws Exception {
        String topic = req(o, "topic");
        long expect = Long.parseLong(o.getOrDefault("expect", "-1"));
        String mode = o.getOrDefault("mode", "exact");
        if (!mode.equals("exact") && !mode.equals("acked")) {
            usage("--mode exact|acked");
        }
        boolean exact = mode.equals("exact");
        long timeoutMs = Long.parseLong(o.getOrDefault("timeout-s", "180")) * 1000;

        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, req(o, "bootstrap"));
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        p.put(ConsumerConfig.CHECK_CRCS_CONFIG, "true");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5000");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        String clientRack = o.get("client-rack");
        if (clientRack != null) {
            p.put(ConsumerConfig.CLIENT_RACK_CONFIG, clientRack);
        }

        List<String> errors = new ArrayList<>();
        Map<Integer, List<String>> keysByPartition = new HashMap<>();
        Set<String> seenKeys = new HashSet<>();
        long total = 0;
        long t0 = System.currentTimeMillis();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            List<PartitionInfo> infos = consumer.partitionsFor(topic, Duration.ofSeconds(30));
            if (infos == null || infos.isEmpty()) {
                OUT.println("ERROR no partitions for topic " + topic);
                return 1;
            }
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo pi : infos) {
                tps.add(new TopicPartition(topic, pi.partition()));
                keysByPartition.put(pi.partition(), new ArrayList<>());
            }
            consumer.assign(tps);
            Map<TopicPartition, Long> begin = consumer.beginningOffsets(tps, Duration.ofSeconds(30));
            Map<TopicPartition, Long> end = consumer.endOffsets(tps, Duration.ofSeconds(30));
            for (TopicPartition tp : tps) {
                if (begin.get(tp) != 0L) {
                    errors.add("partition " + tp.partition() + " log start offset is " + begin.get(tp) + ", expected 0");
                }
                consumer.seek(tp, 0L);
            }
            Map<Integer, Long> lastSeq = new HashMap<>();
            Set<TopicPartition> pending = new HashSet<>();
            for (TopicPartition tp : tps) {
                if (end.get(tp) > 0) {
                    pending.add(tp);
                }
            }
            while (!pending.isEmpty()) {
                if (System.currentTimeMillis() - t0 > timeoutMs) {
                    StringBuilder sb = new StringBuilder("ERROR timeout; still pending:");
                    for (TopicPartition tp : pending) {
                        sb.append(' ').append(tp.partition()).append(" at ").append(consumer.position(tp))
                                .append("/").append(end.get(tp));
                    }
                    OUT.println(sb);
                    return 1;
                }
                ConsumerRecords<byte[], byte[]> recs = consumer.poll(Duration.ofMillis(500));
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    total++;
                    int part = r.partition();
                    List<String> keys = keysByPartition.get(part);
                    String key = r.key() == null ? null : new String(r.key(), StandardCharsets.UTF_8);
                    String value = r.value() == null ? null : new String(r.value(), StandardCharsets.UTF_8);
                    if (r.offset() != keys.size()) {
                        err(errors, "partition " + part + ": offset " + r.offset() + " but expected " + keys.size()
                                + " (offsets must be contiguous from 0)");
                    }
                    while (keys.size() < r.offset()) {
                        keys.add(null);
                    }
                    if (keys.size() == r.offset()) {
                        keys.add(key);
                    }
                    if (key == null || value == null) {
                        err(errors, "partition " + part + " offset " + r.offset() + ": null key or value");
                        continue;
                    }
                    String[] f = value.split("\\|", -1);
                    if (f.length != 3 || !f[0].equals(key) || !key.endsWith(f[1]) || !f[2].chars().allMatch(c -> c == 'x')) {
                        err(errors, "partition " + part + " offset " + r.offset() + ": value '" + abbreviate(value)
                                + "' does not match key '" + key + "'");
                        continue;
                    }
                    if (exact) {
                        if (!seenKeys.add(key)) {
                            err(errors, "duplicate key " + key + " at partition " + part + " offset " + r.offset());
                        }
                        long seq = Long.parseLong(f[1]);
                        Long prev = lastSeq.put(part, seq);
                        if (prev != null && prev >= seq) {
                            err(errors, "partition " + part + " offset " + r.offset() + ": seq " + seq
                                    + " after seq " + prev + " (order differs from produce order)");
                        }
                    }
                }
                for (TopicPartition tp : new ArrayList<>(pending)) {
                    if (consumer.position(tp) >= end.get(tp)) {
                        pending.remove(tp);
                    }
                }
            }
            for (TopicPartition tp : tps) {
                long n = keysByPartition.get(tp.partition()).size();
                if (n != end.get(tp)) {
                    err(errors, "partition " + tp.partition() + ": read " + n + " records but end offset is " + end.get(tp));
                }
            }
            if (clientRack != null) {
                // Which broker the records came from (KIP-392): the consumer's own per-node
                // byte counts (consumer-node-metrics, tag node-id "node-<id>").
                for (Map.Entry<MetricName, ? extends Metric> m : consumer.metrics().entrySet()) {
                    MetricName name = m.getKey();
                    if (name.group().equals("consumer-node-metrics") && name.name().equals("incoming-byte-total")) {
                        String node = name.tags().getOrDefault("node-id", "");
                        if (node.startsWith("node-") && !node.startsWith("node--")) {
                            OUT.println("NODE_BYTES " + node.substring(5) + " "
                                    + (long) ((Number) m.getValue().metricValue()).doubleValue());
                        }
                    }
                }
            }
        }

        if (expect >= 0 && exact && total != expect) {
            err(errors, "consumed " + total + " records, expected " + expect);
        }
        if (expect >= 0 && !exact && total < expect) {
            err(errors, "consumed " + total + " records, expected at least " + expect);
        }
        String ackedFile = o.get("acked-file");
        long ackedChecked = 0;
        if (ackedFile != null) {
            try (BufferedReader r = Files.newBufferedReader(Paths.get(ackedFile), StandardCharsets.UTF_8)) {
                String line;
                while ((line = r.readLine()) != null) {
                    if (line.isBlank()) {
                        continue;
                    }
                    String[] f = line.trim().split(" ");
                    if (f.length != 3) {
                        continue; // a torn last line of a killed producer
                    }
                    int part = Integer.parseInt(f[0]);
                    long off = Long.parseLong(f[1]);
                    ackedChecked++;
                    List<String> keys = keysByPartition.get(part);
                    String got = keys == null || off >= keys.size() ? null : keys.get((int) off);
                    if (!f[2].equals(got)) {
                        err(errors, "acknowledged record " + f[2] + " at partition " + part + " offset " + off
                                + " is missing; found " + (got == null ? "nothing" : "key " + got));
                    }
                }
            }
            if (exact && ackedChecked != total) {
                err(errors, "acked file has " + ackedChecked + " records but consumed " + total);
            }
        }
        StringBuilder sb = new StringBuilder();
        for (int part : new TreeSet<>(keysByPartition.keySet())) {
            sb.append(sb.length() == 0 ? "" : ",").append(part).append(':').append(keysByPartition.get(part).size());
        }
        OUT.printf("consumed topic=%s records=%d acked_checked=%d seconds=%.2f partitions=%s%n", topic, total,
                ackedChecked, (System.currentTimeMillis() - t0) / 1000.0, sb);
        if (!errors.isEmpty()) {
            for (String e : errors) {
                OUT.println("ERROR " + e);
            }
            return 1;
        }
        OUT.println("OK");
        return 0;
    }

    private static void err(List<String> errors, String msg) {
        if (errors.size() < 30) {
            errors.add(msg);
        } else if (errors.size() == 30) {
            errors.add("... more errors suppressed");
        }
    }

    private static String abbreviate(String s) {
        return s.length() > 60 ? s.substring(0, 60) + "..." : s;
    }

    // ------------------------------------------------------------------ admin

    private static int admin(String sub, Map<String, String> o) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, req(o, "bootstrap"));
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        if (sub.equals("autocreate")) {
            return autocreate(o);
        }
        try (Admin admin = Admin.create(p)) {
            switch (sub) {
                case "create": {
                    String topic = req(o, "topic");
                    int parts = Integer.parseInt(req(o, "partitions"));
                    short rf = Short.parseShort(o.getOrDefault("replication", "1"));
                    NewTopic nt = new NewTopic(topic, parts, rf);
                    if (o.containsKey("configs")) {
                        nt.configs(keyValues(o.get("configs")));
                    }
                    try {
                        admin.createTopics(Collections.singleton(nt)).all().get();
                    } catch (ExecutionException e) {
                        if (e.getCause() instanceof TopicExistsException) {
                            OUT.println("TopicExistsException: " + e.getCause().getMessage());
                            return 10;
                        }
                        throw e;
                    }
                    waitForLeaders(admin, topic, parts);
                    OUT.println("created " + topic + " partitions=" + parts);
                    return 0;
                }
                case "delete": {
                    String topic = req(o, "topic");
                    admin.deleteTopics(Collections.singleton(topic)).all().get();
                    OUT.println("deleted " + topic);
                    return 0;
                }
                case "list": {
                    Set<String> names = new TreeSet<>(admin.listTopics(new ListTopicsOptions().listInternal(false)).names().get());
                    for (String n : names) {
                        OUT.println("topic " + n);
                    }
                    return 0;
                }
                case "list-detail": {
                    boolean internal = Boolean.parseBoolean(o.getOrDefault("internal", "false"));
                    List<TopicListing> listings = new ArrayList<>(
                            admin.listTopics(new ListTopicsOptions().listInternal(internal)).listings().get());
                    listings.sort(java.util.Comparator.comparing(TopicListing::name));
                    for (TopicListing l : listings) {
                        OUT.println("listing " + l.name() + " id=" + l.topicId() + " internal=" + l.isInternal());
                    }
                    return 0;
                }
                case "describe-topics": {
                    // One future per name: an unknown topic fails only its own entry, as Admin reports it.
                    List<String> topics = java.util.Arrays.asList(req(o, "topics").split(","));
                    Map<String, org.apache.kafka.common.KafkaFuture<TopicDescription>> futures =
                            admin.describeTopics(topics).topicNameValues();
                    for (String name : topics) {
                        TopicDescription td;
                        try {
                            td = futures.get(name).get();
                        } catch (ExecutionException e) {
                            OUT.println("error " + name + " " + e.getCause().getClass().getSimpleName());
                            continue;
                        }
                        OUT.println("topic " + td.name() + " id=" + td.topicId() + " internal=" + td.isInternal()
                                + " partitions=" + td.partitions().size());
                        for (org.apache.kafka.common.TopicPartitionInfo pi : td.partitions()) {
                            OUT.println("partition " + td.name() + " " + pi.partition()
                                    + " leader=" + (pi.leader() == null ? "none" : pi.leader().id())
                                    + " replicas=" + nodeIds(pi.replicas()) + " isr=" + nodeIds(pi.isr()));
                        }
                    }
                    return 0;
                }
                case "describe-topic": {
                    String topic = req(o, "topic");
                    Map<String, TopicDescription> d = admin.describeTopics(Collections.singleton(topic)).allTopicNames().get();
                    TopicDescription td = d.get(topic);
                    OUT.println("topic=" + td.name() + " partitions=" + td.partitions().size());
                    td.partitions().forEach(pi -> OUT.println("partition " + pi.partition() + " leader="
                            + (pi.leader() == null ? "none" : pi.leader().id()) + " replicas=" + pi.replicas().size()));
                    return 0;
                }
                case "describe-cluster": {
                    DescribeClusterResult r = admin.describeCluster();
                    Collection<Node> nodes = r.nodes().get();
                    Node controller = r.controller().get();
                    StringBuilder sb = new StringBuilder();
                    for (Node n : nodes) {
                        sb.append(sb.length() == 0 ? "" : ",").append(n.id()).append('@').append(n.host()).append(':').append(n.port());
                    }
                    OUT.println("cluster_id=" + r.clusterId().get());
                    OUT.println("controller=" + (controller == null ? "none" : controller.id()));
                    if (controller != null) {
                        OUT.println("controller_node=" + controller.id() + '@' + controller.host() + ':' + controller.port());
                    }
                    OUT.println("nodes=" + sb);
                    return 0;
                }
                case "describe-configs": {
                    ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, req(o, "topic"));
                    Config config = admin.describeConfigs(Collections.singleton(res),
                            new DescribeConfigsOptions().includeSynonyms(true)).all().get().get(res);
                    for (ConfigEntry e : new TreeSet<>(config.entries().stream().map(ConfigEntry::name)
                            .collect(java.util.stream.Collectors.toList()))
                            .stream().map(config::get).collect(java.util.stream.Collectors.toList())) {
                        OUT.println("config " + e.name() + "=" + e.value() + " source=" + e.source()
                                + " synonyms=" + e.synonyms().size());
                    }
                    return 0;
                }
                case "alter-configs": {
                    ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, req(o, "topic"));
                    List<AlterConfigOp> ops = new ArrayList<>();
                    if (o.containsKey("set")) {
                        keyValues(o.get("set")).forEach((k, v) ->
                                ops.add(new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.SET)));
                    }
                    if (o.containsKey("delete")) {
                        for (String k : o.get("delete").split(",")) {
                            ops.add(new AlterConfigOp(new ConfigEntry(k, null), AlterConfigOp.OpType.DELETE));
                        }
                    }
                    admin.incrementalAlterConfigs(Collections.singletonMap(res, ops)).all().get();
                    OUT.println("altered " + res.name() + " ops=" + ops.size());
                    return 0;
                }
                case "delete-records": {
                    TopicPartition tp = new TopicPartition(req(o, "topic"), Integer.parseInt(req(o, "partition")));
                    long before = Long.parseLong(req(o, "before"));
                    DeletedRecords d = admin.deleteRecords(Collections.singletonMap(tp, RecordsToDelete.beforeOffset(before)))
                            .lowWatermarks().get(tp).get();
                    OUT.println("low_watermark=" + d.lowWatermark());
                    return 0;
                }
                case "first-offset":
                    return firstOffset(o);
                case "offsets-for-times":
                    return offsetsForTimes(o);
                default:
                    usage("unknown admin command " + sub);
                    return 64;
            }
        }
    }

    /** Node ids joined by ';' ("" for none). */
    private static String nodeIds(List<Node> nodes) {
        StringBuilder sb = new StringBuilder();
        for (Node n : nodes) {
            sb.append(sb.length() == 0 ? "" : ";").append(n.id());
        }
        return sb.toString();
    }

    /** "a=1,b=2" as an ordered map. */
    private static Map<String, String> keyValues(String text) {
        Map<String, String> m = new java.util.LinkedHashMap<>();
        for (String kv : text.split(",")) {
            int eq = kv.indexOf('=');
            if (eq <= 0) {
                usage("expected k=v, got " + kv);
            }
            m.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        return m;
    }

    /** KafkaConsumer.offsetsForTimes for one partition: the first record at or after --timestamp. */
    private static int offsetsForTimes(Map<String, String> o) throws Exception {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, req(o, "bootstrap"));
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        TopicPartition tp = new TopicPartition(req(o, "topic"), Integer.parseInt(req(o, "partition")));
        long timestamp = Long.parseLong(req(o, "timestamp"));
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            Map<TopicPartition, org.apache.kafka.clients.consumer.OffsetAndTimestamp> found =
                    consumer.offsetsForTimes(Collections.singletonMap(tp, timestamp), Duration.ofSeconds(30));
            org.apache.kafka.clients.consumer.OffsetAndTimestamp ot = found.get(tp);
            if (ot == null) {
                OUT.println("offset=none");
            } else {
                OUT.println("offset=" + ot.offset() + " timestamp=" + ot.timestamp());
            }
            return 0;
        }
    }

    /** A consumer that seeks to the beginning of one partition: where it starts, and the first record it gets. */
    private static int firstOffset(Map<String, String> o) throws Exception {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, req(o, "bootstrap"));
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        TopicPartition tp = new TopicPartition(req(o, "topic"), Integer.parseInt(req(o, "partition")));
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            consumer.assign(Collections.singleton(tp));
            consumer.seekToBeginning(Collections.singleton(tp));
            long position = consumer.position(tp, Duration.ofSeconds(30));
            long deadline = System.currentTimeMillis() + 30000;
            while (System.currentTimeMillis() < deadline) {
                ConsumerRecords<byte[], byte[]> records;
                try {
                    records = consumer.poll(Duration.ofMillis(500));
                } catch (OffsetOutOfRangeException e) {
                    // Retention moved the log start past the position between ListOffsets and the
                    // fetch (Kafka answers the same way): the beginning is asked for again.
                    consumer.seekToBeginning(Collections.singleton(tp));
                    position = consumer.position(tp, Duration.ofSeconds(30));
                    continue;
                }
                for (ConsumerRecord<byte[], byte[]> r : records.records(tp)) {
                    OUT.println("position=" + position + " first_offset=" + r.offset());
                    return 0;
                }
            }
            OUT.println("position=" + position + " first_offset=none");
            return 1;
        }
    }

    /** Wait until the topic's metadata shows every partition with a leader (Kafka elects them asynchronously). */
    private static void waitForLeaders(Admin admin, String topic, int parts) throws Exception {
        long deadline = System.currentTimeMillis() + 30000;
        String last = "";
        while (System.currentTimeMillis() < deadline) {
            try {
                TopicDescription td = admin.describeTopics(Collections.singleton(topic)).allTopicNames().get().get(topic);
                long led = td.partitions().stream().filter(pi -> pi.leader() != null && !pi.leader().isEmpty()).count();
                if (td.partitions().size() == parts && led == parts) {
                    return;
                }
                last = td.partitions().size() + " partitions, " + led + " with a leader";
            } catch (ExecutionException e) {
                last = e.getCause().toString();
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException("topic " + topic + " created but not ready after 30s: " + last);
    }

    /** Metadata request with allow_auto_topic_creation=true, as the producer sends it. */
    private static int autocreate(Map<String, String> o) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, req(o, "bootstrap"));
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            List<PartitionInfo> infos = producer.partitionsFor(req(o, "topic"));
            OUT.println("partitions=" + infos.size());
        }
        return 0;
    }
}
