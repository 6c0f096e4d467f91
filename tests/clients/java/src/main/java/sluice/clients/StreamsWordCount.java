package sluice.clients;

import java.io.PrintStream;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StateRestoreListener;

/**
 * Kafka Streams word count for test_streams.py: lines from --input are split into words, re-keyed
 * by word (through Streams' repartition topic), counted in a persistent (RocksDB) store whose
 * changelog is a compacted topic, and every updated count goes to --output (key word, value the
 * count as a decimal string, so any client reads it).
 *
 * <pre>
 * streams-wordcount --bootstrap B --app-id A --input T --output T --state-dir D [--commit-ms 100]
 * </pre>
 *
 * Runs until SIGTERM (closes cleanly) or SIGKILL. stdout lines, flushed as they happen:
 * "state NEW->RUNNING", "restore-start STORE TOPIC-P from=O to=O", "restore-end STORE TOPIC-P
 * restored=N", "closed". The state store is named "counts".
 */
final class StreamsWordCount {
    private static final PrintStream OUT = System.out;

    private StreamsWordCount() {
    }

    static int run(Map<String, String> o) throws InterruptedException {
        String input = req(o, "input");
        String output = req(o, "output");
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, req(o, "app-id"));
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, req(o, "bootstrap"));
        p.put(StreamsConfig.STATE_DIR_CONFIG, req(o, "state-dir"));
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, o.getOrDefault("commit-ms", "100"));
        // Single-broker tests: internal topics (changelog, repartition) with one replica.
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        // A kill -9'd instance stays a group member until its session expires; the restart's
        // rebalance waits for that, so keep it short (the broker's minimum is 6 s).
        p.put(StreamsConfig.consumerPrefix("session.timeout.ms"), 10000);
        p.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), 1000);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);

        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> lines = builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()));
        lines.flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\s+")))
                .filter((k, w) -> !w.isEmpty())
                .groupBy((k, w) -> w, Grouped.with("words", Serdes.String(), Serdes.String()))
                .count(Materialized.as("counts"))
                .toStream()
                .mapValues(c -> Long.toString(c))
                .to(output, Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(builder.build(), p);
        CountDownLatch closed = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            say("state " + before + "->" + now);
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
                closed.countDown();
            }
        });
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            @Override
            public void onRestoreStart(TopicPartition tp, String store, long from, long to) {
                say("restore-start " + store + " " + tp + " from=" + from + " to=" + to);
            }

            @Override
            public void onBatchRestored(TopicPartition tp, String store, long end, long n) {
            }

            @Override
            public void onRestoreEnd(TopicPartition tp, String store, long restored) {
                say("restore-end " + store + " " + tp + " restored=" + restored);
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(30));
            say("closed");
        }));
        streams.start();
        closed.await();
        return streams.state() == KafkaStreams.State.ERROR ? 1 : 0;
    }

    private static synchronized void say(String line) {
        OUT.println(line);
        OUT.flush();
    }

    private static String req(Map<String, String> o, String k) {
        String v = o.get(k);
        if (v == null) {
            throw new IllegalArgumentException("streams-wordcount needs --" + k);
        }
        return v;
    }
}
