// One kafkajs consumer-group member (tests/groups_clients.rs).
// Usage: node group_member.js BOOTSTRAP GROUP TOPIC
// Prints JSON lines like tests/py/group_member.py: {"assigned": [...]}
// after each rebalance, {"p","o","v"} per record once processed (before
// its commit: at-least-once), {"committed": [[p, next offset]]} after each
// commit returned. SIGTERM: disconnect cleanly (commit, LeaveGroup).
const { Kafka, logLevel } = require('kafkajs');

const [bootstrap, groupId, topic] = process.argv.slice(2);
const kafka = new Kafka({ clientId: 'kafkajs-member', brokers: [bootstrap], logLevel: logLevel.NOTHING });
const consumer = kafka.consumer({
  groupId,
  sessionTimeout: 3000,
  heartbeatInterval: 300,
  rebalanceTimeout: 10000,
  // kafkajs heartbeats from its fetch loop only (no background thread):
  // a long poll longer than the session (default maxWaitTimeInMs 5000
  // against 3000 here) gets an idle member expired by the coordinator,
  // as Kafka's would.
  maxWaitTimeInMs: 500,
});
const emit = (o) => process.stdout.write(JSON.stringify(o) + '\n');

async function main() {
  consumer.on(consumer.events.GROUP_JOIN, (e) => {
    const parts = (e.payload.memberAssignment[topic] || []).slice().sort((a, b) => a - b);
    emit({ assigned: parts });
  });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachBatch: async ({ batch, heartbeat }) => {
      if (batch.messages.length === 0) return;
      const last = batch.messages[batch.messages.length - 1];
      for (const m of batch.messages) {
        emit({ p: batch.partition, o: Number(m.offset), v: m.value.toString() });
      }
      const next = Number(last.offset) + 1;
      await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: String(next) }]);
      emit({ committed: [[batch.partition, next]] });
      await heartbeat();
    },
  });
}

process.on('SIGTERM', async () => {
  try {
    await consumer.disconnect();
  } finally {
    process.exit(0);
  }
});

main().catch((e) => {
  process.stderr.write(`kafkajs member failed: ${e.stack || e}\n`);
  process.exit(1);
});
