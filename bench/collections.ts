import { DEFAULT_CHAIN } from "../src/domain/chains.js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { Command } from "commander";
import pg from "pg";
import { type ListCollectionsResponse, ListCollectionsRequestSchema } from "../gen/marketdata/v1/collection_service_pb.js";
import { Random } from "../src/demo/random.js";
import { importLines } from "../src/ingest/importer.js";
import type { Kind } from "../src/domain/kinds/index.js";
import { createCollectionService } from "../src/service/collection-service.js";
import { FeedHub } from "../src/service/feed-hub.js";
import { openReadRepositories, openWritableStore } from "../src/store/open.js";
import type { ReadRepositories } from "../src/store/ports/reads.js";
import { COLLECTION_SORTS } from "../src/store/ports/market.js";
import type { WritableStore } from "../src/store/ports/writes.js";
import { log, logTimings, timeCalls, withEngineOptions } from "./harness.js";
import { MARKETPLACES } from "./sales-file.js";

// npm run bench:collections — the collections list in process (the RPC
// handler called directly: validation, the kept summaries' page, each row's
// top bid and floor a day ago, the response message; no transport) over
// --collections collections, each with its own sales of the last five
// weeks (skewed: a few trade much, most little), a few open listings and a
// collection-wide offer, on each engine (--with-sales: only so many of them
// have sales). Each figure is the median and p99
// of --samples calls, after a warm-up. Sales are written in chunks of
// collections (each chunk's in one transaction), the rest in one import each.

const program = withEngineOptions(
  new Command("bench:collections")
    .description("benchmark the collections list in process, on SQLite and PostgreSQL")
    .option("--collections <n>", "collections in the store", "10000")
    .option("--with-sales <n>", "of them, how many have sales")
    .option("--samples <n>", "calls per figure", "500"),
).parse();
const opts = program.opts<{ engines: string; pg: string; collections: string; withSales?: string; samples: string }>();
const ENGINES = new Set(opts.engines.split(","));
const SAMPLES = Number(opts.samples);
const COLLECTIONS = Number(opts.collections);
const WITH_SALES = Number(opts.withSales ?? opts.collections);
const CHUNK = 100;
const NOW = Math.floor(Date.now() / 1000);
const WORDS = ["Apes", "Punks", "Birds", "Cats", "Lands", "Worlds", "Pixels", "Robots", "Skulls", "Ghosts"];

const addressOf = (c: number) => `0x${(0xc011ec7000000 + c).toString(16).padStart(40, "0")}`;

/** The records of collections from..to (exclusive) of one kind. */
function* records(kind: Kind, from: number, to: number): Generator<string> {
  for (let c = from; c < to; c++) {
    const rnd = new Random(1000 + c);
    const contractAddress = addressOf(c);
    const floor = BigInt(Math.round((0.01 + rnd.next() ** 4 * 30) * 1e6)) * 10n ** 12n;
    if (kind === "collections") yield JSON.stringify({ contractAddress, name: `${WORDS[c % WORDS.length]} ${c}` });
    if (kind === "sales" && c < WITH_SALES) {
      // Skewed activity: most collections trade a few times, some often.
      const n = Math.floor(rnd.next() ** 3 * 60);
      for (let i = 0; i < n; i++) {
        const price = (floor * BigInt(80 + rnd.int(0, 60))) / 100n;
        yield JSON.stringify({
          hash: `0x${rnd.hex(64)}`, from: `0x${rnd.hex(40)}`, to: `0x${rnd.hex(40)}`, contractAddress, assetId: String(rnd.int(1, 5000)),
          timestamp: NOW - rnd.int(60, 35 * 86_400), block: 18_000_000 + i, price: price.toString(), amountReceived: price.toString(),
          currency: "ETH", marketplace: rnd.pick(MARKETPLACES),
        });
      }
    }
    if (kind === "listings") {
      for (let i = 0; i < rnd.int(0, 4); i++) {
        const createdAt = NOW - rnd.int(60, 3 * 86_400);
        yield JSON.stringify({
          marketplaceId: String(c * 10 + i), marketplace: rnd.pick(MARKETPLACES), contractAddress, assetId: String(rnd.int(1, 5000)), createdAt,
          lastUpdatedAt: createdAt, price: ((floor * BigInt(100 + rnd.int(0, 50))) / 100n).toString(), currency: "ETH", status: "CREATED",
        });
      }
    }
    if (kind === "offers") {
      yield JSON.stringify({
        marketplaceId: String(c), marketplace: "BLUR", contractAddress, maker: `0x${rnd.hex(40)}`, price: ((floor * 90n) / 100n).toString(),
        currency: "ETH", createdAt: NOW - 3600, lastUpdatedAt: NOW - 3600, expiresAt: 0, status: "CREATED",
      });
    }
  }
}

async function* lines(it: Iterable<string>): AsyncGenerator<string> {
  yield* it;
}

async function fill(target: string): Promise<void> {
  const store: WritableStore = await openWritableStore(target, { migrateEmpty: true });
  try {
    for (const kind of ["collections", "sales", "listings", "offers"] as Kind[]) {
      const started = performance.now();
      let rows = 0;
      // Sales in chunks of collections; the rest at once.
      const chunk = kind === "sales" ? CHUNK : COLLECTIONS;
      for (let from = 0; from < COLLECTIONS; from += chunk) {
        const stats = await importLines(store.records, lines(records(kind, from, Math.min(COLLECTIONS, from + chunk))), { kind, skipInvalid: false });
        rows += stats.inserted;
      }
      log(`  ${kind}: ${rows} rows in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    }
  } finally {
    await store.close();
  }
}

const time = (fn: (i: number) => unknown) => timeCalls(SAMPLES, fn);

async function measure(engine: string, store: ReadRepositories): Promise<void> {
  const service = createCollectionService(store, new FeedHub(store));
  const context = undefined as never;
  const list = async (extra: object) => (await service.listCollections(create(ListCollectionsRequestSchema, extra), context)) as ListCollectionsResponse;
  const rows: [string, { p50: number; p99: number }][] = [];
  for (const sort of COLLECTION_SORTS) rows.push([`sorted by ${sort}: first page of 20`, await time(() => list({ sort }))]);
  const deep = (await list({ sort: "volume1d", limit: 50 })).nextPage;
  rows.push(["sorted by volume1d: a page after a cursor", await time(() => list({ sort: "volume1d", cursor: deep }))]);
  rows.push(["found by a word of the name, by volume1d", await time((i) => list({ query: WORDS[i % WORDS.length]!.toLowerCase() }))]);
  rows.push(["store read alone: a page of 20 summaries by volume1d", await time(() => store.collectionList.collectionsPage({ chain: DEFAULT_CHAIN, sort: "volume1d" }, { limit: 20, after: null }))]);
  const first = (await list({ sort: "volume1d", limit: 3 })).data;
  log(`\n## ${engine}: ${COLLECTIONS} collections, ${WITH_SALES} of them with sales\n`);
  log(`(top by 1-day volume: ${first.map((c) => `${c.name} ${Number(BigInt(c.volume1d) / 10n ** 15n) / 1000} ETH`).join(", ")})\n`);
  logTimings(rows);
}

const dir = mkdtempSync(join(tmpdir(), "marketdata-bench-collections-"));
const dbName = `marketdata_bench_collections_${process.pid}`;
const admin = new pg.Client({ connectionString: opts.pg });
try {
  if (ENGINES.has("sqlite")) {
    const target = join(dir, "bench.sqlite");
    log(`writing ${COLLECTIONS} collections into SQLite...`);
    await fill(target);
    const store = await openReadRepositories(target);
    await measure("SQLite", store);
    await store.close();
  }
  if (ENGINES.has("postgres")) {
    await admin.connect();
    await admin.query(`CREATE DATABASE ${dbName}`);
    const u = new URL(opts.pg);
    u.pathname = `/${dbName}`;
    log(`writing ${COLLECTIONS} collections into PostgreSQL...`);
    await fill(u.toString());
    const c = new pg.Client({ connectionString: u.toString() });
    await c.connect();
    await c.query("VACUUM ANALYZE collection_summaries, collections, collection_holdings, offers, listing_spans");
    await c.end();
    const store = await openReadRepositories(u.toString(), { poolSize: 1 });
    await measure("PostgreSQL", store);
    await store.close();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
  if (ENGINES.has("postgres")) {
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => {});
    await admin.end().catch(() => {});
  }
}
