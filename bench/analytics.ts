import { createReadStream, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { Command } from "commander";
import pg from "pg";
import {
  GetCollectionCandlesRequestSchema,
  GetCollectionFloorRequestSchema,
  GetCollectionStatsSeriesRequestSchema,
  ListCollectionHoldersRequestSchema,
  ListCollectionTraitsRequestSchema,
} from "../gen/marketdata/v1/collection_service_pb.js";
import { ListTokensRequestSchema } from "../gen/marketdata/v1/asset_service_pb.js";
import { createAssetService } from "../src/service/asset-service.js";
import { FeedHub } from "../src/service/feed-hub.js";
import { Random } from "../src/demo/random.js";
import { floorCandles } from "../src/domain/floor-candles.js";
import { importLines } from "../src/ingest/importer.js";
import { lineBatches } from "../src/ingest/line-batches.js";
import type { Kind } from "../src/domain/kinds/index.js";
import { createCollectionService } from "../src/service/collection-service.js";
import { openReadRepositories, openWritableStore } from "../src/store/open.js";
import type { ReadRepositories } from "../src/store/ports/reads.js";
import { log, logTimings, percentiles, timeCalls, withEngineOptions } from "./harness.js";
import { MARKETPLACES, saleLines, writeLines, YEAR } from "./sales-file.js";

// npm run bench:analytics — floor, holders, sales series, candles, traits and
// the tokens list in process (the RPC handler called directly: validation,
// store reads, gap filling and the response message; no transport) on a
// collection of 1M sales over two years, 100,000 active listings (and
// 50,000 ended ones) and 10,000 tokens with the real BAYC attributes
// (../shared/data; generated ones, said so, without it), on each engine. Each figure is the median and p99 of --samples calls with
// a fresh random window or time each, after a warm-up; a GROUP BY over the
// raw sales of the same year is timed beside the series for scale.

const program = withEngineOptions(
  new Command("bench:analytics")
    .description("benchmark floor, holders, sales series, candles, traits and tokens in process, on SQLite and PostgreSQL")
    .option("--sales <n>", "sales in the collection (two years)", "1000000")
    .option("--listings <n>", "active listings (half as many more have ended)", "100000")
    .option("--samples <n>", "calls per figure", "500"),
).parse();
const opts = program.opts<{ engines: string; pg: string; sales: string; listings: string; samples: string }>();
const ENGINES = new Set(opts.engines.split(","));
const SAMPLES = Number(opts.samples);
const ADDRESS = "0x00000000000000000000000000000000000a7a11";
const START = 1_640_995_200; // 2022-01-01, as saleLines

function* listingLines(active: number): Generator<string> {
  const rnd = new Random(3);
  const ended = ["FULFILLED", "CANCELLED", "EXPIRED"];
  for (let i = 0; i < active * 1.5; i++) {
    const createdAt = START + rnd.int(0, 2 * YEAR - 86_400);
    const status = i % 3 === 2 ? ended[rnd.int(0, 2)]! : "CREATED";
    const price = BigInt(Math.round((0.5 + rnd.next() ** 3 * 80) * 1e6)) * 10n ** 12n;
    yield JSON.stringify({
      marketplaceId: String(1_000_000 + i),
      marketplace: rnd.pick(MARKETPLACES),
      contractAddress: ADDRESS,
      assetId: String(rnd.int(1, 10_000)),
      createdAt,
      lastUpdatedAt: status === "CREATED" ? createdAt : createdAt + rnd.int(60, 30 * 86_400),
      price: price.toString(),
      currency: "ETH",
      status,
    });
  }
}

const BAYC = fileURLToPath(new URL("../../shared/data/bayc-tokens.ndjson", import.meta.url));

/** Each token's attributes: BAYC token i - 1's when the real data is here, else 7 generated traits of 4 to 40 values. */
function attributesByToken(): { source: string; of: (i: number) => object[] } {
  if (existsSync(BAYC)) {
    const real = readFileSync(BAYC, "utf8").trimEnd().split("\n").map((l) => (JSON.parse(l) as { attributes: object[] }).attributes);
    return { source: `the real BAYC attributes (${BAYC})`, of: (i) => real[(i - 1) % real.length]! };
  }
  const rnd = new Random(5);
  const made = Array.from({ length: 10_000 }, () =>
    Array.from({ length: 7 }, (_, k) => ({ trait_type: `trait${k}`, value: `v${Math.floor(rnd.next() ** 2 * (4 + k * 6))}` })),
  );
  return { source: `generated attributes (${BAYC} not found)`, of: (i) => made[i - 1]! };
}

function* tokenLines(attributes: (i: number) => object[]): Generator<string> {
  const rnd = new Random(4);
  const owners = Array.from({ length: 5_500 }, () => `0x${rnd.hex(40)}`);
  for (let i = 1; i <= 10_000; i++) {
    // Skewed: a few wallets hold many.
    const owner = owners[Math.floor(rnd.next() ** 2 * owners.length)]!;
    yield JSON.stringify({ contractAddress: ADDRESS, assetId: String(i), currentOwner: owner, attributes: attributes(i) });
  }
}

async function fill(target: string, files: [Kind, string][]): Promise<void> {
  const store = await openWritableStore(target, { migrateEmpty: true });
  try {
    for (const [kind, file] of files) {
      const started = performance.now();
      // The CLI's reader: a readline iterator made before the import starts
      // reading drops the lines it emitted meanwhile (PostgreSQL connects first).
      const stats = await importLines(store.records, lineBatches(createReadStream(file)), { kind, skipInvalid: false });
      log(`  ${kind}: ${stats.inserted} rows in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    }
  } finally {
    await store.close();
  }
}

const time = (fn: (i: number) => unknown) => timeCalls(SAMPLES, fn);

async function measure(engine: string, store: ReadRepositories, raw: (since: number) => Promise<unknown>): Promise<void> {
  const service = createCollectionService(store, new FeedHub(store));
  const context = undefined as never;
  const id = (await store.collections.collectionId(ADDRESS))!;
  const rnd = new Random(9);
  const yearStarts = Array.from({ length: SAMPLES + 20 }, () => START + rnd.int(0, YEAR));
  const times = Array.from({ length: SAMPLES + 20 }, () => START + rnd.int(0, 2 * YEAR));
  const rows: [string, { p50: number; p99: number }][] = [];
  const series = (since: number, extra: object = {}) =>
    service.getCollectionStatsSeries(
      create(GetCollectionStatsSeriesRequestSchema, { contractAddress: ADDRESS, interval: "day", since: BigInt(since), until: BigInt(since + YEAR - 1), ...extra }),
      context,
    );
  rows.push(["series: a year of days (365 buckets)", await time((i) => series(yearStarts[i]!))]);
  rows.push(["series: a year of days, one marketplace", await time((i) => series(yearStarts[i]!, { marketplace: MARKETPLACES[i % 6] }))]);
  rows.push(["series: a year of weeks", await time((i) => series(yearStarts[i]!, { interval: "week" }))]);
  rows.push(["series: 1,000 hours", await time((i) => series(yearStarts[i]!, { interval: "hour", until: BigInt(yearStarts[i]! + 1000 * 3600 - 1) }))]);
  const candles = (interval: string, since: number, span: number) =>
    service.getCollectionCandles(
      create(GetCollectionCandlesRequestSchema, { contractAddress: ADDRESS, interval, since: BigInt(since), until: BigInt(since + span - 1) }),
      context,
    );
  // A page of 1,000 candles of each interval at a random place in the history (1m: summed from the raw sales, ~1 a minute here).
  rows.push(["candles 1m: a page of 1,000 minutes", await time((i) => candles("1m", yearStarts[i]!, 1000 * 60))]);
  rows.push(["candles 1h: a page of 1,000 hours", await time((i) => candles("1h", yearStarts[i]!, 1000 * 3600))]);
  rows.push(["candles 1d: a year of days", await time((i) => candles("1d", yearStarts[i]!, YEAR))]);
  // Their floor's part alone (decisions.md, "Floor history"): the kept history's read and the candles composed from it.
  const floorPart = async (span: 60 | 3600 | 86400, since: number, count: number) => {
    const from = since - (since % span);
    const h = await store.analytics.floorHistory(id, "", span, from, from + count * span);
    return floorCandles(from, span, count, h.before, h.rows);
  };
  rows.push(["candles' floor alone: 1,000 minutes", await time((i) => floorPart(60, yearStarts[i]!, 1000))]);
  rows.push(["candles' floor alone: 1,000 hours", await time((i) => floorPart(3600, yearStarts[i]!, 1000))]);
  rows.push(["candles' floor alone: a year of days", await time((i) => floorPart(86400, yearStarts[i]!, 365))]);
  rows.push(["series store read alone: a year of days", await time((i) => store.analytics.series(id, { interval: "day", from: Math.floor(yearStarts[i]! / 86_400) * 86_400, to: Math.floor(yearStarts[i]! / 86_400) * 86_400 + 364 * 86_400 }))]);
  const floor = (extra: object) => service.getCollectionFloor(create(GetCollectionFloorRequestSchema, { contractAddress: ADDRESS, ...extra }), context);
  rows.push(["floor now (every marketplace)", await time(() => floor({}))]);
  rows.push(["floor now, one marketplace", await time((i) => floor({ marketplace: MARKETPLACES[i % 6] }))]);
  rows.push(["floor at a random time (listing history)", await time((i) => floor({ at: BigInt(times[i]!) }))]);
  rows.push(["holders: first page of 20, and the distribution", await time(() => service.listCollectionHolders(create(ListCollectionHoldersRequestSchema, { contractAddress: ADDRESS }), context))]);
  rows.push(["traits: every value, its count and floor", await time(() => service.listCollectionTraits(create(ListCollectionTraitsRequestSchema, { contractAddress: ADDRESS }), context))]);
  // A trait value per call, drawn in proportion to its tokens (as buyers browse).
  const values = (await service.listCollectionTraits(create(ListCollectionTraitsRequestSchema, { contractAddress: ADDRESS }), context)).data ?? [];
  const weighted = values.flatMap((v) => Array.from({ length: Number(v.tokenCount) }, () => `${v.traitType}:${v.value}`));
  const traitOf = (i: number) => weighted[(i * 7_919) % weighted.length]!;
  const assets = createAssetService(store, new FeedHub(store));
  const tokens = (extra: object) => assets.listTokens(create(ListTokensRequestSchema, { contractAddress: ADDRESS, ...extra }), context);
  rows.push(["tokens by a trait, by price: first page of 20", await time((i) => tokens({ trait: traitOf(i), sort: "price" }))]);
  rows.push(["tokens by price: first page of 20", await time(() => tokens({ sort: "price" }))]);
  const deep = (await tokens({ sort: "price", limit: 50 })).nextPage;
  rows.push(["tokens by price: a page after a cursor", await time(() => tokens({ sort: "price", cursor: deep }))]);
  rows.push(["tokens by a trait, by latest move (sorted): first page", await time((i) => tokens({ trait: traitOf(i), sort: "recent" }))]);
  log(`  (${values.length} trait values; tokens of the drawn values: ${weighted.length} in all)`);
  const samples = SAMPLES;
  const rawTime = await (async () => {
    const ms: number[] = [];
    for (let i = 0; i < Math.min(samples, 20); i++) {
      const t = performance.now();
      await raw(yearStarts[i]!);
      ms.push(performance.now() - t);
    }
    return percentiles(ms);
  })();
  rows.push(["(for scale) GROUP BY day over a year's raw sales", rawTime]);
  log(`\n## ${engine}\n`);
  logTimings(rows);
}

const dir = mkdtempSync(join(tmpdir(), "marketdata-bench-analytics-"));
const dbName = `marketdata_bench_analytics_${process.pid}`;
const admin = new pg.Client({ connectionString: opts.pg });
try {
  const files: [Kind, string][] = [
    ["sales", join(dir, "sales.ndjson")],
    ["listings", join(dir, "listings.ndjson")],
    ["tokens", join(dir, "tokens.ndjson")],
  ];
  log(`generating ${opts.sales} sales, ${Number(opts.listings) * 1.5} listings, 10,000 tokens...`);
  await writeLines(files[0]![1], saleLines(Number(opts.sales), 11, ADDRESS));
  await writeLines(files[1]![1], listingLines(Number(opts.listings)));
  const attributes = attributesByToken();
  log(`tokens carry ${attributes.source}`);
  await writeLines(files[2]![1], tokenLines(attributes.of));
  if (ENGINES.has("sqlite")) {
    const target = join(dir, "bench.sqlite");
    log("importing into SQLite...");
    await fill(target, files);
    const store = await openReadRepositories(target);
    const Database = (await import("better-sqlite3")).default;
    const db = new Database(target, { readonly: true });
    const id = (await store.collections.collectionId(ADDRESS))!;
    const groupBy = db.prepare(
      `SELECT timestamp / 86400, count(*), sum(price_hi), sum(price_lo), min(length(price) || price), max(length(price) || price)
       FROM sales WHERE collection_id = ? AND timestamp >= ? AND timestamp < ? GROUP BY 1`,
    );
    await measure("SQLite", store, async (since) => groupBy.all(id, since, since + YEAR));
    db.close();
    await store.close();
  }
  if (ENGINES.has("postgres")) {
    await admin.connect();
    await admin.query(`CREATE DATABASE ${dbName}`);
    const u = new URL(opts.pg);
    u.pathname = `/${dbName}`;
    log("importing into PostgreSQL...");
    await fill(u.toString(), files);
    const c = new pg.Client({ connectionString: u.toString() });
    await c.connect();
    await c.query("VACUUM ANALYZE");
    const store = await openReadRepositories(u.toString(), { poolSize: 1 });
    const id = (await store.collections.collectionId(ADDRESS))!;
    await measure("PostgreSQL", store, (since) =>
      c.query(
        `SELECT timestamp / 86400, count(*), sum(price), min(price), max(price) FROM sales
         WHERE collection_id = $1 AND timestamp >= $2 AND timestamp < $3 GROUP BY 1`,
        [id, since, since + YEAR],
      ),
    );
    await store.close();
    await c.end();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
  if (ENGINES.has("postgres")) {
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => {});
    await admin.end().catch(() => {});
  }
}
