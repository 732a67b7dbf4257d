import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { Command } from "commander";
import pg from "pg";
import { WebhookService } from "../gen/marketdata/v1/webhook_service_pb.js";
import { runCliSync, type ServeProcess, startServe } from "../src/cli/run-sync.js";
import { treeMemoryMb } from "./cpu.js";
import { log, pacedWriters, percentiles, withEngineOptions } from "./harness.js";
import { MIXED_COLLECTIONS, mixedBatches, mixedCollection } from "./mixed-records.js";
import { MARKETPLACES } from "./sales-file.js";
import { openSse, type SseStream } from "./sse-client.js";
import { selfSignedCertificate, WebhookReceiver } from "./webhook-receiver.js";

// npm run bench:soak — issue 50's long run, as an operator's server lives:
// `serve` at its defaults (a worker per core, the background derive and the
// response cache on; rate limits off, one key sending everything) on a new
// empty store of each engine, for --minutes:
// - an indexer posting --rate records a second (batches of --batch: sales
//   half, listings three in ten, transfers two in ten, times now) over 20
//   collections, paced on the clock;
// - readers at --reads requests a second, paced, rotating over a few hundred
//   distinct URLs of ten endpoints on those collections;
// - --subscribers SSE subscribers to the collections' sales;
// - --webhooks webhooks (sales of one collection each) to local receivers.
// Per minute: ingest and read latency (p50, p99; each request's own time),
// the server's memory (the resident set of the primary and its workers) and
// the store's size; at the end, every sale acknowledged against what the
// subscribers and the receivers got. The targets: p99 of the last 5
// minutes within 2x of minutes 2-7, memory flat after warm-up.

const opts = withEngineOptions(new Command("bench:soak").description("a long mixed run: ingest, reads, SSE subscribers and webhooks at once, latency and memory per minute, on SQLite and PostgreSQL"))
  .option("--minutes <n>", "length of the run", "30")
  .option("--rate <n>", "records ingested per second", "300")
  .option("--batch <n>", "records per ingest batch", "50")
  .option("--reads <n>", "read requests per second", "100")
  .option("--subscribers <n>", "SSE subscribers (sales of one collection each)", "50")
  .option("--webhooks <n>", "webhooks (sales of one collection each), each to its own local receiver", "5")
  .option("--serve-flags <flags>", "more flags for serve, space-separated", "")
  .parse()
  .opts<{ engines: string; pg: string; minutes: string; rate: string; batch: string; reads: string; subscribers: string; webhooks: string; serveFlags: string }>();

const MINUTES = Number(opts.minutes);
const RATE = Number(opts.rate);
const BATCH = Number(opts.batch);
const READS = Number(opts.reads);
const SUBSCRIBERS = Number(opts.subscribers);
const WEBHOOKS = Number(opts.webhooks);
for (const [name, v] of Object.entries({ minutes: MINUTES, rate: RATE, batch: BATCH, reads: READS })) {
  if (!(v > 0)) throw new Error(`--${name}: a positive number, got ${v}`);
}

interface Minute {
  ingest: number[];
  reads: number[];
  errors: number;
  /** The server's resident set, and of it the file pages mapped (SQLite's readers map the store: the page cache, bounded by their mmap_size). */
  rssMb: number;
  fileMb: number;
  /** Records acknowledged. */
  records: number;
  storeMb: number;
  /** The background derive's rounds that ended in this minute, and their time. */
  derives: number;
  deriveMs: number;
}

/** The read rotation: a few hundred distinct URLs over ten endpoints of the mix's collections. */
function readPaths(now: number): string[] {
  const out: string[] = [];
  for (let c = 0; c < MIXED_COLLECTIONS; c++) {
    const a = mixedCollection(c);
    for (const limit of [10, 20, 50]) {
      out.push(`/v1/asset/sales?contractAddress=${a}&limit=${limit}`, `/v1/asset/listings?contractAddress=${a}&limit=${limit}&status=CREATED`);
      out.push(`/v1/collection/activity?contractAddress=${a}&limit=${limit}`, `/v1/collection/holders?contractAddress=${a}&limit=${limit}`);
      out.push(`/v1/asset/tokens?contractAddress=${a}&sort=price&limit=${limit}`, `/v1/asset/appraisals?contractAddress=${a}&limit=${limit}`);
    }
    for (const m of MARKETPLACES.slice(0, 3)) out.push(`/v1/asset/sales?contractAddress=${a}&marketplace=${m}&limit=20`, `/v1/collection/floor?contractAddress=${a}&marketplace=${m}`);
    out.push(`/v1/collection/floor?contractAddress=${a}`, `/v1/collection/stats?contractAddress=${a}`, `/v1/collection/stats?contractAddress=${a}&since=${now - 3600}`);
    for (const interval of ["hour", "day"]) out.push(`/v1/collection/stats/series?contractAddress=${a}&interval=${interval}&since=${now - 86400}`);
  }
  for (const sort of ["volume1d", "sales", "floor"]) for (const limit of [10, 20]) out.push(`/v1/collections?sort=${sort}&limit=${limit}`);
  return out;
}

/** One sale in each of the mix's collections, an hour ago. */
function seedSales(): string[] {
  const time = Math.floor(Date.now() / 1000) - 3600;
  return Array.from({ length: MIXED_COLLECTIONS }, (_, c) =>
    JSON.stringify({ hash: `0x${(c + 1).toString(16).padStart(64, "5")}`, from: `0x${"1".repeat(40)}`, to: `0x${"2".repeat(40)}`, contractAddress: mixedCollection(c),
      assetId: "1", timestamp: time, block: 18_999_999, price: "1000000000000000000", amountReceived: "1000000000000000000", currency: "ETH", marketplace: "OPENSEA" }));
}

async function store(engine: string): Promise<{ db: string; sizeMb(): Promise<number>; drop(): Promise<void> }> {
  if (engine === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "marketdata-bench-soak-"));
    const db = join(dir, "store.sqlite");
    const size = (f: string) => {
      try {
        return statSync(f).size;
      } catch {
        return 0;
      }
    };
    return { db, sizeMb: async () => (size(db) + size(`${db}-wal`)) / 1e6, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  if (engine !== "postgres") throw new Error(`--engines: sqlite or postgres, got ${engine}`);
  const name = `marketdata_bench_soak_${process.pid}`;
  const admin = new pg.Client({ connectionString: opts.pg });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(opts.pg);
  url.pathname = `/${name}`;
  return {
    db: url.toString(),
    sizeMb: async () => Number((await admin.query<{ size: string }>("SELECT pg_database_size($1) AS size", [name])).rows[0]!.size) / 1e6,
    drop: async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

async function soak(engine: string): Promise<void> {
  const s = await store(engine);
  const cert = selfSignedCertificate();
  const receivers = await Promise.all(Array.from({ length: WEBHOOKS }, () => WebhookReceiver.start({ verify: false, record: false }, cert)));
  const caDir = mkdtempSync(join(tmpdir(), "bench-soak-ca-"));
  const ca = join(caDir, "ca.pem");
  writeFileSync(ca, cert.cert);
  const streams: SseStream[] = [];
  let server: ServeProcess | undefined;
  try {
    runCliSync(["migrate", "--db", s.db]);
    const keyOf = (scope: string) => runCliSync(["keys", "create", "--db", s.db, "--name", `bench:soak ${scope}`, "--scope", scope]).stdout.trim().split("\n").pop()!;
    const ingestKey = keyOf("ingest");
    const readKey = keyOf("read");
    const adminKey = keyOf("admin");
    server = await startServe(
      ["--db", s.db, "--port", "0", "--workers", String(availableParallelism()), "--rate-limit", "0", "--ingest-rate-limit", "0", "--anonymous-rate-limit", "0",
        "--allow-private-webhooks", "--webhook-ca", ca, ...opts.serveFlags.split(" ").filter((f) => f !== "")],
      { timeoutMs: 60_000 },
    );
    const url = server.url;
    const client = createClient(WebhookService, createConnectTransport({ baseUrl: url, httpVersion: "1.1" }));
    for (let i = 0; i < WEBHOOKS; i++) {
      await client.createWebhook({ url: `${receivers[i]!.url}/w${i}`, collections: [mixedCollection(i % MIXED_COLLECTIONS)], types: ["sale"] }, { headers: { "x-api-key": adminKey } });
    }
    let delivered = 0;
    for (const r of receivers) r.onDelivery = (d) => (delivered += d.payload.data.events.length);
    // Subscribers follow collections that exist: one sale each first.
    const seed = await fetch(`${url}/v1/ingest/sales`, {
      method: "POST",
      headers: { "content-type": "application/x-ndjson", "x-api-key": ingestKey },
      body: seedSales().join("\n"),
    });
    if (seed.status !== 200) throw new Error(`seeding the collections: ${seed.status} ${await seed.text()}`);
    let streamed = 0;
    for (let i = 0; i < SUBSCRIBERS; i++) {
      const stream = await openSse(`${url}/v1/asset/sales/stream?contractAddress=${mixedCollection(i % MIXED_COLLECTIONS)}`, { "x-api-key": readKey });
      if (stream.status !== 200) throw new Error(`SSE ${stream.status}: ${JSON.stringify(stream.errorBody)}`);
      streams.push(stream);
      void (async () => {
        for (;;) {
          const e = await stream.next(3_600_000).catch(() => undefined);
          if (e === undefined) return;
          streamed++;
        }
      })();
    }

    const started = performance.now();
    const minutes: Minute[] = [];
    const startedAt = Date.now();
    const minuteAt = (i: number): Minute => (minutes[i] ??= { ingest: [], reads: [], errors: 0, rssMb: 0, fileMb: 0, records: 0, storeMb: 0, derives: 0, deriveMs: 0 });
    const minute = (): Minute => minuteAt(Math.floor((performance.now() - started) / 60_000));
    /** Per collection, the sales acknowledged after the seed: what its subscribers should get (its webhook, the seed's one too). */
    const salesOf = new Map<string, number>();
    let firstError: string | undefined;
    const fail = (m: Minute, what: string) => {
      m.errors++;
      firstError ??= what;
    };
    const next = mixedBatches(Number.POSITIVE_INFINITY, BATCH, () => Math.floor(Date.now() / 1000));
    const paths = readPaths(Math.floor(Date.now() / 1000));
    let read = 0;
    let unsent = 0;
    const sampler = setInterval(() => {
      void (async () => {
        const m = minute();
        const rss = treeMemoryMb(server!.child.pid!);
        m.rssMb = rss.rss;
        m.fileMb = rss.file;
        m.storeMb = await s.sizeMb();
      })();
    }, 55_000);
    const seconds = MINUTES * 60;
    const writers = 2;
    const readers = 10;
    log(`  ${engine}: ${MINUTES} min at ${RATE} records/s (batches of ${BATCH}), ${READS} reads/s over ${paths.length} URLs, ${SUBSCRIBERS} SSE subscribers, ${WEBHOOKS} webhooks`);
    const progress = setInterval(() => {
      // The minute just ended (this fires a little after each one's end).
      const n = Math.floor((performance.now() - started) / 60_000);
      const m = minutes[n - 1];
      if (m !== undefined) log(`    minute ${n}: ingest p99 ${(percentiles(m.ingest).p99 ?? 0).toFixed(0)} ms, reads p99 ${(percentiles(m.reads).p99 ?? 0).toFixed(0)} ms, ${m.errors} errors`);
    }, 60_000 + 500);
    try {
      await Promise.all([
        pacedWriters(writers, (writers * BATCH * 1000) / RATE, seconds, async () => {
          // A server slower than the pace leaves batches due at the end: counted, not sent (the run ends on time).
          if (performance.now() >= started + seconds * 1000) {
            unsent += BATCH;
            return;
          }
          const batch = next()!;
          const t = performance.now();
          try {
            const r = await fetch(`${url}/v1/ingest/${batch.kind}`, {
              method: "POST",
              headers: { "content-type": "application/x-ndjson", "x-api-key": ingestKey },
              body: batch.lines.join("\n"),
            });
            const text = await r.text();
            const m = minute();
            if (r.status !== 200) return fail(m, `ingest ${r.status} ${text.slice(0, 200)}`);
            m.ingest.push(performance.now() - t);
            m.records += batch.lines.length;
            if (batch.kind === "sales") {
              for (const line of batch.lines) {
                const c = (JSON.parse(line) as { contractAddress: string }).contractAddress;
                salesOf.set(c, (salesOf.get(c) ?? 0) + 1);
              }
            }
          } catch (err) {
            fail(minute(), `ingest ${(err as Error).message}`);
          }
        }),
        pacedWriters(readers, (readers * 1000) / READS, seconds, async () => {
          const path = paths[read++ % paths.length]!;
          const t = performance.now();
          try {
            const r = await fetch(`${url}${path}`, { headers: { "x-api-key": readKey } });
            await r.arrayBuffer();
            const m = minute();
            if (r.status !== 200) return fail(m, `read ${r.status} ${path}`);
            m.reads.push(performance.now() - t);
          } catch (err) {
            fail(minute(), `read ${(err as Error).message} ${path}`);
          }
        }),
      ]);
    } finally {
      clearInterval(sampler);
      clearInterval(progress);
    }
    // What is still on its way: a few seconds for the feeds and the webhooks to catch up.
    const expectedStreamed = [...Array(SUBSCRIBERS).keys()].reduce((n, i) => n + (salesOf.get(mixedCollection(i % MIXED_COLLECTIONS)) ?? 0), 0);
    const expectedDelivered = [...Array(WEBHOOKS).keys()].reduce((n, i) => n + 1 + (salesOf.get(mixedCollection(i % MIXED_COLLECTIONS)) ?? 0), 0);
    for (let waited = 0; waited < 30_000 && (streamed < expectedStreamed || delivered < expectedDelivered); waited += 500) await new Promise((r) => setTimeout(r, 500));
    for (const line of server.output().split("\n")) {
      if (!line.includes('"msg":"derived"')) continue;
      const d = JSON.parse(line) as { time: number; ms: number };
      const i = Math.floor((d.time - startedAt) / 60_000);
      if (i < 0 || i >= minutes.length) continue;
      minuteAt(i).derives++;
      minuteAt(i).deriveMs += d.ms;
    }
    report(engine, minutes, { streamed, expectedStreamed, delivered, expectedDelivered, firstError, unsent });
  } finally {
    for (const stream of streams) stream.close();
    if (server !== undefined) {
      const lines = server.output().split("\n");
      await server.stop();
      const bad = lines.filter((l) => /"level":(4|5)\d/.test(l));
      if (bad.length > 0) log(`  serve logged ${bad.length} warnings or errors; the first: ${bad[0]!.slice(0, 300)}`);
    }
    for (const r of receivers) await r.close();
    rmSync(caDir, { recursive: true, force: true });
    await s.drop();
  }
}

function report(engine: string, minutes: Minute[], end: { streamed: number; expectedStreamed: number; delivered: number; expectedDelivered: number; firstError?: string; unsent: number }): void {
  const f = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : "-");
  log(`\n## ${engine}\n\n| minute | records/s acknowledged | ingest p50 / p99 ms | reads p50 / p99 ms | errors | server RSS MB (of it file pages) | store MB | derives (ms) |\n|---|---|---|---|---|---|---|---|`);
  minutes.forEach((m, i) => {
    const w = percentiles(m.ingest);
    const r = percentiles(m.reads);
    log(`| ${i + 1} | ${f(m.records / 60)} | ${f(w.p50)} / ${f(w.p99)} | ${f(r.p50)} / ${f(r.p99)} | ${m.errors} | ${f(m.rssMb)} (${f(m.fileMb)}) | ${f(m.storeMb)} | ${m.derives} (${f(m.deriveMs)}) |`);
  });
  // Minutes 2-7 against the last 5 (whole minutes only: a last part-minute is left out).
  const whole = minutes.slice(0, MINUTES);
  const early = whole.slice(1, 7);
  const late = whole.slice(-5);
  const p99 = (ms: Minute[], k: "ingest" | "reads") => percentiles(ms.flatMap((m) => m[k])).p99;
  const ratio = (k: "ingest" | "reads") => `${f(p99(early, k))} → ${f(p99(late, k))} ms (**${(p99(late, k) / p99(early, k)).toFixed(2)}x**)`;
  const warm = whole[Math.min(2, whole.length - 1)]!;
  const last = whole.at(-1)!;
  const growth = (last.rssMb - warm.rssMb) / Math.max(1, whole.length - 3);
  log(`\n  p99, minutes 2-7 → last 5: ingest ${ratio("ingest")}, reads ${ratio("reads")} (target ≤ 2x)`);
  const anon = (m: Minute) => m.rssMb - m.fileMb;
  const anonGrowth = (anon(last) - anon(warm)) / Math.max(1, whole.length - 3);
  log(`  server RSS: minute 3 ${f(warm.rssMb)} MB → last ${f(last.rssMb)} MB (${growth.toFixed(1)} MB a minute); without file pages ${f(anon(warm))} → ${f(anon(last))} MB (${anonGrowth.toFixed(1)} MB a minute); store ${f(warm.storeMb)} → ${f(last.storeMb)} MB (${((last.storeMb - warm.storeMb) / Math.max(1, whole.length - 3)).toFixed(1)} MB a minute)`);
  log(`  records offered at ${RATE}/s and not sent by the end (the server behind the pace): ${end.unsent}`);
  log(`  errors: ${minutes.reduce((n, m) => n + m.errors, 0)}${end.firstError === undefined ? "" : ` (the first: ${end.firstError})`}`);
  log(`  SSE: ${end.streamed} of ${end.expectedStreamed} sales received; webhooks: ${end.delivered} of ${end.expectedDelivered} delivered`);
}

for (const engine of opts.engines.split(",")) await soak(engine);
