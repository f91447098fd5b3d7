// kafkajs as a test peer. Records are JSON lines on stdin / stdout, logs go to stderr.
//   node interop.js create-topic BOOTSTRAP TOPIC PARTITIONS
//   node interop.js produce BOOTSTRAP TOPIC CODEC        < {"key","value","headers":[[k,v]]} lines
//   node interop.js consume BOOTSTRAP TOPIC GROUP LIMIT  > {"partition","offset","key","value","headers"} lines
// `consume` processes LIMIT records in arrival order, commits exactly those and leaves.
'use strict'
const { Kafka, CompressionTypes, logLevel } = require('kafkajs')
const readline = require('node:readline')

const [command, bootstrap, topic, ...rest] = process.argv.slice(2)
const kafka = new Kafka({
  clientId: 'mirrorsim-interop',
  brokers: bootstrap.split(','),
  logLevel: logLevel.ERROR,
  logCreator: () => ({ level, log }) => process.stderr.write(`${level} ${JSON.stringify(log)}\n`),
})
const CODECS = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP }
const BATCH = 500

async function createTopic (partitions) {
  const admin = kafka.admin()
  await admin.connect()
  try {
    const created = await admin.createTopics({
      topics: [{ topic, numPartitions: Number(partitions), replicationFactor: 1 }],
      waitForLeaders: true,
    })
    if (!created) throw new Error(`topic ${topic} already exists`)
  } finally {
    await admin.disconnect()
  }
}

async function produce (codec) {
  const records = []
  for await (const line of readline.createInterface({ input: process.stdin })) {
    if (line) records.push(JSON.parse(line))
  }
  const producer = kafka.producer({ allowAutoTopicCreation: false })
  await producer.connect()
  try {
    for (let start = 0; start < records.length; start += BATCH) {
      const messages = records.slice(start, start + BATCH).map((r) => ({
        key: r.key,
        value: r.value,
        headers: Object.fromEntries(r.headers),
      }))
      await producer.send({ topic, acks: -1, compression: CODECS[codec], messages })
    }
  } finally {
    await producer.disconnect()
  }
}

async function consume (groupId, limit) {
  // a short long-poll: disconnect waits for the fetch in flight, empty once caught up
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100 })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  const next = new Map()
  let processed = 0
  let done
  const finished = new Promise((resolve) => { done = resolve })
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      if (processed >= limit) return
      processed += 1
      const headers = Object.entries(message.headers || {}).map(([k, v]) => [k, v.toString()])
      process.stdout.write(JSON.stringify({
        partition,
        offset: Number(message.offset),
        key: message.key.toString(),
        value: message.value.toString(),
        headers,
      }) + '\n')
      next.set(partition, (BigInt(message.offset) + 1n).toString())
      if (processed === limit) done()
    },
  })
  await finished
  await consumer.commitOffsets([...next].map(([partition, offset]) => ({ topic, partition, offset })))
  await consumer.disconnect()
}

const commands = {
  'create-topic': () => createTopic(rest[0]),
  produce: () => produce(rest[0]),
  consume: () => consume(rest[0], Number(rest[1])),
}
// stdout to a pipe is asynchronous: exit only once everything written has been flushed
commands[command]().then(
  () => process.stdout.write('', () => process.exit(0)),
  (error) => { process.stderr.write(`${error.stack}\n`); process.exit(1) },
)
