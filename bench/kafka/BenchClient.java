// Small Kafka-client helper for bench/run. Uses only the plain Java client (kafka-clients 4.1.1).
//
//   create-topic BOOTSTRAP TOPIC PARTITIONS        Admin.createTopics (replication factor 1)
//   end-offsets  BOOTSTRAP TOPIC                   prints {"partition": endOffset, ...} (ListOffsets)
//   consume      BOOTSTRAP TOPIC STARTS_JSON WARMUP_S DURATION_S [key=value consumer props...]
//
// consume: the "consume newest data" workload. A consumer WITHOUT a group (no group.id,
// assign() + seek(), no offset commits: Sluice has no group coordinator yet, and Kafka's own
// ConsumerPerformance always subscribe()s with a group) is assigned every partition of TOPIC,
// seeks each to the start offset given in STARTS_JSON (the log end before the measured produce
// run, i.e. the newest data), and reads up to the end offsets taken at start. Only the partitions
// named in STARTS_JSON are assigned (bench/run --generators N gives each consumer process a
// disjoint subset); an empty STARTS_JSON ({}) means every partition from offset 0. A partition that
// reaches its end is sought back to its start, so a run lasts WARMUP_S + DURATION_S whatever the
// amount of data; the first WARMUP_S seconds are not counted. Prints one JSON line on stdout.
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class BenchClient {
    public static void main(String[] a) throws Exception {
        switch (a.length > 0 ? a[0] : "") {
            case "create-topic" -> createTopic(a[1], a[2], Integer.parseInt(a[3]));
            case "end-offsets" -> endOffsets(a[1], a[2]);
            case "consume" -> consume(a);
            default -> {
                System.err.println("usage: create-topic|end-offsets|consume ...");
                System.exit(2);
            }
        }
    }

    static void createTopic(String bootstrap, String topic, int partitions) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(p)) {
            try {
                admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
            } catch (java.util.concurrent.ExecutionException e) {
                if (!(e.getCause() instanceof TopicExistsException)) throw e;
            }
        }
        System.out.println("{\"created\":\"" + topic + "\",\"partitions\":" + partitions + "}");
    }

    static KafkaConsumer<byte[], byte[]> consumer(String bootstrap, Map<String, String> extra) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", "sluice-bench-consumer");
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.putAll(extra);
        return new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    static List<TopicPartition> partitions(KafkaConsumer<?, ?> c, String topic) {
        List<TopicPartition> tps = new ArrayList<>();
        for (PartitionInfo pi : c.partitionsFor(topic, Duration.ofSeconds(30)))
            tps.add(new TopicPartition(topic, pi.partition()));
        tps.sort(Comparator.comparingInt(TopicPartition::partition));
        return tps;
    }

    static void endOffsets(String bootstrap, String topic) {
        try (KafkaConsumer<byte[], byte[]> c = consumer(bootstrap, Map.of())) {
            Map<TopicPartition, Long> ends = c.endOffsets(partitions(c, topic), Duration.ofSeconds(30));
            StringBuilder sb = new StringBuilder("{");
            ends.entrySet().stream().sorted(Comparator.comparingInt(e -> e.getKey().partition()))
                .forEach(e -> sb.append(sb.length() > 1 ? "," : "")
                    .append('"').append(e.getKey().partition()).append("\":").append(e.getValue()));
            System.out.println(sb.append('}'));
        }
    }

    static Map<Integer, Long> parseStarts(String json) {
        Map<Integer, Long> m = new HashMap<>();
        String body = json.trim().replaceAll("[{}\"\\s]", "");
        if (body.isEmpty()) return m;
        for (String kv : body.split(",")) {
            String[] p = kv.split(":");
            m.put(Integer.parseInt(p[0]), Long.parseLong(p[1]));
        }
        return m;
    }

    static void consume(String[] a) {
        String bootstrap = a[1], topic = a[2];
        Map<Integer, Long> startsIn = parseStarts(a[3]);
        double warmupS = Double.parseDouble(a[4]), durationS = Double.parseDouble(a[5]);
        Map<String, String> extra = new HashMap<>();
        for (int i = 6; i < a.length; i++) {
            int eq = a[i].indexOf('=');
            extra.put(a[i].substring(0, eq), a[i].substring(eq + 1));
        }
        try (KafkaConsumer<byte[], byte[]> c = consumer(bootstrap, extra)) {
            List<TopicPartition> tps = partitions(c, topic);
            if (!startsIn.isEmpty()) tps.removeIf(tp -> !startsIn.containsKey(tp.partition()));
            if (tps.isEmpty()) throw new IllegalStateException("no partition of " + topic + " in " + a[3]);
            Map<TopicPartition, Long> ends = c.endOffsets(tps, Duration.ofSeconds(30));
            Map<TopicPartition, Long> starts = new HashMap<>();
            long window = 0;
            for (TopicPartition tp : tps) {
                long s = Math.min(startsIn.getOrDefault(tp.partition(), 0L), ends.get(tp));
                starts.put(tp, s);
                window += ends.get(tp) - s;
            }
            if (window == 0) throw new IllegalStateException("no data between start and end offsets");
            c.assign(tps);
            for (TopicPartition tp : tps) c.seek(tp, starts.get(tp));

            long t0 = System.nanoTime();
            long measureFrom = t0 + (long) (warmupS * 1e9), stop = measureFrom + (long) (durationS * 1e9);
            long records = 0, bytes = 0, wrapped = 0, polls = 0, emptyPolls = 0;
            long tMeasured = 0, secStart = measureFrom, secBytes = 0, secRecords = 0;
            boolean measuring = false;
            List<Double> perSecondMBs = new ArrayList<>();
            while (true) {
                long now = System.nanoTime();
                if (now >= stop) break;
                if (!measuring && now >= measureFrom) {
                    measuring = true;
                    tMeasured = now;
                    secStart = now;
                }
                ConsumerRecords<byte[], byte[]> recs = c.poll(Duration.ofMillis(100));
                polls++;
                if (recs.isEmpty()) emptyPolls++;
                long b = 0, n = 0;
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    n++;
                    b += Math.max(r.serializedValueSize(), 0) + Math.max(r.serializedKeySize(), 0);
                }
                if (measuring) {
                    records += n;
                    bytes += b;
                    secRecords += n;
                    secBytes += b;
                    long t = System.nanoTime();
                    if (t - secStart >= 1_000_000_000L) {
                        double mbs = secBytes / 1048576.0 / ((t - secStart) / 1e9);
                        perSecondMBs.add(mbs);
                        System.err.printf("consume: %.1f MB/s, %.0f records/s%n", mbs,
                            secRecords / ((t - secStart) / 1e9));
                        secStart = t;
                        secBytes = 0;
                        secRecords = 0;
                    }
                }
                for (TopicPartition tp : recs.partitions()) {
                    if (c.position(tp) >= ends.get(tp)) {
                        c.seek(tp, starts.get(tp));
                        wrapped++;
                    }
                }
            }
            double secs = (System.nanoTime() - tMeasured) / 1e9;
            System.out.printf(Locale.ROOT,
                "{\"records\":%d,\"bytes\":%d,\"seconds\":%.3f,\"mb_per_s\":%.2f,\"records_per_s\":%.1f,"
                    + "\"window_records\":%d,\"partition_wraps\":%d,\"polls\":%d,\"empty_polls\":%d,"
                    + "\"per_second_mb\":%s}%n",
                records, bytes, secs, bytes / 1048576.0 / secs, records / secs, window, wrapped, polls,
                emptyPolls, perSecondMBs.toString());
        }
    }
}
