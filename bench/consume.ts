import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { runCliSync } from "../src/cli/run-sync.js";
import { CONSUME_DEFAULTS } from "../src/config/settings.js";
import type { JetStreamIngestOptions } from "../src/transport/jetstream/ingest-consumer.js";
import { benchKey, log, median, startCli } from "./harness.js";
import { backlog, deadLetters, dropJetStream, openPublisher, prepareJetStream, startConsume } from "./jetstream.js";
import { saleLines } from "./sales-file.js";

// npm run bench:consume — ingest from NATS JetStream (`marketdata consume`)
// against the ingest API over HTTP, on the embedded SQLite store (issue 37):
// 1. throughput, alternating rounds: the same --round-sales sales posted by
//    --writers writers in batches of --batch to `serve` (REST NDJSON), and
//    drained from a JetStream backlog by one `consume` at its defaults
//    (messages of --per-message sales, commits of --consume-batch), each
//    round on a fresh store; sales per second, medians, and the ratio;
// 2. kills: --sales sales published, drained by `consume` killed (SIGKILL)
//    at --kills random points and started again each time; then the store's
//    count and volume against what was published, the dead letters (none).
// Everything (server, consumer, NATS, writers, publisher) shares the machine.

const opts = new Command("bench:consume")
  .description("marketdata consume (NATS JetStream) against the HTTP ingest API, and a drain killed at random points (SQLite)")
  .option("--nats <url>", "NATS server with JetStream", "nats://127.0.0.1:4222")
  .option("--sales <n>", "sales of the kill part", "1000000")
  .option("--kills <n>", "SIGKILLs of the consumer during the kill part", "3")
  .option("--round-sales <n>", "sales per throughput round", "100000")
  .option("--rounds <n>", "throughput rounds of each", "3")
  .option("--per-message <n>", "sales per JetStream message", "100")
  .option("--writers <n>", "HTTP writers", "4")
  .option("--batch <n>", "sales per HTTP request", "1000")
  .option("--consume-batch <n>", "records per consumer commit (consume's --batch)", String(CONSUME_DEFAULTS.batch))
  .option("--parts <list>", "throughput,kills", "throughput,kills")
  .parse()
  .opts<{
    nats: string;
    sales: string;
    kills: string;
    roundSales: string;
    rounds: string;
    perMessage: string;
    writers: string;
    batch: string;
    consumeBatch: string;
    parts: string;
  }>();

const PARTS = new Set(opts.parts.split(","));
const COLLECTION = `0x${"c0".repeat(20)}`;
const PER_MESSAGE = Number(opts.perMessage);
const BATCH = Number(opts.batch);
let seed = 11;

/**
 * `n` fresh sales (distinct hashes) over two years, and their volume. (Not
 * within the last hour, as bench:ingest's: a million sales in one hour of
 * one collection made every commit recompute that hour's aggregates over
 * all of them, and the drain slowed to a third as the hour filled.)
 */
function sales(n: number): { lines: string[]; volume: bigint } {
  const lines = [...saleLines(n, seed++, COLLECTION)];
  let volume = 0n;
  for (const l of lines) volume += BigInt((JSON.parse(l) as { price: string }).price);
  return { lines, volume };
}

const collectionLine = JSON.stringify({ contractAddress: COLLECTION, name: "bench:consume" });

/** A fresh store with the collection and a key of each kind. */
function freshStore(dir: string, name: string): { db: string; read: string; ingest: string } {
  const db = join(dir, `${name}.sqlite`);
  runCliSync(["migrate", "--db", db]);
  return { db, read: benchKey(db, "reader", null), ingest: benchKey(db, "indexer", null, "ingest") };
}

async function stats(url: string, key: string): Promise<{ n: number; volume: bigint }> {
  const r = (await (await fetch(`${url}/v1/collection/stats?contractAddress=${COLLECTION}&includeWash=true`, { headers: { "x-api-key": key } })).json()) as {
    data?: { totalNumSales: number; totalVolume: string };
  };
  return { n: r.data?.totalNumSales ?? 0, volume: BigInt(r.data?.totalVolume ?? "0") };
}

/** Sales per second of `lines` posted to `serve` over REST by the writers. */
async function httpRound(dir: string, lines: string[]): Promise<number> {
  const store = freshStore(dir, `http-${seed}`);
  const server = await startCli(store.db, 1, 64, ["--rate-limit", "0", "--ingest-rate-limit", "0", "--no-derive-refresh"]);
  try {
    const post = async (body: string) => {
      const r = await fetch(`${server.url}/v1/ingest/sales`, { method: "POST", headers: { "content-type": "application/x-ndjson", "x-api-key": store.ingest }, body });
      if (!r.ok) throw new Error(`ingest answered ${r.status}: ${await r.text()}`);
    };
    const made = await fetch(`${server.url}/v1/ingest/collections`, { method: "POST", headers: { "content-type": "application/x-ndjson", "x-api-key": store.ingest }, body: collectionLine });
    if (!made.ok) throw new Error(`creating the collection answered ${made.status}`);
    const batches: string[] = [];
    for (let i = 0; i < lines.length; i += BATCH) batches.push(lines.slice(i, i + BATCH).join("\n"));
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: Number(opts.writers) }, async () => {
        while (next < batches.length) await post(batches[next++]!);
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const s = await stats(server.url, store.read);
    if (s.n !== lines.length) throw new Error(`HTTP round: the store holds ${s.n} sales, ${lines.length} were acknowledged`);
    return lines.length / seconds;
  } finally {
    await server.stop();
  }
}

function jetstreamOptions(name: string): JetStreamIngestOptions {
  return { ...CONSUME_DEFAULTS, servers: opts.nats, stream: `BENCH_${name}`, subjectPrefix: `bench.${name}`, durable: `bench_${name}`, deadLetter: `bench.${name}-dead`, ackWaitSeconds: 5 };
}

/** Publishes the collection and `lines` as messages of PER_MESSAGE sales. */
async function publish(o: JetStreamIngestOptions, lines: string[]): Promise<number> {
  const started = performance.now();
  const pub = await openPublisher(o.servers);
  await pub.publish(`${o.subjectPrefix}.collections`, [collectionLine]);
  for (let i = 0; i < lines.length; i += PER_MESSAGE) await pub.publish(`${o.subjectPrefix}.sales`, lines.slice(i, i + PER_MESSAGE));
  await pub.close();
  return lines.length / ((performance.now() - started) / 1000);
}

const consumeArgs = (db: string, o: JetStreamIngestOptions) => [
  "--db", db, "--from", o.servers, "--stream", o.stream, "--subject-prefix", o.subjectPrefix, "--durable", o.durable,
  "--dead-letter", o.deadLetter, "--batch", opts.consumeBatch, "--progress", "0", "--ack-wait", "5",
];

async function untilDrained(o: JetStreamIngestOptions, below = 0): Promise<void> {
  while ((await backlog(o)) > below) await new Promise((r) => setTimeout(r, 50));
}

/** Sales per second of one `consume` draining a backlog of `lines`. */
async function consumeRound(dir: string, lines: string[]): Promise<number> {
  const name = `r${seed}_${process.pid}`;
  const o = jetstreamOptions(name);
  const store = freshStore(dir, name);
  await dropJetStream(o);
  await prepareJetStream(o);
  try {
    await publish(o, lines);
    const started = performance.now();
    const consumer = startConsume(consumeArgs(store.db, o));
    await untilDrained(o);
    const seconds = (performance.now() - started) / 1000;
    await consumer.stop();
    return lines.length / seconds;
  } finally {
    await dropJetStream(o);
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "marketdata-bench-consume-"));
  try {
    if (PARTS.has("throughput")) {
      const http: number[] = [];
      const nats: number[] = [];
      const ratios: number[] = [];
      for (let r = 0; r < Number(opts.rounds); r++) {
        const { lines } = sales(Number(opts.roundSales));
        const h = await httpRound(dir, lines);
        const n = await consumeRound(dir, lines);
        http.push(h);
        nats.push(n);
        ratios.push(n / h);
        log(`round ${r + 1}: HTTP ${Math.round(h)} sales/s, consume ${Math.round(n)} sales/s: ${(n / h).toFixed(2)}`);
      }
      log(
        `throughput (${opts.roundSales} sales a round, medians): HTTP (${opts.writers} writers x ${BATCH}) ${Math.round(median(http))} sales/s, ` +
          `consume (${PER_MESSAGE} a message, commits of ${opts.consumeBatch}) ${Math.round(median(nats))} sales/s; ratio of medians ${(median(nats) / median(http)).toFixed(2)}, median of rounds' ratios ${median(ratios).toFixed(2)}`,
      );
    }
    if (PARTS.has("kills")) {
      const name = `k_${process.pid}`;
      const o = jetstreamOptions(name);
      const store = freshStore(dir, name);
      await dropJetStream(o);
      await prepareJetStream(o);
      try {
        const { lines, volume } = sales(Number(opts.sales));
        const rate = await publish(o, lines);
        const messages = Math.ceil(lines.length / PER_MESSAGE) + 1;
        log(`published ${lines.length} sales in ${messages} messages (${Math.round(rate)} sales/s)`);
        const started = performance.now();
        let consumer = startConsume(consumeArgs(store.db, o));
        const points = Array.from({ length: Number(opts.kills) }, () => Math.random()).sort();
        for (const p of points) {
          await untilDrained(o, Math.floor(messages * (1 - p)));
          await consumer.stop("SIGKILL");
          log(`SIGKILL at ${Math.round(p * 100)}% of the backlog; started again`);
          consumer = startConsume(consumeArgs(store.db, o));
        }
        await untilDrained(o);
        const seconds = (performance.now() - started) / 1000;
        await consumer.stop();
        const last = /stopped: (.*)/.exec(consumer.output())?.[1] ?? consumer.output();
        const server = await startCli(store.db, 1, 64, ["--rate-limit", "0"]);
        const s = await stats(server.url, store.read);
        await server.stop();
        const dead = await deadLetters(o);
        log(
          `kills: ${lines.length} sales drained in ${seconds.toFixed(1)} s (${Math.round(lines.length / seconds)} sales/s) across ${opts.kills} SIGKILLs; ` +
            `the store holds ${s.n} sales (${s.n === lines.length ? "exact" : "WRONG"}), volume ${s.volume === volume ? "exact" : `WRONG (${s.volume} != ${volume})`}; ` +
            `${dead.length} dead letters; the last consumer: ${last}`,
        );
        if (s.n !== lines.length || s.volume !== volume || dead.length !== 0) process.exitCode = 1;
      } finally {
        await dropJetStream(o);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
