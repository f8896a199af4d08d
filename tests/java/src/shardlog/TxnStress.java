package shardlog;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TimeoutException;

/**
 * Transactions with pipelined Produce requests (the Java client 3.9,
 * max.in.flight.requests.per.connection=5, small batches, so a partition
 * just added to a transaction has batches in several requests in flight
 * on one connection), many transactions one after another; the test may
 * reset the client's connections meanwhile. Then a read_committed
 * consumer reads everything back.
 *
 *   BOOTSTRAP TOPIC PARTITIONS TRANSACTIONS RECORDS_PER_TRANSACTION
 *
 * One JSON report line on stdout: transactions committed and aborted, the
 * exceptions the producer saw by class (callbacks and commits, with their
 * causes), and what the consumer found: records of committed transactions
 * missing or read twice, records out of order in their partition, and
 * records of aborted transactions read.
 */
public final class TxnStress {
    private TxnStress() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        int partitions = Integer.parseInt(args[2]);
        int txns = Integer.parseInt(args[3]);
        int perTxn = Integer.parseInt(args[4]);
        ClientCheck.createTopic(bootstrap, topic, partitions);
        Map<String, Object> report = new LinkedHashMap<>();
        Map<String, Integer> errors = new TreeMap<>();
        Set<Integer> committed = new HashSet<>();
        int aborted = 0;
        String fatal = null;
        Properties props = ClientCheck.producerProps(bootstrap);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "stress-" + topic);
        props.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5");
        props.put(ProducerConfig.BATCH_SIZE_CONFIG, "256");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "60000");
        props.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, "20");
        props.put(ProducerConfig.RECONNECT_BACKOFF_MS_CONFIG, "20");
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "60000");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            producer.initTransactions();
            for (int t = 0; t < txns && fatal == null; t++) {
                producer.beginTransaction();
                for (int i = 0; i < perTxn; i++) {
                    byte[] value = (t + ":" + i + ":" + "x".repeat(40)).getBytes(StandardCharsets.UTF_8);
                    producer.send(new ProducerRecord<>(topic, i % partitions, null, value), (m, e) -> {
                        if (e != null) {
                            synchronized (errors) {
                                count(errors, e);
                            }
                        }
                    });
                }
                try {
                    end(producer, true);
                    committed.add(t);
                } catch (KafkaException e) {
                    synchronized (errors) {
                        count(errors, e);
                    }
                    try {
                        end(producer, false);
                        aborted++;
                    } catch (KafkaException fatalError) {
                        fatal = Json.error(fatalError);
                    }
                }
            }
        } catch (KafkaException e) {
            fatal = Json.error(e);
        }
        report.put("committed", committed.size());
        report.put("aborted", aborted);
        report.put("errors", errors);
        report.put("fatal", fatal);
        report.put("read", readBack(bootstrap, topic, partitions, committed, perTxn));
        System.out.println(Json.of(report));
    }

    /** Commit (or abort), retried while it times out (the client's advice). */
    static void end(KafkaProducer<byte[], byte[]> producer, boolean commit) {
        for (int attempt = 0; ; attempt++) {
            try {
                if (commit) producer.commitTransaction();
                else producer.abortTransaction();
                return;
            } catch (TimeoutException e) {
                if (attempt >= 5) throw e;
            }
        }
    }

    /** One count per exception class, causes included. */
    static void count(Map<String, Integer> errors, Throwable e) {
        Set<Throwable> seen = new HashSet<>();
        for (Throwable c = e; c != null && seen.add(c); c = c.getCause()) {
            errors.merge(c.getClass().getSimpleName(), 1, Integer::sum);
        }
    }

    static Map<String, Object> readBack(String bootstrap, String topic, int partitions,
                                        Set<Integer> committed, int perTxn) {
        Properties c = ClientCheck.consumerProps(bootstrap);
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        c.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5000");
        List<TopicPartition> tps = new ArrayList<>();
        for (int p = 0; p < partitions; p++) tps.add(new TopicPartition(topic, p));
        Map<Integer, Integer> perCommitted = new HashMap<>();
        long[] last = new long[partitions];
        java.util.Arrays.fill(last, -1);
        int outOfOrder = 0, abortedRead = 0, read = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c)) {
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            Map<TopicPartition, Long> ends = consumer.endOffsets(tps);
            long deadline = System.nanoTime() + ClientCheck.READ_LIMIT.toNanos();
            while (System.nanoTime() < deadline && !caughtUp(consumer, tps, ends)) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    read++;
                    String[] f = new String(r.value(), StandardCharsets.UTF_8).split(":");
                    int t = Integer.parseInt(f[0]), i = Integer.parseInt(f[1]);
                    long key = (long) t * perTxn + i;
                    if (key <= last[r.partition()]) outOfOrder++;
                    last[r.partition()] = key;
                    if (committed.contains(t)) perCommitted.merge(t, 1, Integer::sum);
                    else abortedRead++;
                }
            }
        }
        int missing = 0, duplicated = 0;
        for (int t : committed) {
            int n = perCommitted.getOrDefault(t, 0);
            if (n < perTxn) missing += perTxn - n;
            if (n > perTxn) duplicated += n - perTxn;
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("records", read);
        out.put("missing", missing);
        out.put("duplicated", duplicated);
        out.put("out_of_order", outOfOrder);
        out.put("aborted_read", abortedRead);
        return out;
    }

    static boolean caughtUp(KafkaConsumer<byte[], byte[]> consumer, List<TopicPartition> tps,
                            Map<TopicPartition, Long> ends) {
        for (TopicPartition tp : tps) {
            if (consumer.position(tp) < ends.get(tp)) return false;
        }
        return true;
    }
}
