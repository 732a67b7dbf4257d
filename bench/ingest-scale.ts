import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import pg from "pg";
import { runCliSync, startServe } from "../src/cli/run-sync.js";
import { diskUsage } from "../src/cli/stats.js";
import { Random } from "../src/demo/random.js";
import { log, median, withEngineOptions } from "./harness.js";
import { addressOf, type Batch, mixedBatches } from "./mixed-records.js";
import { MARKETPLACES, saleLines } from "./sales-file.js";

// npm run bench:ingest-scale — the write path at a market's size, driven as
// an indexer drives `serve` (its defaults: a worker per core, the
// background derive on; only the rate limits off, since one key sends
// everything): --writers concurrent writers post batches of --batch sales
// to POST /v1/ingest/sales, on a new empty store of each engine, in three
// loads:
// - grow: one collection growing to --grow sales spread over five weeks;
// - hour: --hour sales of one collection inside the last hour;
// - new: one sale each into --new collections never seen before.
// Each load's rate is given per window of --window acknowledged sales; the
// targets compare its last window with its first (grow, hour) and the new
// collections' rate with one collection's (the grow load's first window).

const opts = withEngineOptions(new Command("bench:ingest-scale").description("ingest rate as a collection grows, inside one hour, and into new collections, on SQLite and PostgreSQL"))
  .option("--loads <list>", "grow,hour,new,mixed", "grow,hour,new,mixed")
  .option("--grow <n>", "sales of the growing collection", "1000000")
  .option("--hour <n>", "sales inside one hour", "100000")
  .option("--new <n>", "new collections, one sale each", "100000")
  .option("--mixed <n>", "records of the mixed load (sales, listings, transfers), after which the store's disk per record is given", "300000")
  .option("--window <n>", "sales per measured window (the hour and new loads: a tenth of their size at most)", "50000")
  .option("--writers <n>", "concurrent writers", "4")
  .option("--batch <n>", "sales per batch", "1000")
  .option("--serve-flags <flags>", "more flags for serve, space-separated (e.g. --no-derive-refresh, --workers 1)", "")
  .parse()
  .opts<{ engines: string; pg: string; loads: string; grow: string; hour: string; new: string; mixed: string; window: string; writers: string; batch: string; serveFlags: string }>();

const WRITERS = Number(opts.writers);
const BATCH = Number(opts.batch);
const LOADS = opts.loads.split(",");

interface LoadResult {
  /** Sales per second of each window, in order. */
  windows: number[];
  sales: number;
  seconds: number;
  errors: string[];
  /** The mixed load's disk report (lines). */
  disk?: string[];
}

/**
 * Posts every batch `next` gives, from WRITERS writers at once, and times
 * each window of `window` acknowledged sales. Acknowledgements come in
 * bursts (group commit answers the batches of one commit together), so a
 * window's ends are placed between the bursts around them in proportion to
 * the sales (a window ending inside a burst would otherwise be as long as
 * the time to the next burst, or nothing).
 */
async function drive(url: string, key: string, next: () => Batch | undefined, window: number): Promise<LoadResult> {
  const errors: string[] = [];
  let acknowledged = 0;
  const started = performance.now();
  /** [ms since start, sales acknowledged by then], one point per burst. */
  const points: [number, number][] = [[0, 0]];
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      for (let batch = next(); batch !== undefined; batch = next()) {
        const { kind, lines } = batch;
        const r = await fetch(`${url}/v1/ingest/${kind}`, {
          method: "POST",
          headers: { "content-type": "application/x-ndjson", "x-api-key": key },
          body: lines.join("\n"),
        });
        const text = await r.text();
        if (r.status !== 200) {
          errors.push(`${r.status} ${text.slice(0, 200)}`);
          continue;
        }
        acknowledged += lines.length;
        const now = performance.now() - started;
        const last = points.at(-1)!;
        if (now - last[0] < BURST_MS) last[1] = acknowledged;
        else points.push([now, acknowledged]);
      }
    }),
  );
  const at = (sales: number): number => {
    const i = points.findIndex(([, c]) => c >= sales);
    const [t1, c1] = points[i]!;
    const [t0, c0] = points[i - 1] ?? [0, 0];
    return c1 === c0 ? t1 : t0 + ((sales - c0) / (c1 - c0)) * (t1 - t0);
  };
  const windows: number[] = [];
  for (let end = window; end <= acknowledged; end += window) windows.push(window / ((at(end) - at(end - window)) / 1000));
  return { windows, sales: acknowledged, seconds: (performance.now() - started) / 1000, errors };
}

/** Acknowledgements this close together are one burst (one group commit's). */
const BURST_MS = 20;

/** Batches of BATCH lines from `lines`, handed out in order. */
function batchesOf(lines: Iterator<string>, kind = "sales"): () => Batch | undefined {
  return () => {
    const out: string[] = [];
    while (out.length < BATCH) {
      const r = lines.next();
      if (r.done === true) break;
      out.push(r.value);
    }
    return out.length > 0 ? { kind, lines: out } : undefined;
  };
}

/** One sale into each of `n` new collections: cheap to make (the grow load's generator draws 2,000 wallets per call). */
function* newCollectionLines(n: number): Generator<string> {
  const rnd = new Random(77);
  const now = Math.floor(Date.now() / 1000);
  for (let c = 0; c < n; c++) {
    const price = BigInt(Math.round((0.01 + rnd.next() * 5) * 1e6)) * 10n ** 12n;
    yield JSON.stringify({
      hash: `0x${rnd.hex(64)}`, from: `0x${rnd.hex(40)}`, to: `0x${rnd.hex(40)}`, contractAddress: addressOf(c), assetId: String(rnd.int(1, 9999)),
      timestamp: now - 3600 + Math.floor((c / n) * 3000), block: 19_000_000 + c, price: price.toString(), amountReceived: ((price * 975n) / 1000n).toString(),
      currency: "ETH", marketplace: rnd.pick(MARKETPLACES),
    });
  }
}

const fmt = (x: number) => Math.round(x).toLocaleString("en-US");

async function runLoad(db: string, load: string): Promise<LoadResult> {
  runCliSync(["migrate", "--db", db]);
  const key = runCliSync(["keys", "create", "--db", db, "--name", "bench:ingest-scale", "--scope", "ingest"]).stdout.trim().split("\n").pop()!;
  const serve = await startServe(
    ["--db", db, "--port", "0", "--workers", String(availableParallelism()), "--rate-limit", "0", "--ingest-rate-limit", "0", "--anonymous-rate-limit", "0",
      ...opts.serveFlags.split(" ").filter((f) => f !== "")],
    { timeoutMs: 60_000 },
  );
  let result: LoadResult;
  try {
    result = await driveLoad(serve.url, key, load);
  } finally {
    const lines = serve.output().split("\n");
    await serve.stop();
    const bad = lines.filter((l) => /"level":(4|5)\d/.test(l));
    if (bad.length > 0) log(`  serve logged ${bad.length} warnings or errors; the first: ${bad[0]!.slice(0, 300)}`);
  }
  return load === "mixed" ? { ...result, disk: await diskReport(db, result.sales) } : result;
}

async function driveLoad(url: string, key: string, load: string): Promise<LoadResult> {
  const now = Math.floor(Date.now() / 1000);
  const window = Number(opts.window);
  if (load === "grow") {
    const n = Number(opts.grow);
    return await drive(url, key, batchesOf(saleLines(n, 11, addressOf(-1), { start: now - 35 * 86400, span: 35 * 86400 - 600 })), Math.min(window, n / 10));
  }
  if (load === "hour") {
    const n = Number(opts.hour);
    return await drive(url, key, batchesOf(saleLines(n, 12, addressOf(-2), { start: now - 3600, span: 3500 })), Math.min(window, n / 10));
  }
  if (load === "mixed") {
    const n = Number(opts.mixed);
    const start = now - 7 * 86400;
    const step = (7 * 86400 - 600) / n;
    return await drive(url, key, mixedBatches(n, BATCH, (i) => Math.floor(start + i * step)), Math.min(window, n / 10));
  }
  const n = Number(opts.new);
  return await drive(url, key, batchesOf(newCollectionLines(n)), Math.min(window, n / 10));
}

/** The store's bytes per record after the mixed load, by table (its indexes with it), the largest first. */
async function diskReport(db: string, records: number): Promise<string[]> {
  const out: string[] = [];
  const log = (line: string) => out.push(line);
  const usage = await diskUsage(db);
  const tables = new Map<string, { bytes: number; indexes: number }>();
  for (const p of usage.parts) {
    const t = tables.get(p.table) ?? { bytes: 0, indexes: 0 };
    if (p.name === p.table) t.bytes += p.bytes;
    else t.indexes += p.bytes;
    tables.set(p.table, t);
  }
  const perRecord = (bytes: number) => (bytes / records).toFixed(0);
  log(`\n  disk after ${fmt(records)} mixed records: ${(usage.total / 1e6).toFixed(1)} MB, **${perRecord(usage.total)} bytes per record**`);
  log("\n  | table | bytes per record | of which indexes |\n  |---|---|---|");
  for (const [name, t] of [...tables].sort((a, b) => b[1].bytes + b[1].indexes - (a[1].bytes + a[1].indexes)).slice(0, 12)) {
    log(`  | ${name} | ${perRecord(t.bytes + t.indexes)} | ${perRecord(t.indexes)} |`);
  }
  const largest = usage.parts.filter((p) => p.name !== p.table).slice(0, 8).map((p) => `${p.name} ${perRecord(p.bytes)}`);
  log(`\n  largest indexes (bytes per record): ${largest.join(", ")}`);
  return out;
}

async function onEngine(name: string, each: (load: string) => Promise<LoadResult>): Promise<void> {
  log(`\n## ${name}: ${WRITERS} writers, batches of ${BATCH}, serve's defaults (${availableParallelism()} workers)\n`);
  log("| load | sales | s | sales/s | first window | median window | last window | last / first | errors |");
  log("|---|---|---|---|---|---|---|---|---|");
  let oneCollection: number | undefined;
  for (const load of LOADS) {
    const r = await each(load);
    const first = r.windows[0] ?? Number.NaN;
    const last = r.windows.at(-1) ?? Number.NaN;
    if (load === "grow") oneCollection = first;
    const vs = load === "new" && oneCollection !== undefined ? ` (${(r.sales / r.seconds / oneCollection).toFixed(2)} of one collection's first window)` : "";
    log(`| ${load} | ${fmt(r.sales)} | ${r.seconds.toFixed(1)} | ${fmt(r.sales / r.seconds)}${vs} | ${fmt(first)} | ${fmt(median(r.windows))} | ${fmt(last)} | **${(last / first).toFixed(2)}** | ${r.errors.length} |`);
    if (r.errors.length > 0) log(`  first error: ${r.errors[0]}`);
    for (const line of r.disk ?? []) log(line);
  }
}

const dir = mkdtempSync(join(tmpdir(), "marketdata-bench-ingest-scale-"));
try {
  for (const engine of opts.engines.split(",")) {
    if (engine === "sqlite") {
      let n = 0;
      await onEngine("SQLite", async (load) => runLoad(join(dir, `${load}-${++n}.sqlite`), load));
    } else if (engine === "postgres") {
      const admin = new pg.Client({ connectionString: opts.pg });
      await admin.connect();
      try {
        await onEngine("PostgreSQL", async (load) => {
          const name = `marketdata_bench_scale_${process.pid}_${load}`;
          await admin.query(`CREATE DATABASE ${name}`);
          const u = new URL(opts.pg);
          u.pathname = `/${name}`;
          try {
            return await runLoad(u.toString(), load);
          } finally {
            await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
          }
        });
      } finally {
        await admin.end();
      }
    } else {
      throw new Error(`--engines: sqlite or postgres, got ${engine}`);
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
