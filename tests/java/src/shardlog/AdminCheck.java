package shardlog;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TopicListing;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;

/**
 * Kafka's AdminClient (kafka-clients 3.9) through one scripted sequence on
 * topic TOPIC: create (with a config), create again, list, describe,
 * describeCluster, describeConfigs of the topic and the broker,
 * incrementalAlterConfigs, legacy alterConfigs, createPartitions,
 * listOffsets (earliest, latest, max-timestamp, by timestamp) after
 * producing three records with chosen timestamps, deleteTopics, describe
 * after delete. Every step's outcome goes into one JSON line (an error as
 * "ExceptionClass: message"), checked by tests/java_clients.rs.
 *
 *   AdminCheck BOOTSTRAP TOPIC
 */
public final class AdminCheck {
    static final long TIMEOUT_S = 30;

    interface Step {
        Object run() throws Exception;
    }

    static void step(Map<String, Object> report, String name, Step step) {
        try {
            report.put(name, step.run());
        } catch (Exception e) {
            report.put(name, Map.of("error", Json.error(e)));
        }
    }

    static Map<String, Object> describe(Admin admin, String topic) throws Exception {
        TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get(TIMEOUT_S, TimeUnit.SECONDS)
                .get(topic);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("name", d.name());
        out.put("internal", d.isInternal());
        out.put("topic_id_set", d.topicId() != null && !d.topicId().equals(org.apache.kafka.common.Uuid.ZERO_UUID));
        List<Object> parts = new ArrayList<>();
        for (TopicPartitionInfo p : d.partitions()) {
            Map<String, Object> pm = new LinkedHashMap<>();
            pm.put("partition", p.partition());
            pm.put("leader", p.leader() == null ? null : p.leader().id());
            pm.put("replicas", p.replicas().stream().map(Node::id).toList());
            pm.put("isr", p.isr().stream().map(Node::id).toList());
            parts.add(pm);
        }
        out.put("partitions", parts);
        return out;
    }

    static Map<String, Object> configs(Admin admin, ConfigResource resource, Collection<String> names)
            throws Exception {
        Config config = admin.describeConfigs(List.of(resource)).all().get(TIMEOUT_S, TimeUnit.SECONDS).get(resource);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("entries", config.entries().size());
        for (String name : names) {
            ConfigEntry e = config.get(name);
            out.put(name, e == null ? null : Map.of(
                    "value", String.valueOf(e.value()),
                    "source", e.source().name(),
                    "read_only", e.isReadOnly()));
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        Map<String, Object> r = new LinkedHashMap<>();
        ConfigResource topicResource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        try (Admin admin = Admin.create(props)) {
            step(r, "create", () -> {
                NewTopic t = new NewTopic(topic, 3, (short) 1).configs(Map.of("retention.ms", "3600000"));
                admin.createTopics(List.of(t)).all().get(TIMEOUT_S, TimeUnit.SECONDS);
                return "ok";
            });
            step(r, "create_again", () -> {
                admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1))).all().get(TIMEOUT_S, TimeUnit.SECONDS);
                return "ok";
            });
            step(r, "create_rf_too_big", () -> {
                admin.createTopics(List.of(new NewTopic(topic + "-rf3", 1, (short) 3))).all()
                        .get(TIMEOUT_S, TimeUnit.SECONDS);
                return "ok";
            });
            step(r, "list_contains", () -> {
                Collection<TopicListing> ls = admin.listTopics().listings().get(TIMEOUT_S, TimeUnit.SECONDS);
                return ls.stream().anyMatch(l -> l.name().equals(topic));
            });
            step(r, "describe", () -> describe(admin, topic));
            step(r, "cluster", () -> {
                DescribeClusterResult c = admin.describeCluster();
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("cluster_id", c.clusterId().get(TIMEOUT_S, TimeUnit.SECONDS));
                Node controller = c.controller().get(TIMEOUT_S, TimeUnit.SECONDS);
                out.put("controller", controller == null ? null : controller.id());
                List<Object> nodes = new ArrayList<>();
                for (Node n : c.nodes().get(TIMEOUT_S, TimeUnit.SECONDS)) {
                    nodes.add(Map.of("id", n.id(), "host", n.host(), "port", n.port()));
                }
                out.put("nodes", nodes);
                return out;
            });
            List<String> watched = List.of("retention.ms", "segment.bytes", "cleanup.policy", "max.message.bytes");
            step(r, "configs", () -> configs(admin, topicResource, watched));
            step(r, "broker_configs", () -> {
                // The broker id is the first node describeCluster lists.
                Node n = admin.describeCluster().nodes().get(TIMEOUT_S, TimeUnit.SECONDS).iterator().next();
                ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, Integer.toString(n.id()));
                return configs(admin, broker, List.of("log.segment.bytes", "num.partitions", "broker.id"));
            });
            step(r, "incremental_alter", () -> {
                admin.incrementalAlterConfigs(Map.of(topicResource, List.of(
                        new AlterConfigOp(new ConfigEntry("retention.ms", "7200000"), AlterConfigOp.OpType.SET),
                        new AlterConfigOp(new ConfigEntry("max.message.bytes", "500000"),
                                AlterConfigOp.OpType.SET))))
                        .all().get(TIMEOUT_S, TimeUnit.SECONDS);
                return configs(admin, topicResource, watched);
            });
            step(r, "incremental_delete", () -> {
                admin.incrementalAlterConfigs(Map.of(topicResource, List.of(
                        new AlterConfigOp(new ConfigEntry("max.message.bytes", ""), AlterConfigOp.OpType.DELETE))))
                        .all().get(TIMEOUT_S, TimeUnit.SECONDS);
                return configs(admin, topicResource, watched);
            });
            step(r, "incremental_invalid", () -> {
                admin.incrementalAlterConfigs(Map.of(topicResource, List.of(
                        new AlterConfigOp(new ConfigEntry("retention.ms", "not-a-number"),
                                AlterConfigOp.OpType.SET))))
                        .all().get(TIMEOUT_S, TimeUnit.SECONDS);
                return "ok";
            });
            step(r, "create_partitions", () -> {
                admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(5))).all()
                        .get(TIMEOUT_S, TimeUnit.SECONDS);
                return describe(admin, topic);
            });
            step(r, "list_offsets", () -> listOffsets(admin, bootstrap, topic));
            step(r, "delete", () -> {
                admin.deleteTopics(List.of(topic)).all().get(TIMEOUT_S, TimeUnit.SECONDS);
                return "ok";
            });
            step(r, "describe_after_delete", () -> describe(admin, topic));
        }
        System.out.println(Json.of(r));
    }

    /** Three records in partition 0 with timestamps 1000, 3000, 2000; then the four kinds of ListOffsets. */
    static Map<String, Object> listOffsets(Admin admin, String bootstrap, String topic) throws Exception {
        Properties p = ClientCheck.producerProps(bootstrap);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            long[] stamps = {1000L, 3000L, 2000L};
            for (int i = 0; i < stamps.length; i++) {
                producer.send(new ProducerRecord<>(topic, 0, stamps[i], ClientCheck.key(i),
                        ("ts-" + stamps[i]).getBytes(StandardCharsets.UTF_8))).get(TIMEOUT_S, TimeUnit.SECONDS);
            }
        }
        TopicPartition tp = new TopicPartition(topic, 0);
        Map<String, OffsetSpec> specs = new LinkedHashMap<>();
        specs.put("earliest", OffsetSpec.earliest());
        specs.put("latest", OffsetSpec.latest());
        specs.put("max_timestamp", OffsetSpec.maxTimestamp());
        specs.put("for_timestamp_1500", OffsetSpec.forTimestamp(1500));
        specs.put("for_timestamp_9999", OffsetSpec.forTimestamp(9999));
        Map<String, Object> out = new LinkedHashMap<>();
        for (Map.Entry<String, OffsetSpec> e : specs.entrySet()) {
            try {
                ListOffsetsResultInfo info = admin.listOffsets(Map.of(tp, e.getValue())).partitionResult(tp)
                        .get(TIMEOUT_S, TimeUnit.SECONDS);
                out.put(e.getKey(), Map.of("offset", info.offset(), "timestamp", info.timestamp()));
            } catch (Exception ex) {
                out.put(e.getKey(), Map.of("error", Json.error(ex)));
            }
        }
        return out;
    }
}
