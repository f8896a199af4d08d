// kafkajs over SASL (tests/sasl_clients.rs): create TOPIC, produce COUNT
// records to partition 0, read them back with a consumer group; prints one
// JSON line {"ok": true, "acks": [{partition, error, base}], "values": [...]} or, when the
// broker refuses the login, {"ok": false, "error": "<name>: <message>"}.
// Usage: node sasl_roundtrip.js BOOTSTRAP MECHANISM USER PASSWORD CA_PEM|- TOPIC COUNT
// (MECHANISM: plain, scram-sha-256, scram-sha-512; CA_PEM "-" = SASL_PLAINTEXT)
const fs = require('fs');
const { Kafka, logLevel } = require('kafkajs');

const [bootstrap, mechanism, username, password, caPem, topic, countArg] = process.argv.slice(2);
const count = Number(countArg);
const kafka = new Kafka({
  clientId: 'kafkajs-sasl',
  brokers: [bootstrap],
  logLevel: logLevel.NOTHING,
  ssl: caPem === '-' ? false : { ca: [fs.readFileSync(caPem, 'utf-8')] },
  sasl: { mechanism, username, password },
  retry: { retries: 2 },
});
const emit = (o) => process.stdout.write(JSON.stringify(o) + '\n');

async function main() {
  const admin = kafka.admin();
  try {
    await admin.connect();
  } catch (e) {
    emit({ ok: false, error: `${e.name}: ${e.message}` });
    return;
  }
  await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1 }], waitForLeaders: true });
  await admin.disconnect();
  const producer = kafka.producer();
  await producer.connect();
  const messages = [];
  for (let i = 0; i < count; i++) messages.push({ value: `kafkajs-sasl-${i}`, partition: 0 });
  const acks = await producer.send({ topic, messages, acks: -1 });
  await producer.disconnect();
  const consumer = kafka.consumer({ groupId: `${topic}-group`, maxWaitTimeInMs: 200 });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  const values = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`read ${values.length} of ${count} in 60 s`)), 60000);
    consumer.run({
      eachMessage: async ({ message }) => {
        values.push(message.value.toString());
        if (values.length >= count) {
          clearTimeout(timer);
          resolve();
        }
      },
    }).catch(reject);
  });
  await consumer.disconnect();
  emit({ ok: true, acks: acks.map((a) => ({ partition: a.partition, error: a.errorCode, base: a.baseOffset })), values });
}

main().then(
  () => process.exit(0),
  (e) => {
    emit({ ok: false, error: `${e.name}: ${e.message}` });
    process.exit(0);
  },
);
