import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { Command } from "commander";
import pg from "pg";
import { WebhookService } from "../gen/marketdata/v1/webhook_service_pb.js";
import { runCliSync, type ServeProcess, startServe } from "../src/cli/run-sync.js";
import { type CpuProfile, reportProfile } from "./cpu-profile.js";
import { log, median, percentiles } from "./harness.js";
import { saleLines } from "./sales-file.js";
import { type Delivery, selfSignedCertificate, WebhookReceiver } from "./webhook-receiver.js";

// npm run bench:webhooks — webhooks under load, through `marketdata serve`
// (one worker: delivery shares the process with ingest, the worst case) and
// local HTTPS receivers in this process, one per webhook as a hundred
// subscribers would have (each its own destination, so the per-destination
// bound applies as it would), signatures not checked here (the receivers'
// cost is not the server's).
//
// latency: N webhooks (default 100), each on one of 10 collections, while
//   1,000 sales/s are ingested round-robin over them: commit to receipt per
//   event (receipt time minus the start of the ingest request that carried
//   it: an upper bound), p50/p99; lost events and duplicates counted.
// ingest: unpaced ingest (sales/s) with the N webhooks delivering against
//   with them paused, alternating rounds, medians and their ratio.
// outage: the receiver answers 503 for --down-minutes (default 10) while
//   sales go in, then 200: every event delivered, in order, and how long
//   the backlog took once it was back.

const opts = new Command("bench:webhooks")
  .description("webhook delivery: commit-to-receipt latency at 1,000 sales/s over 100 webhooks, ingest speed with and without them, a receiver's outage")
  .option("--parts <list>", "latency,ingest,outage", "latency,ingest")
  .option("--db <target>", "sqlite (a temporary file) or a postgres:// server (a database of its own is created and dropped)", "sqlite")
  .option("--webhooks <n>", "webhooks (each on one of 10 collections)", "100")
  .option("--rate <n>", "sales per second in the latency part", "1000")
  .option("--seconds <s>", "seconds of load per round", "10")
  .option("--rounds <n>", "alternating rounds of the ingest part", "3")
  .option("--down-minutes <m>", "how long the receiver is down in the outage part", "10")
  .option("--profile", "the ingest part only, with webhooks delivering: a CPU profile of the server (node --cpu-prof), per event delivered", false)
  .parse()
  .opts<{ parts: string; db: string; webhooks: string; rate: string; seconds: string; rounds: string; downMinutes: string; profile: boolean }>();

const PARTS = new Set(opts.parts.split(","));
const WEBHOOKS = Number(opts.webhooks);
const RATE = Number(opts.rate);
const SECONDS = Number(opts.seconds);
const COLLECTIONS = Array.from({ length: 10 }, (_, i) => `0x${String(i + 1).padStart(2, "0").repeat(20)}`);
const BATCH = 50;

async function store(): Promise<{ db: string; drop(): Promise<void> }> {
  if (opts.db === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "bench-webhooks-"));
    return { db: join(dir, "store.sqlite"), drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const name = `bench_webhooks_${process.pid}`;
  const admin = new pg.Client({ connectionString: opts.db });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(opts.db);
  url.pathname = `/${name}`;
  return {
    db: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: opts.db });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

interface Setup {
  db: string;
  server: ServeProcess;
  receiver: Receivers;
  ingestKey: string;
  adminKey: string;
  ids: string[];
  /** Per event id: the start of the ingest request that carried its sale (ms, performance.now of this process's clock: Date.now()). */
  sentAt: Map<string, number>;
  cleanup(): Promise<void>;
}

/** One receiver per webhook (each its own port: its own destination), seen as one. */
class Receivers {
  answer: (d: Delivery) => { status: number } = () => ({ status: 200 });
  onDelivery: ((d: Delivery) => void) | undefined;
  constructor(readonly list: WebhookReceiver[]) {
    for (const r of list) {
      r.answer = (d) => this.answer(d);
      r.onDelivery = (d) => this.onDelivery?.(d);
    }
  }
  get certificate(): string {
    return this.list[0]!.certificate;
  }
  async close(): Promise<void> {
    for (const r of this.list) await r.close();
  }
}

async function setup(nodeArgs: string[] = []): Promise<Setup> {
  const { db, drop } = await store();
  runCliSync(["migrate", "--db", db]);
  const ingestKey = runCliSync(["keys", "create", "--db", db, "--name", "bench", "--scope", "ingest"]).stdout.trim();
  const adminKey = runCliSync(["keys", "create", "--db", db, "--name", "operator", "--scope", "admin"]).stdout.trim();
  const cert = selfSignedCertificate();
  const receiver = new Receivers(await Promise.all(Array.from({ length: WEBHOOKS }, () => WebhookReceiver.start({ verify: false, record: false }, cert))));
  const ca = join(mkdtempSync(join(tmpdir(), "bench-ca-")), "ca.pem");
  writeFileSync(ca, receiver.certificate);
  const server = await startServe([
    "--db", db, "--port", "0", "--workers", "1", "--log-level", "info", "--ingest-rate-limit", "0", "--no-derive-refresh",
    "--allow-private-webhooks", "--webhook-ca", ca,
  ], { nodeArgs });
  const client = createClient(WebhookService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
  const ids: string[] = [];
  for (let i = 0; i < WEBHOOKS; i++) {
    const r = await client.createWebhook({ url: `${receiver.list[i]!.url}/w${i}`, collections: [COLLECTIONS[i % COLLECTIONS.length]!], types: ["sale"] }, { headers: { "x-api-key": adminKey } });
    ids.push(r.webhook!.id);
  }
  return {
    db,
    server,
    receiver,
    ingestKey,
    adminKey,
    ids,
    sentAt: new Map(),
    cleanup: async () => {
      await server.stop();
      await receiver.close();
      rmSync(join(ca, ".."), { recursive: true, force: true });
      await drop();
    },
  };
}

let seed = 1;
const now = () => Math.floor(Date.now() / 1000);

/** Batches of fresh sales of one collection. */
function salesOf(collection: string, count: number): { lines: string[]; hashes: string[] } {
  const lines = [...saleLines(count, seed++, collection, { start: now() - 3600, span: 3600 })];
  return { lines, hashes: lines.map((l) => (JSON.parse(l) as { hash: string }).hash) };
}

async function post(s: Setup, lines: string[]): Promise<boolean> {
  const r = await fetch(`${s.server.url}/v1/ingest/sales`, {
    method: "POST",
    headers: { "content-type": "application/x-ndjson", "x-api-key": s.ingestKey },
    body: lines.join("\n"),
  });
  await r.arrayBuffer();
  return r.ok;
}

const webhookClient = (s: Setup) => createClient(WebhookService, createConnectTransport({ baseUrl: s.server.url, httpVersion: "1.1" }));

async function latency(): Promise<void> {
  const s = await setup();
  try {
    // Per webhook, every hash sent to its collection and when; per webhook, what arrived.
    const sentAt = new Map<string, number>();
    const expected = new Map<string, number>();
    const received = new Map<string, Map<string, number>>();
    const latencies: number[] = [];
    /**
     * Latencies of the sales sent after WARM_SECONDS: the first second
     * carries the receivers' TLS handshakes, the collections' first
     * appearance and the JIT (its p99 near a second), not a steady state.
     */
    const warm: number[] = [];
    /** The same, from the ingest request's answer (after its commit): a lower bound, negative when the webhook came first. */
    const afterAck: number[] = [];
    const ackAt = new Map<string, number>();
    const WARM_SECONDS = 2;
    const measuredFrom = Date.now() + WARM_SECONDS * 1000;
    let duplicates = 0;
    let outOfOrder = 0;
    const lastPosition = new Map<string, number>();
    s.receiver.onDelivery = (d: Delivery) => {
      const id = d.payload.data.webhookId;
      let seen = received.get(id);
      if (seen === undefined) received.set(id, (seen = new Map()));
      for (const e of d.payload.data.events) {
        const hash = e.sale!.hash as string;
        if (seen.has(hash)) duplicates++;
        seen.set(hash, d.receivedAt);
        const position = Number(e.position);
        if (position <= (lastPosition.get(id) ?? 0)) outOfOrder++;
        lastPosition.set(id, position);
        const t = sentAt.get(hash);
        if (t !== undefined) {
          latencies.push(d.receivedAt - t);
          if (t >= measuredFrom) {
            warm.push(d.receivedAt - t);
            const acked = ackAt.get(hash);
            if (acked !== undefined) afterAck.push(d.receivedAt - acked);
          }
        }
      }
    };
    const perCollection = WEBHOOKS / COLLECTIONS.length;
    log(`latency: ${WEBHOOKS} webhooks over ${COLLECTIONS.length} collections, ${RATE} sales/s for ${WARM_SECONDS} + ${SECONDS} s (${(opts.db === "sqlite" ? "SQLite" : "PostgreSQL")})`);
    const everyMs = (BATCH / RATE) * 1000;
    const end = performance.now() + (SECONDS + WARM_SECONDS) * 1000;
    let i = 0;
    const inflight: Promise<unknown>[] = [];
    for (let due = performance.now(); due < end; due += everyMs) {
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const collection = COLLECTIONS[i++ % COLLECTIONS.length]!;
      const { lines, hashes } = salesOf(collection, BATCH);
      const t = Date.now();
      for (const h of hashes) sentAt.set(h, t);
      expected.set(collection, (expected.get(collection) ?? 0) + hashes.length);
      inflight.push(
        post(s, lines).then(() => {
          const acked = Date.now();
          for (const h of hashes) ackAt.set(h, acked);
        }),
      );
    }
    await Promise.all(inflight);
    const sent = [...expected.values()].reduce((a, b) => a + b, 0);
    const want = sent * perCollection;
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline && latencies.length - duplicates < want) await new Promise((r) => setTimeout(r, 100));
    const delivered = [...received.values()].reduce((a, m) => a + m.size, 0);
    const { p50, p99 } = percentiles(latencies);
    const steady = percentiles(warm);
    const acked = percentiles(afterAck);
    log(`| webhooks | sales/s | events due | delivered | lost | duplicates | out of order | request sent → receipt p50 / p99 ms (after ${WARM_SECONDS} s) | acknowledged → receipt p50 / p99 | sent → receipt from the first sale |`);
    log(`|---|---|---|---|---|---|---|---|---|---|`);
    log(`| ${WEBHOOKS} | ${RATE} | ${want} | ${delivered} | ${want - delivered} | ${duplicates} | ${outOfOrder} | ${steady.p50} / ${steady.p99} | ${acked.p50} / ${acked.p99} | ${p50} / ${p99} |`);
  } finally {
    await s.cleanup();
  }
}

async function ingestSpeed(): Promise<void> {
  const profileDir = opts.profile ? mkdtempSync(join(tmpdir(), "bench-webhooks-prof-")) : undefined;
  const s = await setup(profileDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${profileDir}`]);
  const client = webhookClient(s);
  const admin = { headers: { "x-api-key": s.adminKey } };
  const perCollection = WEBHOOKS / COLLECTIONS.length;
  let events = 0;
  let due = 0;
  s.receiver.onDelivery = (d) => {
    events += d.payload.data.events.length;
  };
  const send = async (collection: string, count: number): Promise<{ ok: boolean; ms: number }> => {
    const { lines } = salesOf(collection, count);
    const t = performance.now();
    const ok = await post(s, lines);
    if (ok) due += count * perCollection;
    return { ok, ms: performance.now() - t };
  };
  /** Every webhook delivering, caught up on what was sent while they were paused: the rounds measure live delivery only. */
  const resumeAndDrain = async () => {
    for (const id of s.ids) await client.resumeWebhook({ id }, admin);
    const deadline = Date.now() + 120_000;
    while (events < due && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  };
  const pauseAll = async () => {
    for (const id of s.ids) await client.pauseWebhook({ id }, admin);
    // What was in flight lands; what it delivers later is owed, not counted.
    await new Promise((r) => setTimeout(r, 500));
  };
  /** Unpaced ingest from 4 writers for SECONDS: sales committed per second. */
  const unpaced = async (): Promise<number> => {
    let sales = 0;
    const end = performance.now() + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: 4 }, async (_, w) => {
        let i = w;
        while (performance.now() < end) if ((await send(COLLECTIONS[i++ % COLLECTIONS.length]!, 500)).ok) sales += 500;
      }),
    );
    return sales / SECONDS;
  };
  /** RATE sales/s in batches of BATCH for SECONDS: the acknowledgement latency of each batch. */
  const paced = async (): Promise<number[]> => {
    const ms: number[] = [];
    const everyMs = (BATCH / RATE) * 1000;
    const end = performance.now() + SECONDS * 1000;
    const inflight: Promise<void>[] = [];
    let i = 0;
    for (let at = performance.now(); at < end; at += everyMs) {
      const wait = at - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      inflight.push(send(COLLECTIONS[i++ % COLLECTIONS.length]!, BATCH).then((r) => void ms.push(r.ms)));
    }
    await Promise.all(inflight);
    return ms;
  };
  if (profileDir !== undefined) {
    try {
      await resumeAndDrain();
      await unpaced();
      const before = events;
      await unpaced();
      const delivered = events - before;
      await s.server.stop();
      log(`\nserve with ${WEBHOOKS} webhooks delivering while ingest runs unpaced: ${delivered} events delivered in the second round`);
      // One profile per thread: the server's, the deliveries' worker, the ingest writer's.
      for (const file of readdirSync(profileDir).filter((f) => f.endsWith(".cpuprofile"))) {
        log(`\n${file}:`);
        reportProfile(JSON.parse(readFileSync(join(profileDir, file), "utf8")) as CpuProfile, events, "event delivered", 20);
      }
    } finally {
      await s.cleanup();
      rmSync(profileDir, { recursive: true, force: true });
    }
    return;
  }
  try {
    const engine = opts.db === "sqlite" ? "SQLite" : "PostgreSQL";
    log(`ingest (${engine}): ${WEBHOOKS} webhooks delivering (caught up before each round) vs paused, alternating ${opts.rounds} rounds of ${SECONDS} s`);
    const rows: { without: number; with: number; delivered: number; ackWithout: number[]; ackWith: number[] }[] = [];
    // Warm-up (JIT, the store's first pages), not counted.
    await unpaced();
    for (let r = 0; r < Number(opts.rounds); r++) {
      // ABBA: the store grows through the run, so neither side always goes first.
      const measure = async (on: boolean) => {
        if (on) await resumeAndDrain();
        else await pauseAll();
        const ack = await paced();
        const before = events;
        const speed = await unpaced();
        return { ack, speed, delivered: (events - before) / SECONDS };
      };
      const first = await measure(r % 2 === 1);
      const second = await measure(r % 2 === 0);
      const [off, on] = r % 2 === 1 ? [second, first] : [first, second];
      const without = off.speed;
      const withW = on.speed;
      const delivered = on.delivered;
      const ackWithout = off.ack;
      const ackWith = on.ack;
      rows.push({ without, with: withW, delivered, ackWithout, ackWith });
      log(`  round ${r + 1}: unpaced ${without.toFixed(0)} vs ${withW.toFixed(0)} sales/s (${delivered.toFixed(0)} events/s delivered); ack p99 at ${RATE}/s ${percentiles(ackWithout).p99.toFixed(1)} vs ${percentiles(ackWith).p99.toFixed(1)} ms`);
    }
    const m = (f: (x: (typeof rows)[number]) => number) => median(rows.map(f));
    log(`| ingest | without webhooks | with ${WEBHOOKS} delivering | ratio |`);
    log(`|---|---|---|---|`);
    // Each round's own ratio too: the rounds drift (the JIT, the store's growth), a pair within a round does not.
    log(`| unpaced, sales/s (4 writers, 500-sale batches) | ${m((x) => x.without).toFixed(0)} | ${m((x) => x.with).toFixed(0)} (${m((x) => x.delivered).toFixed(0)} events/s delivered) | ${(m((x) => x.with) / m((x) => x.without)).toFixed(2)} (median of the rounds' own: ${m((x) => x.with / x.without).toFixed(2)}) |`);
    const p = (xs: number[], k: "p50" | "p99") => percentiles(xs)[k];
    for (const k of ["p50", "p99"] as const) {
      const a = m((x) => p(x.ackWithout, k));
      const b = m((x) => p(x.ackWith, k));
      log(`| at ${RATE} sales/s, acknowledgement ${k} ms | ${a.toFixed(1)} | ${b.toFixed(1)} | ${(a / b).toFixed(2)} (speed: without/with) |`);
    }
  } finally {
    await s.cleanup();
  }
}

async function outage(): Promise<void> {
  const minutes = Number(opts.downMinutes);
  // Ten webhooks, one collection: a long outage, not a wide one.
  const s = await setup();
  try {
    const client = webhookClient(s);
    const admin = { headers: { "x-api-key": s.adminKey } };
    for (const id of s.ids.slice(10)) await client.deleteWebhook({ id }, admin);
    const ids = s.ids.slice(0, 10);
    const order = new Map<string, string[]>();
    let refused = 0;
    let down = true;
    s.receiver.answer = () => (down ? { status: 503 } : { status: 200 });
    s.receiver.onDelivery = (d) => {
      const list = order.get(d.payload.data.webhookId) ?? [];
      for (const e of d.payload.data.events) list.push(e.sale!.hash as string);
      order.set(d.payload.data.webhookId, list);
    };
    const countRefused = s.receiver.answer;
    s.receiver.answer = (d) => {
      const a = countRefused(d);
      if (a.status !== 200) refused++;
      return a;
    };
    const sent = new Map<string, string[]>();
    log(`outage: the receiver answers 503 for ${minutes} min while 10 sales/s go to each of 10 collections`);
    const end = Date.now() + minutes * 60_000;
    while (Date.now() < end) {
      for (const c of COLLECTIONS) {
        const { lines, hashes } = salesOf(c, 1);
        await post(s, lines);
        sent.set(c, [...(sent.get(c) ?? []), ...hashes]);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    down = false;
    const back = Date.now();
    const total = [...sent.values()].reduce((a, b) => a + b.length, 0);
    const ok = () => ids.every((id, i) => (order.get(id)?.length ?? 0) >= sent.get(COLLECTIONS[i % COLLECTIONS.length]!)!.length);
    while (!ok() && Date.now() - back < 15 * 60_000) await new Promise((r) => setTimeout(r, 500));
    const drained = (Date.now() - back) / 1000;
    let exact = 0;
    ids.forEach((id, i) => {
      const want = sent.get(COLLECTIONS[i % COLLECTIONS.length]!)!;
      const got = [...new Set(order.get(id) ?? [])];
      if (JSON.stringify(got) === JSON.stringify(want)) exact++;
    });
    log(`| down | sales sent | refused attempts | webhooks with every event, in order | all delivered after it was back |`);
    log(`|---|---|---|---|---|`);
    log(`| ${minutes} min | ${total} | ${refused} | ${exact} of ${ids.length} | ${drained.toFixed(1)} s |`);
  } finally {
    await s.cleanup();
  }
}

if (PARTS.has("latency")) await latency();
if (PARTS.has("ingest")) await ingestSpeed();
if (PARTS.has("outage")) await outage();
