import { createReadStream, existsSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { Command } from "commander";
import { Random } from "../src/demo/random.js";
import { importLines } from "../src/ingest/importer.js";
import { SqliteRecordImport } from "../src/store/sqlite/importer.js";
import { withStoreKeys } from "../src/store/sqlite/key-admin.js";
import { openReadOnly, openWritable, type Db } from "../src/store/sqlite/database.js";
import { sqliteRepositories } from "../src/store/sqlite/read-repositories.js";
import { WriteStore } from "../src/store/sqlite/record-writes.js";
import { compare, ensureStore, log, median, percentiles, ROOT, roundTrips, startTarget, loadOf, withLoadOptions } from "./harness.js";
import { randomWindow, WINDOW_SHAPES } from "./windows.js";
import { writeSales } from "./sales-file.js";

// npm run bench:stats — collection stats from write-time aggregates (see the
// bench/results/history.md, "Collection stats"): latency of every window shape against a
// GROUP BY over the raw rows in the same run, throughput under load with
// rotating windows next to /v1/collection/scores, and import speed with and
// without keeping the aggregates; `--parts usd`: stats in US dollars
// (currency=usd: a collection's whole days and hours from the series'
// dollars, its edges' sales, and an asset's sales, with a point's seek each:
// docs/money.md) beside the default in wei, per window shape.

const program = withLoadOptions(
  new Command("bench:stats")
    .description("benchmark collection stats: latency per window, throughput under load, import cost of the aggregates")
    .option("--sales <n>", "sales in the generated collection", "1000000")
    .option("--stores <list>", "large (the large demo store's largest collection), generated", "large,generated")
    .option("--parts <list>", "latency,load,import,usd (usd: stats in dollars, from the series' dollars and the edges' sales, beside the default from the aggregates)", "latency,load,import")
    .option("--samples <n>", "stats calls per window shape", "1000")
    .option("--import-rows <list>", "sales per import round, one comparison per size (spread over two years like the generated collection)", "1000000,200000"),
).parse();
const opts = program.opts<{
  sales: string;
  stores: string;
  parts: string;
  samples: string;
  importRows: string;
  rounds: string;
  seconds: string;
  connections: string;
}>();
const PARTS = new Set(opts.parts.split(","));
const LOAD = loadOf(opts);
const SAMPLES = Number(opts.samples);

const GENERATED = "0x00000000000000000000000000000000000b3c71";

interface Subject {
  name: string;
  db: string;
  key: string;
  address: string;
  /** The collection's asset with the most sales. */
  hotAsset: string;
  hotAssetSales: number;
  sales: number;
  first: number;
  last: number;
}

const results: Record<string, unknown> = {};

async function importFile(db: Db, file: string, maintainStats: boolean): Promise<number> {
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
  const started = performance.now();
  const stats = await importLines(new SqliteRecordImport(db), lines, { kind: "sales", skipInvalid: false, maintainStats });
  return stats.inserted / ((performance.now() - started) / 1000);
}

async function generatedStore(n: number): Promise<string> {
  const db = `${ROOT}data/bench-stats-${n}.sqlite`;
  if (existsSync(db)) return db;
  log(`building a collection of ${n} sales at ${db} (once)...`);
  const dir = mkdtempSync(join(tmpdir(), "marketdata-bench-stats-"));
  try {
    const file = join(dir, "sales.ndjson");
    await writeSales(file, n, 11, GENERATED);
    const w = openWritable(`${db}.tmp`);
    const rate = await importFile(w, file, true);
    new WriteStore(w).upsertScore({ contractAddress: GENERATED, name: "Generated", hype: 50, gains: 1, community: 60, total: 40 });
    w.close();
    renameSync(`${db}.tmp`, db);
    rmSync(`${db}.tmp-wal`, { force: true });
    rmSync(`${db}.tmp-shm`, { force: true });
    rmSync(`${db}.tmp-keys`, { force: true });
    log(`  imported at ${rate.toFixed(0)} rows/s`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return db;
}

function subject(name: string, db: string, address?: string): Subject {
  const w = openWritable(db);
  const key = withStoreKeys(db, (admin) => admin.create("bench:stats").key);
  w.close();
  const r = openReadOnly(db);
  try {
    const c = (
      address === undefined
        ? r.prepare("SELECT collection_id AS id, count(*) AS n FROM sales GROUP BY collection_id ORDER BY n DESC LIMIT 1").get()
        : r.prepare("SELECT id FROM collections WHERE address = ?").get(address)
    ) as { id: number };
    const info = r
      .prepare("SELECT (SELECT address FROM collections WHERE id = ?) AS address, count(*) AS n, min(timestamp) AS first, max(timestamp) AS last FROM sales WHERE collection_id = ?")
      .get(c.id, c.id) as { address: string; n: number; first: number; last: number };
    const hot = r
      .prepare("SELECT asset_key, count(*) AS n FROM sales WHERE collection_id = ? GROUP BY asset_key ORDER BY n DESC LIMIT 1")
      .get(c.id) as { asset_key: string; n: number };
    return {
      name,
      db,
      key,
      address: info.address,
      hotAsset: hot.asset_key.slice(2),
      hotAssetSales: hot.n,
      sales: info.n,
      first: info.first,
      last: info.last,
    };
  } finally {
    r.close();
  }
}

/** Calls fn up to `samples` times (or for at most budgetMs), each with a fresh window. */
function time(samples: number, budgetMs: number, fn: (i: number) => unknown): { p50: number; p99: number; n: number } {
  const ms: number[] = [];
  const deadline = performance.now() + budgetMs;
  for (let i = 0; i < samples && (i < 5 || performance.now() < deadline); i++) {
    const t = performance.now();
    fn(i);
    ms.push(performance.now() - t);
  }
  return { ...percentiles(ms), n: ms.length };
}

type Window = { since?: number; until?: number };

/**
 * Each window shape, of the whole collection and then of its hottest asset:
 * SAMPLES windows placed at random (the same for every part), the filter of
 * the i-th, and the asset's label.
 */
function eachShape(s: Subject, body: (label: string, asset: boolean, windows: Window[], filter: (i: number) => Window & { assetId?: string }, who: string) => void): void {
  for (const asset of [false, true]) {
    for (const [label, length] of WINDOW_SHAPES) {
      const rnd = new Random(length ?? 0);
      const windows = Array.from({ length: SAMPLES }, () => randomWindow(s.first, s.last, length, rnd));
      body(label, asset, windows, (i) => ({ ...windows[i]!, assetId: asset ? s.hotAsset : undefined }), asset ? `${s.hotAsset} (${s.hotAssetSales} sales)` : "-");
    }
  }
}

function latency(s: Subject): void {
  const db = openReadOnly(s.db);
  const store = sqliteRepositories(db);
  const id = store.collections.collectionId(s.address)!;
  const groupBy = (asset: boolean) =>
    db.prepare(
      `SELECT marketplace, count(*), sum(price_hi), sum(price_lo) FROM sales
       WHERE collection_id = ? ${asset ? "AND asset_key = ?" : ""} AND timestamp >= ? AND timestamp <= ? GROUP BY marketplace`,
    );
  const assetKey = `${String(s.hotAsset.length).padStart(2, "0")}${s.hotAsset}`;
  log(`\n## ${s.name}: ${s.address}, ${s.sales} sales from ${new Date(s.first * 1000).toISOString().slice(0, 10)} to ${new Date(s.last * 1000).toISOString().slice(0, 10)}`);
  log(`latency of one stats call (store call in one snapshot), ${SAMPLES} windows per shape placed at random; GROUP BY over the raw rows on the same windows\n`);
  log("| window | assetId | stats p50 ms | stats p99 ms | GROUP BY p50 ms | GROUP BY p99 ms | GROUP BY / stats (p50) |");
  log("|---|---|---|---|---|---|---|");
  const rows: unknown[] = [];
  eachShape(s, (label, asset, windows, filter, who) => {
    const stats = time(SAMPLES, 20_000, (i) => store.sales.salesSummary(id, filter(i)));
    const stmt = groupBy(asset);
    const raw = time(SAMPLES, 5_000, (i) => {
      const w = windows[i]!;
      const args = [id, ...(asset ? [assetKey] : []), w.since ?? 0, w.until ?? Number.MAX_SAFE_INTEGER];
      stmt.all(...args);
    });
    log(`| ${label} | ${who} | ${stats.p50.toFixed(3)} | ${stats.p99.toFixed(3)} | ${raw.p50.toFixed(2)} | ${raw.p99.toFixed(2)} | ${(raw.p50 / stats.p50).toFixed(0)}x |`);
    rows.push({ window: label, asset, stats, groupBy: raw });
  });
  results[`${s.name} latency`] = rows;
  db.close();
}

/** Stats in dollars (the series' dollars and the edges' sales) beside stats in wei (from the aggregates), on the same windows. */
function usd(s: Subject): void {
  const db = openReadOnly(s.db);
  const store = sqliteRepositories(db);
  const id = store.collections.collectionId(s.address)!;
  const points = db.prepare("SELECT count(*) FROM price_points").pluck().get() as number;
  log(`\n## ${s.name}: stats in USD (currency=usd) beside stats in wei, ${SAMPLES} windows per shape placed at random (${points} price points in the store)\n`);
  log("| window | assetId | sales in window (median) | wei p50 ms | USD p50 ms | USD p99 ms | USD µs per sale |");
  log("|---|---|---|---|---|---|---|");
  const rows: unknown[] = [];
  eachShape(s, (label, asset, _windows, filter, who) => {
    // Fewer samples of the longer windows (a whole history is every sale): the budget bounds each row.
    const counts: number[] = [];
    const dollars = time(SAMPLES, 10_000, (i) => counts.push(store.sales.salesUsdSummary(id, filter(i), Number.MAX_SAFE_INTEGER)!.totalNumSales));
    const wei = time(dollars.n, 5_000, (i) => store.sales.salesSummary(id, filter(i)));
    const n = median(counts);
    log(`| ${label} | ${who} | ${n} | ${wei.p50.toFixed(3)} | ${dollars.p50.toFixed(3)} | ${dollars.p99.toFixed(3)} | ${n === 0 ? "-" : ((dollars.p50 * 1000) / n).toFixed(2)} |`);
    rows.push({ window: label, asset, sales: n, wei, usd: dollars });
  });
  results[`${s.name} usd`] = rows;
  db.close();
}

async function underLoad(s: Subject): Promise<void> {
  // Response cache off: every request is computed (rotating windows would miss it anyway).
  const server = await startTarget("server", s.db, "0");
  try {
    const rnd = new Random(5);
    const base = `/v1/collection/stats?contractAddress=${s.address}`;
    const stats = Array.from({ length: 50_000 }, () => {
      const w = randomWindow(s.first, s.last, -1, rnd);
      return `${base}&since=${w.since}&until=${w.until}`;
    });
    const scores = [`/v1/collection/scores?contractAddress=${s.address}`];
    const r = await compare(
      [
        { name: "stats", target: server, paths: stats },
        { name: "scores", target: server, paths: scores },
      ],
      s.key,
      LOAD,
    );
    log(`\n${s.name}, under load (${LOAD.rounds} alternating rounds of ${LOAD.seconds} s, ${LOAD.connections} connections, response cache off, medians)\n`);
    log("| endpoint | req/s | p99 ms | server event-loop delay p99 ms | errors |");
    log("|---|---|---|---|---|");
    log(`| /v1/collection/stats, 50,000 random windows rotated | ${r.stats!.rps.toFixed(0)} | ${r.stats!.p99} | ${r.stats!.eldP99Ms.toFixed(2)} | ${r.stats!.bad} |`);
    log(`| /v1/collection/scores | ${r.scores!.rps.toFixed(0)} | ${r.scores!.p99} | ${r.scores!.eldP99Ms.toFixed(2)} | ${r.scores!.bad} |`);
    log(`\nstats / scores throughput: ${(r.stats!.rps / r.scores!.rps).toFixed(2)}`);
    // Saturated, a turn of the event loop serves every request that arrived
    // (up to 50): its delay is that batch. Paced at half the capacity, it shows
    // what one stats call holds the loop for.
    const rate = Math.round(r.stats!.rps / 2);
    const paced = await compare([{ name: "stats", target: server, paths: stats }], s.key, { ...LOAD, overallRate: rate });
    log(`paced at ${rate} req/s (half the capacity): p99 ${paced.stats!.p99} ms, server event-loop delay p99 ${paced.stats!.eldP99Ms.toFixed(2)} ms, errors ${paced.stats!.bad}`);
    // Round trips one at a time, each window shape beside scores (the
    // cheapest endpoint): what one caller waits for, beyond the HTTP path.
    const lists: Record<string, string[]> = { scores };
    for (const [shape, length] of WINDOW_SHAPES) {
      lists[shape] = Array.from({ length: 1000 }, () => {
        const w = randomWindow(s.first, s.last, length, rnd);
        return `${base}${w.since === undefined ? "" : `&since=${w.since}`}${w.until === undefined ? "" : `&until=${w.until}`}`;
      });
    }
    const trips = await roundTrips(server.url, s.key, lists, SAMPLES);
    log(`\nround trips one at a time over one keep-alive connection (${SAMPLES} per row, taking turns with scores; response cache off)\n`);
    log("| request | p50 ms | p99 ms | p50 beyond scores ms |");
    log("|---|---|---|---|");
    for (const [name, t] of Object.entries(trips)) {
      log(`| ${name === "scores" ? "/v1/collection/scores" : `stats, ${name}`} | ${t.p50.toFixed(3)} | ${t.p99.toFixed(3)} | ${(t.p50 - trips.scores!.p50).toFixed(3)} |`);
    }
    results[`${s.name} load`] = { ...r, paced: { rate, ...paced.stats }, roundTrips: trips };
  } finally {
    await server.stop();
  }
}

async function importCost(rows: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "marketdata-bench-stats-import-"));
  try {
    const file = join(dir, "sales.ndjson");
    await writeSales(file, rows, 13, GENERATED);
    const rates: Record<string, number[]> = { with: [], without: [] };
    for (let r = 0; r < LOAD.rounds; r++) {
      for (const [label, maintain] of [["with", true], ["without", false]] as const) {
        const path = join(dir, `${label}-${r}.sqlite`);
        const db = openWritable(path);
        rates[label]!.push(await importFile(db, file, maintain));
        db.close();
        rmSync(path, { force: true });
        rmSync(`${path}-wal`, { force: true });
        rmSync(`${path}-shm`, { force: true });
      }
    }
    const w = median(rates.with!);
    const wo = median(rates.without!);
    log(`\n## import of ${rows} sales into a fresh store (${LOAD.rounds} alternating rounds, medians)\n`);
    log("| aggregates | rows/s | rounds |");
    log("|---|---|---|");
    log(`| kept (the default) | ${w.toFixed(0)} | ${rates.with!.map((x) => x.toFixed(0)).join(", ")} |`);
    log(`| not kept (measurement only) | ${wo.toFixed(0)} | ${rates.without!.map((x) => x.toFixed(0)).join(", ")} |`);
    log(`\nkeeping the aggregates costs ${((1 - w / wo) * 100).toFixed(1)}% of import throughput`);
    results[`import ${rows}`] = { rows, with: rates.with, without: rates.without };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const subjects: Subject[] = [];
const stores = opts.stores.split(",");
if (stores.includes("large")) subjects.push(subject("large demo store, largest collection", ensureStore("large").db));
if (stores.includes("generated")) {
  const n = Number(opts.sales);
  subjects.push(subject(`generated collection of ${n} sales`, await generatedStore(n), GENERATED));
}
for (const s of subjects) {
  if (PARTS.has("latency")) latency(s);
  if (PARTS.has("load")) await underLoad(s);
  if (PARTS.has("usd")) usd(s);
}
if (PARTS.has("import")) for (const rows of opts.importRows.split(",")) await importCost(Number(rows));
writeFileSync(`${ROOT}data/bench-stats.json`, JSON.stringify(results, null, 2));
log("\nresults: data/bench-stats.json");
