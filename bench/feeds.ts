import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Command } from "commander";
import pg from "pg";
import { AssetService } from "../gen/marketdata/v1/asset_service_pb.js";
import { runCliSync } from "../src/cli/run-sync.js";
import { allowReplication, createStandby } from "../tools/deploy/standby.js";
import { load, log, median, percentiles, pacedWriters, startCli, type Target, withEngineOptions } from "./harness.js";
import { saleLines } from "./sales-file.js";
import { openSse, type SseStream } from "./sse-client.js";

// npm run bench:feeds — the live feeds through `marketdata serve` (one
// worker, its defaults; rate and stream limits off: one key drives it all):
// - latency: 1,000 subscribers (half SSE, half gRPC) over 100 collections
//   while 20 writers ingest 1,000 sales/s (a batch of 5 every 100 ms each,
//   each batch into the next collection): from each batch's
//   acknowledgement (its commit is done) and from its send to each
//   subscriber's receipt, p50 and p99; events lost and duplicated;
// - memory: the server's RSS and heap with 5,000 idle SSE subscribers, then
//   5,000 idle gRPC ones more (10,000), per subscriber;
// - reads: requests/s on the list endpoints with 1,000 idle subscribers
//   open against none, in alternating rounds (medians).
// - standby (PostgreSQL): a hot standby of the cluster (pg_basebackup -R, as
//   `npm run deploy:replicated` makes it), a second `serve` on it: the same
//   1,000 sales/s through the primary's server, 100 subscribers on the
//   standby's; from the primary's acknowledgement to the receipt.
// On SQLite and PostgreSQL (a database of its own, created and dropped). The
// subscribers and writers run in this process, on the same two cores.

const opts = withEngineOptions(new Command("bench:feeds").description("live feeds: commit-to-receipt latency under ingest, memory per idle subscriber, reads with subscribers open; SQLite and PostgreSQL"))
  .option("--subscribers <n>", "subscribers in the latency and reads runs (half SSE, half gRPC)", "1000")
  .option("--idle <n>", "idle subscribers in the memory run (half SSE, half gRPC)", "10000")
  .option("--parts <list>", "latency,memory,reads,standby (standby: PostgreSQL only)", "latency,memory,reads,standby")
  .option("--standby-port <n>", "port of the hot standby the standby part makes", "5499")
  .parse()
  .opts<{ engines: string; pg: string; seconds: string; rounds: string; subscribers: string; idle: string; parts: string; standbyPort: string }>();

const SECONDS = Number(opts.seconds);
const ROUNDS = Number(opts.rounds);
const SUBSCRIBERS = Number(opts.subscribers);
const IDLE = Number(opts.idle);
const PARTS = new Set(opts.parts.split(","));
const COLLECTIONS = Array.from({ length: 100 }, (_, i) => `0x${(0xfeed0000 + i).toString(16).padStart(40, "0")}`);
/** The collection the reads run on: 2,000 sales and listings. */
const READ_COLLECTION = `0x${"b2".repeat(20)}`;
/** gRPC streams per HTTP/2 connection (the server allows 100 at once on one). */
const STREAMS_PER_CONNECTION = 50;
const dir = mkdtempSync(join(tmpdir(), "marketdata-bench-feeds-"));

interface Store {
  db: string;
  read: string;
  ingest: string;
  drop(): Promise<void>;
}

async function freshStore(engine: string): Promise<Store> {
  let db: string;
  let drop: () => Promise<void>;
  if (engine === "sqlite") {
    db = join(dir, `store-${Date.now()}.sqlite`);
    drop = async () => rmSync(db, { force: true });
  } else {
    const name = `marketdata_bench_feeds_${process.pid}`;
    const admin = new pg.Client({ connectionString: opts.pg });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    const u = new URL(opts.pg);
    u.pathname = `/${name}`;
    db = u.toString();
    drop = async () => {
      const a = new pg.Client({ connectionString: opts.pg });
      await a.connect();
      await a.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await a.end();
    };
  }
  runCliSync(["migrate", "--db", db]);
  const keyOf = (args: string[]) => runCliSync(["keys", "create", "--db", db, ...args]).stdout.trim().split("\n").pop()!.trim();
  const read = keyOf(["--name", "bench:feeds"]);
  const ingest = keyOf(["--name", "bench:feeds-ingest", "--scope", "ingest"]);
  const collections = join(dir, "collections.ndjson");
  writeFileSync(collections, `${COLLECTIONS.map((c, i) => JSON.stringify({ contractAddress: c, name: `feed ${i}` })).join("\n")}\n`);
  runCliSync(["import", "collections", collections, "--db", db]);
  const sales = join(dir, "sales.ndjson");
  writeFileSync(sales, `${[...saleLines(2000, 7, READ_COLLECTION)].join("\n")}\n`);
  runCliSync(["import", "sales", sales, "--db", db], 600_000);
  const listings = join(dir, "listings.ndjson");
  writeFileSync(
    listings,
    `${Array.from({ length: 2000 }, (_, i) =>
      JSON.stringify({
        marketplaceId: String(i),
        marketplace: ["OPENSEA", "BLUR"][i % 2],
        contractAddress: READ_COLLECTION,
        assetId: String(i % 500),
        createdAt: 1_700_000_000 + i * 60,
        lastUpdatedAt: 1_700_000_000 + i * 60,
        price: String(10n ** 17n + BigInt(i)),
        currency: "ETH",
        status: ["CREATED", "CANCELLED", "FULFILLED"][i % 3],
      }),
    ).join("\n")}\n`,
  );
  runCliSync(["import", "listings", listings, "--db", db], 600_000);
  return { db, read, ingest, drop };
}

/** One subscriber, counting what it receives: each sale's receipt time by hash. */
interface Subscriber {
  collection: string;
  received: Map<string, number>;
  duplicates: number;
  close(): void;
  /** Resolves once its stream is open (the opening message was received). */
  opened: Promise<void>;
}

function sseSubscriber(url: string, key: string, collection: string): Subscriber {
  const received = new Map<string, number>();
  let stream: SseStream | undefined;
  let closed = false;
  const sub: Subscriber = {
    collection,
    received,
    duplicates: 0,
    close: () => {
      closed = true;
      stream?.close();
    },
    opened: Promise.resolve(),
  };
  sub.opened = (async () => {
    const u = new URL("/v1/asset/sales/stream", url);
    u.searchParams.set("contractAddress", collection);
    stream = await openSse(u.toString(), { "x-api-key": key });
    if (stream.status !== 200) throw new Error(`SSE ${stream.status}: ${JSON.stringify(stream.errorBody)}`);
    void (async () => {
      while (!closed) {
        const e = await stream!.next(3_600_000).catch(() => undefined);
        if (e === undefined) return;
        const now = performance.now();
        const hash = (JSON.parse(e.data) as { hash: string }).hash;
        if (received.has(hash)) sub.duplicates++;
        else received.set(hash, now);
      }
    })();
  })();
  return sub;
}

function grpcSubscriber(transport: ReturnType<typeof createGrpcTransport>, key: string, collection: string): Subscriber {
  const received = new Map<string, number>();
  const abort = new AbortController();
  let open!: () => void;
  const sub: Subscriber = {
    collection,
    received,
    duplicates: 0,
    close: () => abort.abort(),
    opened: new Promise<void>((resolve) => (open = resolve)),
  };
  void (async () => {
    try {
      for await (const m of createClient(AssetService, transport).watchSales({ contractAddress: collection }, { headers: { "x-api-key": key }, signal: abort.signal })) {
        if (m.sale === undefined) {
          open();
          continue;
        }
        const now = performance.now();
        if (received.has(m.sale.hash)) sub.duplicates++;
        else received.set(m.sale.hash, now);
      }
    } catch {
      // Closed by the bench.
    }
  })();
  return sub;
}

/**
 * `n` subscribers spread over the collections, taking turns over `kinds`
 * (half SSE, half gRPC by default); resolves once all are open.
 */
async function subscribe(url: string, key: string, n: number, kinds: readonly ("sse" | "grpc")[] = ["sse", "grpc"]): Promise<Subscriber[]> {
  const subs: Subscriber[] = [];
  let transport: ReturnType<typeof createGrpcTransport> | undefined;
  let grpcStreams = 0;
  for (let i = 0; i < n; i++) {
    const collection = COLLECTIONS[i % COLLECTIONS.length]!;
    if (kinds[i % kinds.length] === "sse") subs.push(sseSubscriber(url, key, collection));
    else {
      if (grpcStreams++ % STREAMS_PER_CONNECTION === 0) transport = createGrpcTransport({ baseUrl: url });
      subs.push(grpcSubscriber(transport!, key, collection));
    }
    // Opened in waves: a thousand handshakes at once would measure the handshakes.
    if (i % 200 === 199) await Promise.all(subs.slice(-200).map((s) => s.opened));
  }
  await Promise.all(subs.map((s) => s.opened));
  return subs;
}

interface Sent {
  collection: string;
  sent: number;
  acked: number;
}

/** 20 writers, a batch of 5 sales every 100 ms each (1,000 sales/s), each batch into the next collection. */
async function ingestLoad(url: string, key: string, seconds: number): Promise<Map<string, Sent>> {
  const sent = new Map<string, Sent>();
  let batchNo = 0;
  let seed = 1000;
  await pacedWriters(20, 100, seconds, async () => {
    const collection = COLLECTIONS[batchNo++ % COLLECTIONS.length]!;
    const lines = [...saleLines(5, seed++, collection)];
    const t = performance.now();
    const r = await fetch(`${url}/v1/ingest/sales`, {
      method: "POST",
      headers: { "content-type": "application/x-ndjson", "x-api-key": key },
      body: lines.join("\n"),
    });
    const body = await r.text();
    const acked = performance.now();
    if (r.status !== 200) throw new Error(`ingest ${r.status}: ${body}`);
    for (const l of lines) sent.set((JSON.parse(l) as { hash: string }).hash, { collection, sent: t, acked });
  });
  return sent;
}

async function latency(server: Target, store: Store, readFrom: Target = server, subscribers = SUBSCRIBERS): Promise<string> {
  const subs = await subscribe(readFrom.url, store.read, subscribers);
  const sent = await ingestLoad(server.url, store.ingest, 2 * SECONDS);
  // Everything sent was acknowledged: give the last commits time to arrive.
  const bySubscriber = (s: Subscriber) => [...sent].filter(([, v]) => v.collection === s.collection);
  const deadline = performance.now() + 10_000;
  while (performance.now() < deadline && subs.some((s) => s.received.size < bySubscriber(s).length)) await new Promise((r) => setTimeout(r, 100));
  const fromAck: number[] = [];
  const fromSend: number[] = [];
  let lost = 0;
  let duplicates = 0;
  for (const s of subs) {
    duplicates += s.duplicates;
    for (const [hash, v] of bySubscriber(s)) {
      const at = s.received.get(hash);
      if (at === undefined) {
        lost++;
        continue;
      }
      fromAck.push(Math.max(0, at - v.acked));
      fromSend.push(at - v.sent);
    }
    s.close();
  }
  const ack = percentiles(fromAck);
  const send = percentiles(fromSend);
  return (
    `${subscribers} subscribers (${subscribers / 2} SSE, ${subscribers / 2} gRPC) over ${COLLECTIONS.length} collections${readFrom === server ? "" : " of a server on the standby"}, ` +
    `${sent.size} sales ingested in ${2 * SECONDS} s (1,000/s), ${fromAck.length} deliveries: ` +
    `commit (acknowledged) to receipt p50 ${ack.p50.toFixed(1)} ms, p99 ${ack.p99.toFixed(1)} ms; ` +
    `send to receipt p50 ${send.p50.toFixed(1)} ms, p99 ${send.p99.toFixed(1)} ms; lost ${lost}, duplicated ${duplicates}`
  );
}

/** The server's resident memory (Linux /proc) and V8 heap in use (its /metrics). */
async function memoryOf(server: Target): Promise<{ rss: number; heap: number }> {
  const status = readFileSync(`/proc/${server.pid}/status`, "utf8");
  const rss = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)![1]) * 1024;
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  const heap = Number(/^nodejs_heap_size_used_bytes (\S+)$/m.exec(metrics)![1]);
  return { rss, heap };
}

async function memory(server: Target, store: Store): Promise<string> {
  const settle = async () => {
    await new Promise((r) => setTimeout(r, 3000));
    return memoryOf(server);
  };
  const half = IDLE / 2;
  const before = await settle();
  const subs = await subscribe(server.url, store.read, half, ["sse"]);
  const withSse = await settle();
  subs.push(...(await subscribe(server.url, store.read, half, ["grpc"])));
  const withAll = await settle();
  const open = Number(/^marketdata_feed_streams_open (\d+)$/m.exec(await (await fetch(`${server.url}/metrics`)).text())?.[1]);
  for (const s of subs) s.close();
  const kb = (bytes: number, n: number) => (bytes / n / 1024).toFixed(1);
  const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);
  return (
    `idle subscribers: RSS ${mb(before.rss)} MB with none, ${mb(withSse.rss)} MB with ${half} SSE ` +
    `(${kb(withSse.rss - before.rss, half)} KB each; heap ${kb(withSse.heap - before.heap, half)} KB), ` +
    `${mb(withAll.rss)} MB with ${IDLE} (${half} gRPC more: ${kb(withAll.rss - withSse.rss, half)} KB each; heap ${kb(withAll.heap - withSse.heap, half)} KB); ` +
    `all ${IDLE}: ${kb(withAll.rss - before.rss, IDLE)} KB each (the server counted ${open} open)`
  );
}

async function reads(server: Target, store: Store): Promise<string> {
  const paths = [`/v1/asset/sales?contractAddress=${READ_COLLECTION}&limit=20`, `/v1/asset/listings?contractAddress=${READ_COLLECTION}&limit=20`];
  const none: number[] = [];
  const open: number[] = [];
  // Warm-up: the first answers of each path fill the response cache.
  await load(server.url, paths, store.read, { connections: 10, seconds: 1 });
  for (let r = 0; r < ROUNDS; r++) {
    none.push((await load(server.url, paths, store.read, { connections: 10, seconds: SECONDS })).rps);
    const subs = await subscribe(server.url, store.read, SUBSCRIBERS);
    open.push((await load(server.url, paths, store.read, { connections: 10, seconds: SECONDS })).rps);
    for (const s of subs) s.close();
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  const a = median(none);
  const b = median(open);
  return (
    `list endpoints (sales and listings, 10 connections): ${a.toFixed(0)} requests/s with no subscriber, ` +
    `${b.toFixed(0)} with ${SUBSCRIBERS} open (${(b / a).toFixed(2)} of it; rounds ${none.map((x) => x.toFixed(0)).join(", ")} | ${open.map((x) => x.toFixed(0)).join(", ")})`
  );
}

/** The latency part again, subscribers on a server of a hot standby, writes through the primary's. */
async function onStandby(primary: Target, store: Store): Promise<string> {
  if (await allowReplication(opts.pg)) log("primary: added a loopback replication line to pg_hba.conf and reloaded");
  const standby = await createStandby(opts.pg, Number(opts.standbyPort), join(dir, "standby"));
  try {
    const u = new URL(store.db);
    const server = await startCli(standby.url(u.pathname.slice(1)), 1, 64, ["--rate-limit", "0", "--anonymous-rate-limit", "0", "--streams-per-key", "0"]);
    try {
      return `standby: ${await latency(primary, store, server, 100)}`;
    } finally {
      await server.stop();
    }
  } finally {
    await standby.destroy();
  }
}

async function benchEngine(engine: string): Promise<void> {
  const store = await freshStore(engine);
  const limits = ["--rate-limit", "0", "--ingest-rate-limit", "0", "--anonymous-rate-limit", "0", "--streams-per-key", "0", "--max-streams", "0", "--no-derive-refresh"];
  const server = await startCli(store.db, 1, 64, limits);
  try {
    log(`\n## ${engine === "sqlite" ? "SQLite" : "PostgreSQL"}: live feeds through serve (one worker)\n`);
    if (PARTS.has("latency")) log(await latency(server, store));
    if (PARTS.has("memory")) log(await memory(server, store));
    if (PARTS.has("reads")) log(await reads(server, store));
    if (PARTS.has("standby") && engine === "postgres") log(await onStandby(server, store));
  } finally {
    await server.stop();
    await store.drop();
  }
}

try {
  for (const engine of opts.engines.split(",")) await benchEngine(engine);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
