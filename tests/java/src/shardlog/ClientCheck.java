package shardlog;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java client (kafka-clients 3.9) against a broker, one scenario per
 * sub-command; each prints one JSON report line on stdout that
 * tests/java_clients.rs checks. Exit status 0 unless the scenario could not
 * run at all (bad arguments): what went wrong inside is in the report.
 *
 *   roundtrip BOOTSTRAP TOPIC PARTITIONS COUNT [producer.key=value ...]
 *     (producer key shardlog.pace.ms=N: one record at a time, N ms apart)
 *   subscribe BOOTSTRAP TOPIC PARTITIONS COUNT ASSIGNOR_CLASS GROUP
 *   transactional BOOTSTRAP TOPIC
 *   (admin: see AdminCheck)
 *
 * With SHARDLOG_CLIENT_CONFIG set to a properties file (e.g. security.protocol=SSL
 * and the ssl.truststore.* / ssl.keystore.* keys), its settings go into every
 * producer, consumer and admin client.
 */
public final class ClientCheck {
    /** Guard against a broker that stops answering; never a speed check. */
    static final Duration READ_LIMIT = Duration.ofSeconds(60);

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            throw new IllegalArgumentException("usage: ClientCheck roundtrip|subscribe|transactional ...");
        }
        Map<String, Object> report = switch (args[0]) {
            case "roundtrip" -> roundTrip(args);
            case "subscribe" -> subscribe(args);
            case "transactional" -> transactional(args[1], args[2]);
            default -> throw new IllegalArgumentException("unknown scenario " + args[0]);
        };
        System.out.println(Json.of(report));
    }

    /** Record `seq`'s value: its number, its partition, then filler derived from seq. */
    static byte[] value(int seq, int partition) {
        StringBuilder sb = new StringBuilder("seq=" + seq + ";p=" + partition + ";");
        while (sb.length() < 200) sb.append((char) ('a' + (seq + sb.length()) % 26));
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }

    static byte[] key(int seq) {
        return ("key-" + seq).getBytes(StandardCharsets.UTF_8);
    }

    /** SHARDLOG_CLIENT_CONFIG's settings (empty without it). */
    static Properties clientConfig() {
        Properties p = new Properties();
        String file = System.getenv("SHARDLOG_CLIENT_CONFIG");
        if (file != null && !file.isEmpty()) {
            try (java.io.FileReader r = new java.io.FileReader(file, StandardCharsets.UTF_8)) {
                p.load(r);
            } catch (java.io.IOException e) {
                throw new IllegalArgumentException("SHARDLOG_CLIENT_CONFIG " + file + ": " + e, e);
            }
        }
        return p;
    }

    static Properties producerProps(String bootstrap) {
        Properties p = clientConfig();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "60000");
        return p;
    }

    static Properties consumerProps(String bootstrap) {
        Properties c = clientConfig();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        return c;
    }

    /** Produce COUNT records (seq i to partition i % PARTITIONS) and report what the callbacks said. */
    static Map<String, Object> produce(Properties props, String topic, int partitions, int count) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        // shardlog.pace.ms (not a Kafka key): send one record at a time,
        // waiting for its ack and then this long, so the producer lives
        // across a broker-side session limit (re-authentication tests).
        props = (Properties) props.clone();
        long paceMs = Long.parseLong((String) props.getOrDefault("shardlog.pace.ms", "0"));
        props.remove("shardlog.pace.ms");
        // The settings the client will really use, defaults and its own
        // adjustments applied (Kafka 3.x: idempotence on, acks=all).
        ProducerConfig effective = new ProducerConfig(props);
        out.put("acks", effective.getString(ProducerConfig.ACKS_CONFIG));
        out.put("enable_idempotence", effective.getBoolean(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG));
        out.put("compression_type", effective.getString(ProducerConfig.COMPRESSION_TYPE_CONFIG));
        ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();
        AtomicLong delivered = new AtomicLong();
        long[] offsets = new long[count];
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            for (int i = 0; i < count; i++) {
                final int seq = i;
                int partition = i % partitions;
                RecordHeaders headers = new RecordHeaders();
                headers.add("seq", Integer.toString(seq).getBytes(StandardCharsets.UTF_8));
                producer.send(new ProducerRecord<>(topic, partition, null, key(seq), value(seq, partition), headers),
                        (meta, err) -> {
                            if (err != null) {
                                errors.add(Json.error(err));
                            } else {
                                delivered.incrementAndGet();
                                offsets[seq] = meta.offset();
                            }
                        });
                if (paceMs > 0) {
                    producer.flush();
                    Thread.sleep(paceMs);
                }
            }
            producer.flush();
        }
        out.put("delivered", delivered.get());
        out.put("errors", new ArrayList<>(errors));
        // Offsets the broker gave back, per partition in send order (acks=0: -1).
        List<List<Long>> perPartition = new ArrayList<>();
        for (int p = 0; p < partitions; p++) perPartition.add(new ArrayList<>());
        for (int i = 0; i < count; i++) perPartition.get(i % partitions).add(offsets[i]);
        boolean contiguous = true;
        for (List<Long> offs : perPartition) {
            for (int j = 0; j < offs.size(); j++) contiguous &= offs.get(j) == j;
        }
        out.put("acked_offsets_contiguous_from_0", contiguous);
        return out;
    }

    /** Checks every record read against what `produce` sent; counts what differs. */
    static final class ReadCheck {
        final int partitions;
        final Map<Integer, Long> nextOffset = new TreeMap<>();
        final Map<Integer, Integer> lastSeq = new HashMap<>();
        final boolean[] seen;
        long consumed, duplicates, outOfOrder, offsetGaps, wrongPartition, badContent, unknown;
        final List<String> examples = new ArrayList<>();

        ReadCheck(int partitions, int count) {
            this.partitions = partitions;
            this.seen = new boolean[count];
        }

        void bad(String what) {
            if (examples.size() < 5) examples.add(what);
        }

        void on(ConsumerRecord<byte[], byte[]> r) {
            consumed++;
            String v = new String(r.value(), StandardCharsets.UTF_8);
            int seq;
            try {
                seq = Integer.parseInt(v.substring(4, v.indexOf(';')));
            } catch (RuntimeException e) {
                unknown++;
                bad("unparsable value at " + r.partition() + "/" + r.offset());
                return;
            }
            if (seq < 0 || seq >= seen.length) {
                unknown++;
                return;
            }
            if (seen[seq]) duplicates++;
            seen[seq] = true;
            if (r.partition() != seq % partitions) {
                wrongPartition++;
                bad("seq " + seq + " in partition " + r.partition());
            }
            long expectOffset = nextOffset.getOrDefault(r.partition(), 0L);
            if (r.offset() != expectOffset) {
                offsetGaps++;
                bad("partition " + r.partition() + " offset " + r.offset() + " expected " + expectOffset);
            }
            nextOffset.put(r.partition(), r.offset() + 1);
            Integer prev = lastSeq.put(r.partition(), seq);
            if (prev != null && prev >= seq) {
                outOfOrder++;
                bad("seq " + seq + " after " + prev + " in partition " + r.partition());
            }
            Header h = r.headers().lastHeader("seq");
            boolean headerOk = h != null && new String(h.value(), StandardCharsets.UTF_8).equals(Integer.toString(seq));
            if (!java.util.Arrays.equals(r.value(), value(seq, seq % partitions))
                    || !java.util.Arrays.equals(r.key(), key(seq)) || !headerOk) {
                badContent++;
                bad("content of seq " + seq);
            }
        }

        Map<String, Object> report() {
            Map<String, Object> out = new LinkedHashMap<>();
            long missing = 0;
            for (boolean s : seen) if (!s) missing++;
            out.put("consumed", consumed);
            out.put("missing", missing);
            out.put("duplicates", duplicates);
            out.put("out_of_order", outOfOrder);
            out.put("offset_gaps", offsetGaps);
            out.put("wrong_partition", wrongPartition);
            out.put("bad_content", badContent);
            out.put("unknown", unknown);
            out.put("examples", examples);
            return out;
        }
    }

    /**
     * Create TOPIC with PARTITIONS partitions (replication factor 1) and wait
     * until every partition has a leader: a producer sending to a partition
     * its metadata does not list yet blocks up to max.block.ms per record.
     */
    static void createTopic(String bootstrap, String topic, int partitions) throws Exception {
        Properties p = clientConfig();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(p)) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all()
                    .get(READ_LIMIT.toSeconds(), TimeUnit.SECONDS);
            long deadline = System.nanoTime() + READ_LIMIT.toNanos();
            while (System.nanoTime() < deadline) {
                TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames()
                        .get(READ_LIMIT.toSeconds(), TimeUnit.SECONDS).get(topic);
                if (d.partitions().size() == partitions
                        && d.partitions().stream().allMatch(tp -> tp.leader() != null && !tp.leader().isEmpty())) {
                    return;
                }
                Thread.sleep(100);
            }
            throw new IllegalStateException("topic " + topic + " has no leaders after " + READ_LIMIT);
        }
    }

    static Map<String, Object> roundTrip(String[] args) throws Exception {
        String bootstrap = args[1], topic = args[2];
        int partitions = Integer.parseInt(args[3]), count = Integer.parseInt(args[4]);
        Properties props = producerProps(bootstrap);
        for (int i = 5; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            props.put(kv[0], kv[1]);
        }
        createTopic(bootstrap, topic, partitions);
        Map<String, Object> report = new LinkedHashMap<>();
        report.put("produce", produce(props, topic, partitions, count));

        List<TopicPartition> tps = new ArrayList<>();
        for (int p = 0; p < partitions; p++) tps.add(new TopicPartition(topic, p));
        ReadCheck check = new ReadCheck(partitions, count);
        Map<String, Object> consume;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProps(bootstrap))) {
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            long deadline = System.nanoTime() + READ_LIMIT.toNanos();
            while (check.consumed < count && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) check.on(r);
            }
            consume = check.report();
            List<Long> ends = new ArrayList<>();
            Map<TopicPartition, Long> endOffsets = consumer.endOffsets(tps);
            for (TopicPartition tp : tps) ends.add(endOffsets.get(tp));
            consume.put("end_offsets", ends);
        }
        report.put("consume", consume);
        return report;
    }

    static Map<String, Object> subscribe(String[] args) throws Exception {
        String bootstrap = args[1], topic = args[2];
        int partitions = Integer.parseInt(args[3]), count = Integer.parseInt(args[4]);
        String assignor = args[5], group = args[6];
        createTopic(bootstrap, topic, partitions);
        Map<String, Object> report = new LinkedHashMap<>();
        report.put("produce", produce(producerProps(bootstrap), topic, partitions, count));
        Properties c = consumerProps(bootstrap);
        c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        c.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignor);
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        ReadCheck check = new ReadCheck(partitions, count);
        List<String> assigned = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c)) {
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> parts) {}

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                    for (TopicPartition tp : parts) assigned.add(tp.toString());
                }
            });
            long deadline = System.nanoTime() + READ_LIMIT.toNanos();
            while (check.consumed < count && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) check.on(r);
            }
            consumer.commitSync();
            Map<String, Object> consume = check.report();
            assigned.sort(null);
            consume.put("assigned", assigned);
            List<TopicPartition> tps = new ArrayList<>();
            for (int p = 0; p < partitions; p++) tps.add(new TopicPartition(topic, p));
            Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(Set.copyOf(tps));
            List<Object> offs = new ArrayList<>();
            for (TopicPartition tp : tps) {
                OffsetAndMetadata m = committed.get(tp);
                offs.add(m == null ? null : m.offset());
            }
            consume.put("committed", offs);
            report.put("consume", consume);
        }
        return report;
    }

    /**
     * A transactional producer against a broker without a transaction
     * coordinator: FindCoordinator(key_type 1) answers
     * COORDINATOR_NOT_AVAILABLE, which the client treats as retriable, so
     * initTransactions() blocks until max.block.ms and throws a
     * TimeoutException. The bound keeps the test short.
     */
    static Map<String, Object> transactional(String bootstrap, String topic) {
        Map<String, Object> out = new LinkedHashMap<>();
        Properties props = producerProps(bootstrap);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "shardlog-java-tx");
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "3000");
        props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "5000");
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props);
        try {
            producer.initTransactions();
            out.put("init_transactions", "ok");
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(topic, 0, key(0), value(0, 0))).get();
            producer.commitTransaction();
            out.put("commit", "ok");
            // An aborted transaction whose record reached the log.
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(topic, 0, key(1), value(1, 0))).get();
            producer.abortTransaction();
            out.put("abort", "ok");
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(topic, 0, key(2), value(2, 0))).get();
            producer.commitTransaction();
            out.put("read_committed", readCommitted(bootstrap, topic));
            // A second producer with the same transactional.id fences the
            // first, whose open transaction is aborted.
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(topic, 0, key(3), value(3, 0))).get();
            try (KafkaProducer<byte[], byte[]> second = new KafkaProducer<>(props)) {
                second.initTransactions();
                out.put("second_init", "ok");
                try {
                    producer.commitTransaction();
                    out.put("fenced_commit", "ok");
                } catch (Exception e) {
                    out.put("fenced_commit", Json.error(e));
                }
                second.beginTransaction();
                second.send(new ProducerRecord<>(topic, 0, key(4), value(4, 0))).get();
                second.commitTransaction();
            }
            out.put("read_committed_after_fence", readCommitted(bootstrap, topic));
        } catch (Exception e) {
            out.put("error", Json.error(e));
        } finally {
            producer.close(Duration.ofSeconds(2));
        }
        return out;
    }

    /** The sequence numbers a read_committed consumer reads from partition 0. */
    static List<Object> readCommitted(String bootstrap, String topic) {
        Properties c = consumerProps(bootstrap);
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        List<Object> seqs = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            // endOffsets at read_committed is the LSO.
            long end = consumer.endOffsets(List.of(tp)).get(tp);
            long deadline = System.nanoTime() + READ_LIMIT.toNanos();
            while (consumer.position(tp) < end && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    String v = new String(r.value(), StandardCharsets.UTF_8);
                    seqs.add(Integer.parseInt(v.substring(4, v.indexOf(';'))));
                }
            }
        }
        return seqs;
    }
}
