#!/usr/bin/env node
// kafkajs CLI for tests/clients/test_kafkajs.py. Prints one JSON object on stdout; kafkajs logs (WARN+) go to stderr.
//   node kafkajs_tool.js create  --bootstrap H:P --topic T --partitions N
//   node kafkajs_tool.js produce --bootstrap H:P --topic T --count N [--idempotent true|false] [--compression none|gzip] [--batch 500]
//   node kafkajs_tool.js inspect --bootstrap H:P --topic T      (fetchTopicMetadata, fetchTopicOffsets, describeConfigs)
//   node kafkajs_tool.js delete  --bootstrap H:P --topic T
//   node kafkajs_tool.js list    --bootstrap H:P
//   node kafkajs_tool.js view    --bootstrap H:P --topics a:1,b:3
//       createTopics, then the operator's view: listTopics, describeCluster, fetchTopicMetadata (all topics
//       and the created ones); prints {view: {client, cluster_ids, controller, brokers, listed, described}}
//   node kafkajs_tool.js group-consume --bootstrap H:P --topic T --group G --events F --stop-file S [--debug true]
//       a consumer-group member (defaults, fromBeginning, autoCommit false + commitOffsets after each batch)
//       writing the events file of groups.py; leaves the group and exits 0 when the stop file exists.
// Records: key = k<seq>, value = k<seq>|<seq>|xxxxxxxxxxxxxxxx (the suite's format, see harness.py).
'use strict';
process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const fs = require('fs');
const { Kafka, logLevel, CompressionTypes, ConfigResourceTypes } = require('kafkajs');

function args() {
  const a = { cmd: process.argv[2] };
  for (let i = 3; i < process.argv.length; i += 2) a[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
  return a;
}

function logCreator() {
  return ({ level, log }) => {
    const { message, ...extra } = log;
    process.stderr.write(`[kafkajs ${level}] ${message} ${JSON.stringify(extra)}\n`);
  };
}

// Events file lines (see groups.py): ASSIGN|REVOKE <ts_ms> p,p,.. / REC p offset key / COMMITTED <ts_ms> p=o,..
// / COMMIT_FAILED <ts_ms> what.  kafkajs is eager and has no rebalance listener: its REBALANCING event
// (emitted once the fetch loop has stopped, before it rejoins) revokes everything, GROUP_JOIN assigns.
async function groupConsume(a) {
  const kafka = new Kafka({ clientId: 'sluice-kafkajs-group', brokers: [a.bootstrap],
    logLevel: a.debug === 'true' ? logLevel.DEBUG : logLevel.INFO, logCreator });
  const topic = a.topic;
  const fd = fs.openSync(a.events, 'a');
  const write = (s) => fs.writeSync(fd, s);
  let owned = [];
  const ownership = (kind, ps) => {
    const list = [...ps].sort((x, y) => x - y).join(',') || '-';
    write(`${kind} ${Date.now()} ${list}\n`);
  };
  let stopping = false;
  let inFlight = Promise.resolve();
  const consumer = kafka.consumer({ groupId: a.group });
  const { GROUP_JOIN, REBALANCING, CRASH } = consumer.events;
  consumer.on(REBALANCING, () => {
    if (owned.length) ownership('REVOKE', owned);
    owned = [];
  });
  consumer.on(GROUP_JOIN, ({ payload }) => {
    if (owned.length) ownership('REVOKE', owned); // rejoined without a REBALANCING event (e.g. unknown member)
    owned = [...(payload.memberAssignment[topic] || [])];
    ownership('ASSIGN', owned);
  });
  consumer.on(CRASH, ({ payload }) => process.stderr.write(`consumer crashed: ${payload.error} restart=${payload.restart}\n`));
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachBatch: async ({ batch }) => {
      if (stopping || batch.messages.length === 0) return;
      let done;
      inFlight = new Promise((r) => { done = r; });
      try {
        let lines = '';
        for (const m of batch.messages) lines += `REC ${batch.partition} ${m.offset} ${m.key.toString()}\n`;
        write(lines);
        const next = (BigInt(batch.messages[batch.messages.length - 1].offset) + 1n).toString();
        try {
          await consumer.commitOffsets([{ topic, partition: batch.partition, offset: next }]);
          write(`COMMITTED ${Date.now()} ${batch.partition}=${next},\n`);
        } catch (e) {
          write(`COMMIT_FAILED ${Date.now()} ${e.type || e.name}\n`);
        }
      } finally {
        done();
      }
    },
  });
  while (!fs.existsSync(a['stop-file'])) await new Promise((r) => setTimeout(r, 100));
  stopping = true;
  await inFlight;
  if (owned.length) ownership('REVOKE', owned); // nothing is processed from here on
  owned = [];
  await consumer.disconnect(); // stops the fetch loop and sends LeaveGroup
  fs.closeSync(fd);
  process.stdout.write(JSON.stringify({ stopped: true }) + '\n');
}

async function main() {
  const a = args();
  if (a.cmd === 'group-consume') return groupConsume(a);
  const kafka = new Kafka({ clientId: 'sluice-kafkajs', brokers: [a.bootstrap], logLevel: logLevel.WARN, logCreator });
  const topic = a.topic;
  const out = {};
  if (a.cmd === 'produce') {
    const count = parseInt(a.count, 10);
    const batch = parseInt(a.batch || '500', 10);
    const idempotent = a.idempotent === 'true';
    const compression = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP }[a.compression || 'none'];
    const producer = kafka.producer({ idempotent, maxInFlightRequests: idempotent ? 1 : undefined });
    await producer.connect();
    const t0 = Date.now();
    const acks = [];
    try {
      for (let start = 0; start < count; start += batch) {
        const messages = [];
        for (let i = start; i < Math.min(count, start + batch); i++) {
          messages.push({ key: `k${i}`, value: `k${i}|${i}|xxxxxxxxxxxxxxxx` });
        }
        const res = await producer.send({ topic, messages, acks: -1, compression });
        // Within one send, each partition's messages keep their order: keys -> offsets base, base+1, ...
        const byPartition = {};
        for (const r of res) {
          if (r.errorCode !== 0) throw new Error(`partition ${r.partition}: error code ${r.errorCode}`);
          byPartition[r.partition] = parseInt(r.baseOffset, 10);
        }
        acks.push({ first: start, parts: byPartition });
      }
    } finally {
      await producer.disconnect();
    }
    out.acks = acks;
    out.seconds = (Date.now() - t0) / 1000;
  } else {
    const admin = kafka.admin();
    await admin.connect();
    try {
      if (a.cmd === 'create') {
        out.created = await admin.createTopics({ topics: [{ topic, numPartitions: parseInt(a.partitions, 10) }],
          waitForLeaders: true });
        out.metadata = await admin.fetchTopicMetadata({ topics: [topic] });
      } else if (a.cmd === 'inspect') {
        out.metadata = await admin.fetchTopicMetadata({ topics: [topic] });
        out.offsets = await admin.fetchTopicOffsets(topic);
        out.configs = await admin.describeConfigs({ includeSynonyms: false,
          resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }] });
        out.topics = await admin.listTopics();
      } else if (a.cmd === 'list') {
        out.topics = await admin.listTopics();
      } else if (a.cmd === 'view') {
        out.view = await clusterView(admin, a.topics);
      } else if (a.cmd === 'delete') {
        await admin.deleteTopics({ topics: [topic], timeout: 30000 });
        out.topics = await admin.listTopics();
      } else {
        throw new Error(`unknown command ${a.cmd}`);
      }
    } finally {
      await admin.disconnect();
    }
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

// The shape of the Go tool's VIEW line (go/admin.go), checked by harness.check_cluster_view.
async function clusterView(admin, spec) {
  const topics = spec.split(',').map((t) => {
    const [topic, n] = t.split(':');
    return { topic, numPartitions: parseInt(n, 10) };
  });
  await admin.createTopics({ topics, waitForLeaders: true });
  const view = { client: 'kafkajs admin', cluster_ids: {}, listed: {}, described: {} };
  // listTopics gives names only; fetchTopicMetadata() without topics lists every topic with its partitions.
  const names = await admin.listTopics();
  const all = await admin.fetchTopicMetadata();
  for (const name of names) view.listed[name] = -1;
  for (const t of all.topics) {
    if (!(t.name in view.listed)) throw new Error(`fetchTopicMetadata() lists ${t.name}, listTopics() does not`);
    view.listed[t.name] = t.partitions.length;
  }
  const cluster = await admin.describeCluster();
  view.cluster_ids.describeCluster = cluster.clusterId;
  view.controller = cluster.controller;
  view.brokers = cluster.brokers.map((b) => ({ id: b.nodeId, host: b.host, port: b.port }));
  const described = await admin.fetchTopicMetadata({ topics: topics.map((t) => t.topic) });
  for (const t of described.topics) {
    view.described[t.name] = t.partitions
      .map((p) => ({ partition: p.partitionId, leader: p.leader, replicas: p.replicas, isr: p.isr }))
      .sort((x, y) => x.partition - y.partition);
  }
  return view;
}

main().catch((e) => {
  process.stderr.write(`kafkajs_tool failed: ${e && e.stack ? e.stack : e}\n`);
  if (e && e.type) process.stderr.write(`error type: ${e.type} code: ${e.code}\n`);
  process.exit(1);
});
