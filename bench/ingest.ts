import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fromJson } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Command } from "commander";
import pg from "pg";
import { IngestService } from "../gen/marketdata/v1/ingest_service_pb.js";
import { type Sale, SaleSchema } from "../gen/marketdata/v1/resources_pb.js";
import { runCliSync } from "../src/cli/run-sync.js";
import { derivedLines, load, log, median, percentiles, pacedWriters, startCli, type Target, withEngineOptions } from "./harness.js";
import { saleLines, tokenLines } from "./sales-file.js";
import { type CpuProfile, reportProfile } from "./cpu-profile.js";

// npm run bench:ingest — the ingest API through `marketdata serve` at its
// defaults (one worker, logging at info, metrics on; the ingest limit off,
// one key drives the load): sales per second over REST NDJSON and over gRPC
// client streaming with 1 and 50 writers; acknowledgement latency at a
// steady 1,000 sales/s from 20 writers; and hot reads of one collection
// while 1,000 sales/s go into another, against the same reads with no
// writes (alternating rounds); and freshness: how long after a commit serve's
// background derive has the collection's appraisals up to date, at 1,000
// live sales/s. On SQLite and PostgreSQL (databases of its
// own, created and dropped), each run on a fresh copy of one base store, so
// that no run writes into what an earlier one left. Writers run in this
// process, sharing the machine's two cores with the server.

const opts = withEngineOptions(new Command("bench:ingest").description("ingest throughput, acknowledgement latency and reads under writes, on SQLite and PostgreSQL"))
  .option("--batch <n>", "sales per batch in the throughput runs", "1000")
  .option("--parts <list>", "throughput,latency,freshness,stage (stage: PostgreSQL's staging table per transaction against per connection)", "throughput,latency,freshness")
  .option("--baseline <dir>", "throughput also through a built checkout of another revision, alternating with this build, each on a base store it made (see bench:serve-ab --help)")
  .option("--narrow-prices", "every sale 5 to 15 ETH, so that no price is an outlier (bench/sales-file.ts): the wash rules evaluated, next to nothing flagged; by default a fifth of the sales are", false)
  .option("--profile", "serve runs under node --cpu-prof: after each run, where its CPU went, in µs per sale (bench/cpu-profile.ts)", false)
  .parse()
  .opts<{ engines: string; pg: string; seconds: string; rounds: string; batch: string; parts: string; baseline?: string; profile: boolean; narrowPrices: boolean }>();

/** This build, and with --baseline the other revision's: each serves a base store it filled itself (its own schema). */
type Build = "this" | "baseline";
const baselineBin = opts.baseline === undefined ? undefined : join(opts.baseline, "src/bin/marketdata.js");
const BUILDS: Build[] = baselineBin === undefined ? ["this"] : ["this", "baseline"];
const binOf = (build: Build) => (build === "baseline" ? baselineBin : undefined);
if (baselineBin !== undefined && !existsSync(join(opts.baseline!, "dist/src/cli/main.js"))) {
  process.stderr.write(`bench:ingest: ${opts.baseline} has no built command (dist/): build it first\n`);
  process.exit(2);
}

const PARTS = new Set(opts.parts.split(","));

const SECONDS = Number(opts.seconds);
const ROUNDS = Number(opts.rounds);
const BATCH = Number(opts.batch);
const WRITE_COLLECTION = `0x${"a1".repeat(20)}`;
const READ_COLLECTION = `0x${"b2".repeat(20)}`;
let seed = 1;

/**
 * Batches of fresh sales (distinct hashes), enough for `sales` in all, as a
 * live feed sends them: in time order, within the last hour.
 */
function batches(sales: number, size: number, address = WRITE_COLLECTION): string[][] {
  const now = Math.floor(Date.now() / 1000);
  const lines = [...saleLines(sales, seed++, address, { start: now - 3600, span: 3600, narrow: opts.narrowPrices })];
  const out: string[][] = [];
  for (let i = 0; i < lines.length; i += size) out.push(lines.slice(i, i + size));
  return out;
}

/** Sales sent so far (a profile's unit of work). */
let salesSent = 0;

async function postBatch(url: string, key: string, lines: string[]): Promise<{ ok: boolean; sales: number }> {
  const r = await fetch(`${url}/v1/ingest/sales`, {
    method: "POST",
    headers: { "content-type": "application/x-ndjson", "x-api-key": key },
    body: lines.join("\n"),
  });
  const body = (await r.json()) as { accepted?: number; duplicates?: number };
  salesSent += lines.length;
  return { ok: r.status === 200, sales: (body.accepted ?? 0) + (body.duplicates ?? 0) };
}

/** Sales/s of `writers` REST writers posting batches back to back for SECONDS. */
async function restThroughput(url: string, key: string, writers: number): Promise<number> {
  // Enough for 100,000 sales/s; generated before the clock starts.
  const pool = batches(100_000 * SECONDS, BATCH);
  let next = 0;
  let done = 0;
  let failed = 0;
  const end = performance.now() + SECONDS * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: writers }, async () => {
      while (performance.now() < end && next < pool.length) {
        const r = await postBatch(url, key, pool[next++]!);
        if (r.ok) done += r.sales;
        else failed++;
      }
    }),
  );
  if (failed > 0) log(`  (${failed} batches failed)`);
  return done / ((performance.now() - started) / 1000);
}

/** Sales/s of `streams` gRPC StreamSales calls sending batches back to back for SECONDS. */
async function grpcThroughput(url: string, key: string, streams: number): Promise<number> {
  const pool = batches(100_000 * SECONDS, BATCH).map((b) => b.map((line) => fromJson(SaleSchema, JSON.parse(line) as never)));
  let next = 0;
  let done = 0;
  const end = performance.now() + SECONDS * 1000;
  const started = performance.now();
  // 50 streams of 1,000-sale messages queue more than Node's default 10 MB
  // per HTTP/2 session while the server applies flow control: this client
  // (one session for all the streams) may hold more.
  const client = createClient(IngestService, createGrpcTransport({ baseUrl: url, nodeOptions: { maxSessionMemory: 256 } }));
  await Promise.all(
    Array.from({ length: streams }, async () => {
      async function* messages(): AsyncGenerator<{ records: Sale[] }> {
        while (performance.now() < end && next < pool.length) {
          const records = pool[next++]!;
          salesSent += records.length;
          yield { records };
        }
      }
      const r = await client.streamSales(messages(), { headers: { "x-api-key": key } });
      done += r.accepted + r.duplicates;
    }),
  );
  return done / ((performance.now() - started) / 1000);
}

/** Acknowledgement latency of 20 writers at 50 sales/s each (a batch of 5 every 100 ms). */
async function ackLatency(url: string, key: string): Promise<{ p50: number; p99: number; n: number }> {
  const pool = batches(1000 * SECONDS + 1000, 5);
  let next = 0;
  const times: number[] = [];
  await pacedWriters(20, 100, SECONDS, async () => {
    const t = performance.now();
    const r = await postBatch(url, key, pool[next++ % pool.length]!);
    if (r.ok) times.push(performance.now() - t);
  });
  return { ...percentiles(times), n: times.length };
}

/** Hot reads of READ_COLLECTION with and without 1,000 sales/s going into WRITE_COLLECTION: req/s, alternating rounds. */
async function readsUnderWrites(server: Target, key: string): Promise<{ quiet: number; writing: number }> {
  const path = `/v1/asset/sales?contractAddress=${READ_COLLECTION}&limit=20`;
  const quiet: number[] = [];
  const writing: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    quiet.push((await load(server.url, [path], key, { connections: 50, seconds: SECONDS })).rps);
    const pool = batches(1000 * SECONDS + 1000, 100);
    let stop = false;
    const writer = (async () => {
      for (let i = 0, due = performance.now(); !stop; i++, due += 100) {
        const wait = due - performance.now();
        if (wait > 0) await new Promise((res) => setTimeout(res, wait));
        await postBatch(server.url, key, pool[i % pool.length]!);
      }
    })();
    writing.push((await load(server.url, [path], key, { connections: 50, seconds: SECONDS })).rps);
    stop = true;
    await writer;
  }
  return { quiet: median(quiet), writing: median(writing) };
}

/**
 * Freshness: 10 writers send live sales into WRITE_COLLECTION (10,000
 * tokens, BASE_SALES sales), a batch of 10 stamped with the current second
 * every 100 ms each (1,000 sales/s, 100 commits/s), while serve derives in
 * the background; for each commit, the time from its acknowledgement to
 * the commit of the appraisals that include it, as serve's "derived" log
 * lines report it. The collection's first refresh (a full fit) is made
 * before the clock starts, as a running server's would be.
 */
async function freshness(server: Target, key: string): Promise<string> {
  const now = () => Math.floor(Date.now() / 1000);
  const pool = [...saleLines(20_000, seed++, WRITE_COLLECTION)].map((l) => JSON.parse(l) as Record<string, unknown>);
  let next = 0;
  const live = (n: number) => pool.slice(next, (next += n)).map((sale) => JSON.stringify({ ...sale, timestamp: now() }));
  const derivedSince = (from: number) => derivedLines(server.output().slice(from));
  const until = async (done: () => boolean, what: string) => {
    for (const deadline = performance.now() + 120_000; !done(); await new Promise((r) => setTimeout(r, 100))) {
      if (performance.now() > deadline) throw new Error(`freshness: ${what} did not happen within 120 s`);
    }
  };
  const warm = (await postBatch(server.url, key, live(10))).ok;
  if (!warm) throw new Error("freshness: the first batch failed");
  await until(() => derivedSince(0).length > 0, "the first refresh");
  const from = server.output().length;
  const acks: number[] = [];
  const end = performance.now() + 2 * SECONDS * 1000;
  await Promise.all(
    Array.from({ length: 10 }, async (_, w) => {
      await new Promise((r) => setTimeout(r, w * 10));
      for (let due = performance.now(); due < end; due += 100) {
        const wait = due - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        const t = performance.now();
        if ((await postBatch(server.url, key, live(10))).ok) acks.push(performance.now() - t);
      }
    }),
  );
  await until(() => derivedSince(from).reduce((n, l) => n + l.waitedMs.length, 0) >= acks.length, "the refresh of every commit").catch((err: Error) => {
    const lines = derivedSince(from);
    throw new Error(`${err.message} (${acks.length} commits; refreshes so far: ${JSON.stringify(lines.map(({ mode, ms, fed, waitedMs }) => ({ mode, ms, fed, n: waitedMs.length })))}; ${server.output().split("\n").filter((l) => /"level":(40|50)/.test(l)).slice(-3).join("\n")})`);
  });
  const lines = derivedSince(from);
  const waited = percentiles(lines.flatMap((l) => l.waitedMs));
  const ack = percentiles(acks);
  const modes = lines.reduce((m, l) => m.set(l.mode, (m.get(l.mode) ?? 0) + 1), new Map<string, number>());
  return (
    `freshness, ${acks.length} commits of 10 live sales (1,000 sales/s from 10 writers) into 10,000 tokens / ${BASE_SALES} sales: ` +
    `commit to derived appraisals p50 ${waited.p50.toFixed(0)} ms, p99 ${waited.p99.toFixed(0)} ms; ` +
    `${lines.length} refreshes (${[...modes].map(([m, n]) => `${n} ${m}`).join(", ")}), median ${median(lines.map((l) => l.ms)).toFixed(0)} ms; ` +
    `acknowledgements meanwhile p50 ${ack.p50.toFixed(1)} ms, p99 ${ack.p99.toFixed(1)} ms`
  );
}

/** A store to measure on, and how to get a fresh copy of it (the base state) for each run. */
interface Engine {
  label: string;
  /** A fresh copy of the build's base store; its address and how to drop it. */
  fresh(build: Build): Promise<{ db: string; drop(): Promise<void> }>;
  /** The ingest key of the build's base store. */
  key(build: Build): string;
}

/** Sales already in the written collection before each run: the issue's "10,000 tokens and 100,000 sales" scale. */
const BASE_SALES = 100_000;

/**
 * The base store: this build's schema, an ingest key, 10,000 tokens, ETH's
 * USD price every hour of the sales' 30 days (so that every sale written
 * has a price point in force, as a live market's has: docs/money.md), and
 * BASE_SALES in the written collection and 2,000 sales in the read one.
 */
async function fillBase(db: string, bin?: string): Promise<string> {
  runCliSync(["migrate", "--db", db], undefined, bin);
  const key = runCliSync(["keys", "create", "--db", db, "--name", "bench:ingest", "--scope", "ingest"], undefined, bin).stdout.trim().split("\n").pop()!;
  const tokens = join(dir, "tokens.ndjson");
  writeFileSync(tokens, `${[...tokenLines(10_000, WRITE_COLLECTION)].join("\n")}\n`);
  runCliSync(["import", "tokens", tokens, "--db", db], 600_000, bin);
  const now = Math.floor(Date.now() / 1000);
  // Before the sales they price, as a live feed sends them.
  const prices = join(dir, "prices.ndjson");
  const firstHour = Math.floor((now - 31 * 86400) / 3600) * 3600;
  writeFileSync(prices, `${Array.from({ length: 31 * 24 + 1 }, (_, i) => JSON.stringify({ currency: "ETH", minute: firstHour + i * 3600, usd: (2000 + (i % 97) * 7.31).toFixed(2) })).join("\n")}\n`);
  try {
    runCliSync(["import", "prices", prices, "--db", db], 600_000, bin);
  } catch (e) {
    // A baseline from before price points (the target compares with it): its store has no points to keep.
    if (!/got "prices"/.test(String(e))) throw e;
    log("bench:ingest: the baseline build has no price points; its base store has none");
  }
  const file = join(dir, "base.ndjson");
  writeFileSync(file, `${[...saleLines(BASE_SALES, 99, WRITE_COLLECTION, { start: now - 30 * 86400, span: 30 * 86400 - 7200, narrow: opts.narrowPrices }),
    ...saleLines(2000, 98, READ_COLLECTION, { start: now - 86400, span: 80000, narrow: opts.narrowPrices })].join("\n")}\n`);
  runCliSync(["import", "sales", file, "--db", db], 600_000, bin);
  return key;
}

/**
 * One measurement on a fresh copy of the base store, through `serve` at its
 * defaults; the background derive only where `derive` says (the freshness
 * run): elsewhere the figures are of the writes alone.
 */
async function onFreshStore<T>(engine: Engine, run: (server: Target) => Promise<T>, derive = false, build: Build = "this"): Promise<T> {
  const store = await engine.fresh(build);
  // One client address and one key drive all the load: every limit off (50
  // first requests at once, before the key's first lookup returns on
  // PostgreSQL, would otherwise meet the per-address limit).
  const limits = ["--rate-limit", "0", "--ingest-rate-limit", "0", "--anonymous-rate-limit", "0"];
  const profiles = opts.profile ? mkdtempSync(join(tmpdir(), "bench-ingest-profile-")) : undefined;
  const nodeArgs = profiles === undefined ? undefined : ["--cpu-prof", `--cpu-prof-dir=${profiles}`];
  const server = await startCli(store.db, 1, 64, [...limits, ...(derive ? [] : ["--no-derive-refresh"])], binOf(build), nodeArgs);
  const sentBefore = salesSent;
  try {
    return await run(server);
  } finally {
    await server.stop();
    await store.drop();
    if (profiles !== undefined) {
      // One file per thread: the main thread's (HTTP, parsing) and the SQLite writer's (store/sqlite/ingest-worker.ts).
      const files = readdirSync(profiles).filter((f) => f.endsWith(".cpuprofile"));
      if (files.length === 0) log(`\n${build}'s serve wrote no profile`);
      for (const file of files) {
        const thread = Number(/\.(\d+)\.\d+\.cpuprofile$/.exec(file)?.[1] ?? 0);
        log(`\nprofile of ${build}'s serve, ${thread === 0 ? "main thread" : `worker thread ${thread}`} (${salesSent - sentBefore} sales sent):`);
        reportProfile(JSON.parse(readFileSync(join(profiles, file), "utf8")) as CpuProfile, salesSent - sentBefore, "sale", 25);
      }
      rmSync(profiles, { recursive: true, force: true });
    }
  }
}

async function benchEngine(engine: Engine): Promise<void> {
  const key = engine.key("this");
  log(`\n## ${engine.label}: ingest through serve, each run on a fresh copy of a store holding ${BASE_SALES} sales (${ROUNDS} rounds of ${SECONDS} s, medians)\n`);
  if (PARTS.has("throughput")) await throughputs(engine);
  if (PARTS.has("latency")) {
    await onFreshStore(engine, async (server) => {
      const lat: { p50: number; p99: number; n: number }[] = [];
      for (let r = 0; r < ROUNDS; r++) lat.push(await ackLatency(server.url, key));
      log(
        `\nacknowledgement latency, 1,000 sales/s from 20 writers (batches of 5, REST): p50 ${median(lat.map((l) => l.p50)).toFixed(1)} ms, p99 ${median(lat.map((l) => l.p99)).toFixed(1)} ms`,
      );
      const reads = await readsUnderWrites(server, key);
      log(
        `hot reads of another collection: ${Math.round(reads.quiet)} req/s with no writes, ${Math.round(reads.writing)} req/s while 1,000 sales/s are written: ${(reads.writing / reads.quiet).toFixed(2)}`,
      );
    });
  }
  if (PARTS.has("freshness")) {
    for (let r = 0; r < ROUNDS; r++) log(`\n${await onFreshStore(engine, (server) => freshness(server, key), true)}`);
  }
}

/**
 * What a small write transaction (five staged rows, as a batch of the
 * latency run) spends on its staging table: made and dropped in each
 * transaction (ON COMMIT DROP, as the CLI's import still does) against kept
 * by the connection and emptied at each commit (ON COMMIT DELETE ROWS, the
 * server's writer: store/postgres/copy.ts openStage). Alternating rounds of
 * 400 transactions on one connection; ms per transaction.
 */
async function stagingTables(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const columns = "line bigint, hash text, seller text, buyer text, asset_id text, timestamp bigint, block bigint, price numeric, amount numeric, marketplace text";
  const rows = "SELECT g, 'h', 's', 'b', '1', 1, 2, 3, 4, 'OPENSEA' FROM generate_series(1, 5) g";
  const ms: Record<string, number[]> = { "made and dropped": [], kept: [] };
  try {
    await client.query(`CREATE TEMP TABLE kept_stage (${columns}) ON COMMIT DELETE ROWS`);
    for (let r = 0; r < Math.max(ROUNDS, 3) * 2; r++) {
      for (const mode of Object.keys(ms)) {
        const started = performance.now();
        for (let i = 0; i < 400; i++) {
          await client.query("BEGIN");
          if (mode === "kept") {
            await client.query(`INSERT INTO kept_stage ${rows}`);
          } else {
            await client.query(`CREATE TEMP TABLE stage (${columns}) ON COMMIT DROP`);
            await client.query(`INSERT INTO stage ${rows}`);
          }
          await client.query("COMMIT");
        }
        ms[mode]!.push((performance.now() - started) / 400);
      }
    }
  } finally {
    await client.end();
  }
  log(`\nPostgreSQL staging table of a 5-row write transaction (${ms.kept!.length} alternating rounds of 400 transactions, median ms per transaction):`);
  for (const [mode, xs] of Object.entries(ms)) log(`- ${mode}: ${median(xs).toFixed(2)} ms (${xs.map((x) => x.toFixed(2)).join(", ")})`);
}

async function throughputs(engine: Engine): Promise<void> {
  const vs = baselineBin === undefined ? "" : " baseline | this ÷ baseline |";
  log(`| load | sales/s |${vs}`);
  log(`|---|---|${vs === "" ? "" : "---|---|"}`);
  for (const writers of [1, 50]) {
    const rates = (): Record<Build, number[]> => ({ this: [], baseline: [] });
    const rest = rates();
    const grpc = rates();
    for (let r = 0; r < ROUNDS; r++) {
      // The baseline first in odd rounds, second in even ones.
      for (const build of r % 2 === 1 ? [...BUILDS].reverse() : BUILDS) {
        const key = engine.key(build);
        rest[build].push(await onFreshStore(engine, (s) => restThroughput(s.url, key, writers), false, build));
        grpc[build].push(await onFreshStore(engine, (s) => grpcThroughput(s.url, key, writers), false, build));
      }
    }
    const row = (label: string, xs: Record<Build, number[]>) =>
      log(`| ${label} | ${Math.round(median(xs.this))} |${vs === "" ? "" : ` ${Math.round(median(xs.baseline))} | ${(median(xs.this) / median(xs.baseline)).toFixed(2)} |`}`);
    row(`REST NDJSON, ${writers} writer${writers > 1 ? "s" : ""}, batches of ${BATCH}`, rest);
    row(`gRPC StreamSales, ${writers} stream${writers > 1 ? "s" : ""}, messages of ${BATCH}`, grpc);
  }
}

const dir = mkdtempSync(join(tmpdir(), "marketdata-bench-ingest-"));
try {
  for (const name of opts.engines.split(",")) {
    if (name === "sqlite") {
      const base = (build: Build) => join(dir, `base-${build}.sqlite`);
      const keys = {} as Record<Build, string>;
      for (const build of BUILDS) keys[build] = await fillBase(base(build), binOf(build));
      let n = 0;
      await benchEngine(
        {
          label: "SQLite",
          key: (build) => keys[build],
          fresh: async (build) => {
            const db = join(dir, `run-${++n}.sqlite`);
            // The base is closed (no WAL left): the file and its key file are the whole store.
            copyFileSync(base(build), db);
            copyFileSync(`${base(build)}-keys`, `${db}-keys`);
            return { db, drop: async () => void ["", "-wal", "-shm", "-keys", "-keys-wal", "-keys-shm"].forEach((f) => rmSync(`${db}${f}`, { force: true })) };
          },
        },
      );
    } else if (name === "postgres") {
      if (PARTS.has("stage")) await stagingTables(opts.pg);
      const admin = new pg.Client({ connectionString: opts.pg });
      await admin.connect();
      const baseName = `marketdata_bench_ingest_${process.pid}`;
      const urlOf = (db: string) => {
        const u = new URL(opts.pg);
        u.pathname = `/${db}`;
        return u.toString();
      };
      const baseOf = (build: Build) => `${baseName}_${build}`;
      try {
        const keys = {} as Record<Build, string>;
        for (const build of BUILDS) {
          await admin.query(`CREATE DATABASE ${baseOf(build)}`);
          keys[build] = await fillBase(urlOf(baseOf(build)), binOf(build));
        }
        let n = 0;
        await benchEngine(
          {
            label: "PostgreSQL",
            key: (build) => keys[build],
            fresh: async (build) => {
              const name = `${baseName}_${++n}`;
              // A copy of the build's base database (no connection to it is open between runs).
              await admin.query(`CREATE DATABASE ${name} TEMPLATE ${baseOf(build)}`);
              return { db: urlOf(name), drop: async () => void (await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)) };
            },
          },
        );
      } finally {
        for (const build of BUILDS) await admin.query(`DROP DATABASE IF EXISTS ${baseOf(build)} WITH (FORCE)`);
        await admin.end();
      }
    } else {
      throw new Error(`--engines: sqlite or postgres, got ${name}`);
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
