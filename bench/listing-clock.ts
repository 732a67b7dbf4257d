// npm run bench:listing-clock: what listings lapsing by the clock cost
// (issue 54, item 5; decisions.md, "Listings as orders"). A store of N
// listings of one collection (half with an expiry a week away, half with
// none) on each engine; then, through the server's own writer (the ingest
// writer, as `serve` opens it):
// - the listing clock's tick, an empty batch of listings committed (every
//   commit marks the listings that came due: one range of listings_due),
//   timed in rounds of --seconds, the engines alternating;
// - a lapse: M listings written with an expiry 2 s away, and, once it has
//   passed, the one commit that marks them all, timed (per listing too);
// - what keeping the floor's history costs a commit (decisions.md, "Floor
//   history"): batches of --batch new listings, each cheaper than the
//   floor (every one a change of the floor) or all above it (none), timed
//   with the history kept and with its triggers off, alternating (B: what
//   a build without it pays).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import Database from "better-sqlite3";
import pg from "pg";
import { runCliSync } from "../src/cli/run-sync.js";
import { openIngestWriter } from "../src/store/open.js";
import type { ImportRecord, IngestWriter } from "../src/store/ports/writes.js";
import { handlerFor } from "../src/domain/kinds/index.js";
import { log, median, percentiles } from "./harness.js";
import { withRoundStore } from "./round-store.js";

const opts = new Command("bench:listing-clock")
  .description("the listing clock's tick (an empty commit of listings) and a lapse of many listings at once, on a store of N listings, SQLite beside PostgreSQL")
  .option("--listings <n>", "listings in the store", "200000")
  .option("--lapse <n>", "listings that lapse in one commit", "1000")
  .option("--rounds <n>", "rounds per engine (ticks for --seconds, then a lapse)", "3")
  .option("--seconds <s>", "seconds of ticks per round", "5")
  .option("--writes <n>", "commits of each kind per round, the floor's history kept and not", "20")
  .option("--batch <n>", "listings per commit", "100")
  .option("--engines <list>", "sqlite,postgres", "sqlite,postgres")
  .option("--pg <url>", "PostgreSQL server (a database of its own is created and dropped)", "postgres://postgres@127.0.0.1:5432/postgres")
  .parse()
  .opts<{ listings: string; lapse: string; rounds: string; seconds: string; writes: string; batch: string; engines: string; pg: string }>();

const ADDRESS = "0x00000000000000000000000000000000000c10c4";
const dir = mkdtempSync(join(tmpdir(), "marketdata-bench-clock-"));
const now = () => Math.floor(Date.now() / 1000);

const listing = (id: number, createdAt: number, expiresAt: number) => ({
  marketplaceId: String(id), marketplace: "OPENSEA", contractAddress: ADDRESS, assetId: String(id % 10_000), createdAt, lastUpdatedAt: createdAt,
  price: String(1_000_000_000_000_000n + BigInt((id * 7919) % 1_000_000) * 1_000_000_000n), currency: "ETH", status: "CREATED", expiresAt,
});

/** --listings listings imported into the store `db` through the CLI. */
function fill(db: string, engine: string): void {
  const n = Number(opts.listings);
  const file = join(dir, "listings.ndjson");
  const t = now() - 86_400;
  const lines: string[] = [];
  for (let i = 0; i < n; i++) lines.push(JSON.stringify(listing(i, t, i % 2 === 0 ? t + 8 * 86_400 : 0)));
  writeFileSync(file, `${lines.join("\n")}\n`);
  log(`${engine}: importing ${n} listings...`);
  runCliSync(["import", "--db", db, "listings", file]);
}

/** Empty commits of listings for --seconds: each one's ms. */
async function ticks(writer: IngestWriter): Promise<number[]> {
  const ms: number[] = [];
  const end = performance.now() + Number(opts.seconds) * 1000;
  while (performance.now() < end) {
    const t0 = performance.now();
    await writer.write("listings", []);
    ms.push(performance.now() - t0);
  }
  return ms;
}

/** --lapse listings written to lapse 2 s later, then the commit that marks them: its ms. */
async function lapse(writer: IngestWriter, round: number): Promise<number> {
  const m = Number(opts.lapse);
  const t = now();
  // Checked as the ingest API checks them (defaults filled in).
  const { check } = handlerFor("listings", { latestTime: t + 86_400 });
  const batch = Array.from({ length: m }, (_, i) => check(listing(10_000_000 * (round + 1) + i, t - 60, t + 2), []) as ImportRecord);
  for (let i = 0; i < m; i += 5_000) await writer.write("listings", batch.slice(i, i + 5_000));
  while (now() < t + 3) await new Promise((r) => setTimeout(r, 100));
  const t0 = performance.now();
  await writer.write("listings", []);
  return performance.now() - t0;
}

/** The floor history's triggers (migration 41) off or on: what its settling costs a commit is the difference. */
const FLOOR_TRIGGERS = ["listing_spans_floor_added", "listing_spans_floor_removed"];
const savedTriggers = new Map<string, string[]>();
async function floorHistoryKept(db: string, kept: boolean): Promise<void> {
  if (db.startsWith("postgres")) {
    const client = new pg.Client({ connectionString: db });
    await client.connect();
    try {
      for (const t of FLOOR_TRIGGERS) await client.query(`ALTER TABLE listing_spans ${kept ? "ENABLE" : "DISABLE"} TRIGGER ${t}`);
    } finally {
      await client.end();
    }
    return;
  }
  const conn = new Database(db);
  try {
    conn.pragma("busy_timeout = 10000");
    // Either way whatever the state before (a round ends as it began its second half: kept or off).
    if (kept) for (const sql of savedTriggers.get(db) ?? []) conn.exec(sql.replace(/^CREATE TRIGGER /, "CREATE TRIGGER IF NOT EXISTS "));
    else {
      const found = conn.prepare(`SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name IN (${FLOOR_TRIGGERS.map(() => "?").join(", ")})`).pluck().all(...FLOOR_TRIGGERS) as string[];
      if (found.length > 0) savedTriggers.set(db, found);
      for (const t of FLOOR_TRIGGERS) conn.exec(`DROP TRIGGER IF EXISTS ${t}`);
    }
  } finally {
    conn.close();
  }
}

let written = 0;
/** --writes commits of --batch new listings, each cheaper than any before (`floor`) or above every one: each commit's ms. */
async function listingWrites(writer: IngestWriter, floor: boolean): Promise<number[]> {
  const t = now();
  const { check } = handlerFor("listings", { latestTime: t + 86_400 });
  const ms: number[] = [];
  for (let w = 0; w < Number(opts.writes); w++) {
    const batch = Array.from({ length: Number(opts.batch) }, () => {
      const id = 50_000_000 + ++written;
      const price = floor ? 900_000_000_000_000n - BigInt(written) * 1_000_000n : 5_000_000_000_000_000_000n + BigInt(written);
      return check({ ...listing(id, t - 60, 0), price: price.toString() }, []) as ImportRecord;
    });
    const t0 = performance.now();
    await writer.write("listings", batch);
    ms.push(performance.now() - t0);
  }
  return ms;
}

/** Each engine's store (withRoundStore's, one within the other), filled, then the rounds on all of them. */
async function measure(engines: string[], dbs: Map<string, string>): Promise<void> {
  if (engines.length > 0) {
    const [engine, ...rest] = engines;
    await withRoundStore(engine!, { dir, pgUrl: opts.pg, name: "clock" }, 0, async (db) => {
      fill(db, engine!);
      await measure(rest, new Map([...dbs, [engine!, db]]));
    });
    return;
  }
  const stores = new Map<string, { db: string; writer: IngestWriter; ticks: number[]; all: number[]; lapses: number[]; writes: Record<string, number[]> }>();
  for (const [engine, db] of dbs) stores.set(engine, { db, writer: openIngestWriter(db), ticks: [], all: [], lapses: [], writes: {} });
  try {
    // Warm: each writer opened and its statements prepared.
    for (const s of stores.values()) await s.writer.write("listings", []);
    for (let r = 0; r < Number(opts.rounds); r++) {
      for (const [engine, s] of stores) {
        const tickMs = await ticks(s.writer);
        s.ticks.push(median(tickMs));
        s.all.push(...tickMs);
        s.lapses.push(await lapse(s.writer, r));
        log(`${engine} round ${r + 1}: tick p50 ${median(tickMs).toFixed(3)} ms (${tickMs.length} ticks), lapse of ${opts.lapse}: ${s.lapses.at(-1)!.toFixed(1)} ms`);
        // Kept first in odd rounds, second in even ones.
        for (const kept of r % 2 === 0 ? [true, false] : [false, true]) {
          await floorHistoryKept(s.db, kept);
          for (const floor of [true, false]) {
            const key = `${kept ? "kept" : "off"}/${floor ? "floor" : "above"}`;
            const p50 = median(await listingWrites(s.writer, floor));
            (s.writes[key] ??= []).push(p50);
            log(`${engine} round ${r + 1}: ${opts.batch} listings ${floor ? "each a new floor" : "above the floor"}, history ${kept ? "kept" : "off"}: p50 ${p50.toFixed(2)} ms`);
          }
        }
      }
    }
  } finally {
    for (const s of stores.values()) await s.writer.close();
  }
  log(`\n${opts.listings} listings in the store, ${opts.lapse} lapsing at once, ${opts.rounds} rounds of ${opts.seconds} s (medians of the rounds)\n`);
  log("| engine | tick (empty commit) p50 ms | p99 ms (all ticks) | lapse commit ms | per listing lapsed µs |");
  log("|---|---|---|---|---|");
  for (const [engine, s] of stores) {
    const l = median(s.lapses);
    log(`| ${engine} | ${median(s.ticks).toFixed(3)} | ${percentiles(s.all).p99.toFixed(3)} | ${l.toFixed(1)} | ${((l * 1000) / Number(opts.lapse)).toFixed(1)} |`);
  }
  log(`\nA commit of ${opts.batch} new listings, the floor's history kept against its triggers off (medians of the rounds' p50s, ms)\n`);
  log("| engine | each a new floor: kept | off | kept / off | above the floor: kept | off | kept / off |");
  log("|---|---|---|---|---|---|---|");
  for (const [engine, s] of stores) {
    const m = (k: string) => median(s.writes[k] ?? []);
    log(`| ${engine} | ${m("kept/floor").toFixed(2)} | ${m("off/floor").toFixed(2)} | ${(m("kept/floor") / m("off/floor")).toFixed(2)} | ${m("kept/above").toFixed(2)} | ${m("off/above").toFixed(2)} | ${(m("kept/above") / m("off/above")).toFixed(2)} |`);
  }
}

try {
  await measure(opts.engines.split(","), new Map());
} finally {
  rmSync(dir, { recursive: true, force: true });
}
