import { FLOOR_HISTORY_TRIGGERS } from "../../src/store/sqlite/floor-history.js";
import { BALANCE_TRIGGERS } from "../../src/store/sqlite/balances.js";
import { TOKEN_HOLDER_TRIGGERS, tokenHolderTriggers } from "../../src/store/sqlite/holders.js";
import { tokenOwnersKept } from "../../src/store/postgres/holders.js";
import { FED_AT } from "../../src/store/shared/token-feed.js";
import { BALANCE_RULE_TRIGGERS, eventRemovedTriggers, fillableTriggers, listingWireTrigger, REMADE } from "../../src/store/sqlite/fillable.js";
import { COLLECTION_METADATA_COLUMNS, TOKEN_METADATA_COLUMNS } from "../../src/store/shared/metadata.js";
import { mkdtempSync, rmSync } from "node:fs";
import { CLEAN_SUMMARIES, WASH_SUMMARIES } from "../../src/store/shared/collection-summaries.js";
import { ORDER_KINDS, ORDER_LOGS } from "../../src/store/shared/order-log.js";
import { REMOVAL_TABLES } from "../../src/store/shared/removals.js";
import { skipPg } from "./pg.js";
import Database from "better-sqlite3";
import pg from "pg";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { deriveAll } from "../../src/derive/derive.js";
import { importLines } from "../../src/ingest/importer.js";
import type { ImportStats } from "../../src/ingest/importer.js";
import type { Kind } from "../../src/domain/kinds/index.js";
import { openKeyAdmin } from "../../src/store/open.js";
import type { KeyAdmin } from "../../src/store/ports/keys.js";
import { isPostgresUrl } from "../../src/store/postgres/database.js";
import { openWritableStore } from "../../src/store/open.js";
import type { Fixture } from "./fixture.js";
import { createTestDatabase } from "./pg.js";

// The engine the end-to-end suite runs on: SQLite by default, PostgreSQL in
// the "postgres" project of vitest.config.ts (MARKETDATA_TEST_ENGINE). Tests
// write through the commands' own paths (import, keys, derive), which work
// on either engine, never through one engine's writer.

export type Engine = "sqlite" | "postgres";
export const ENGINE: Engine = process.env.MARKETDATA_TEST_ENGINE === "postgres" ? "postgres" : "sqlite";
/** Both engines, for a test that runs on each itself (a migration's): PostgreSQL skipped, visibly, without a server. */
export const BOTH_ENGINES: readonly { engine: Engine; skip: boolean }[] = [
  { engine: "sqlite", skip: false },
  { engine: "postgres", skip: skipPg },
];

/**
 * Imports records of one kind into the store at `target` (a file or a URL),
 * atomically; `maxClockSkewSeconds` as import's flag (a huge one stores
 * what a build that did not refuse future times would have stored).
 */
export async function importRecords(target: string, kind: Kind, records: readonly object[], options: { maxClockSkewSeconds?: number } = {}): Promise<ImportStats> {
  const store = await openWritableStore(target, { migrateEmpty: true });
  try {
    return await importLines(store.records, asLines(records), { kind, skipInvalid: false, ...options });
  } finally {
    await store.close();
  }
}

export async function withKeys<T>(target: string, use: (admin: KeyAdmin) => Promise<T>): Promise<T> {
  const admin = await openKeyAdmin(target);
  try {
    return await use(admin);
  } finally {
    await admin.close();
  }
}

export async function deriveAt(target: string): Promise<void> {
  const store = await openWritableStore(target);
  try {
    await deriveAll(store.derive);
  } finally {
    await store.close();
  }
}

/** An empty store on the test engine (or `engine`): a file in a temporary folder, or a database of its own. */
export async function emptyStore(engine: Engine = ENGINE): Promise<{ target: string; cleanup(): Promise<void> }> {
  if (engine === "postgres") {
    const db = await createTestDatabase();
    return { target: db.url, cleanup: db.drop };
  }
  const dir = mkdtempSync(join(tmpdir(), "marketdata-test-"));
  return { target: join(dir, "store.sqlite"), cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * The fixture on the test engine: on PostgreSQL, its records imported as
 * NDJSON into a database of its own (through COPY and the merge), with keys
 * of that database; `dbPath` is then the database URL.
 */
export async function fixtureOnEngine(f: Fixture): Promise<Fixture> {
  if (ENGINE === "sqlite") return f;
  const db = await createTestDatabase();
  const target = db.url;
  const records = fixtureRecords(f);
  for (const [kind, rows] of Object.entries(records) as [Kind, object[]][]) await importRecords(target, kind, rows);
  const { key, revokedKey } = await withKeys(target, async (admin) => {
    const k = await admin.create("tests");
    const revoked = await admin.create("revoked");
    await admin.revoke(revoked.id);
    return { key: k.key, revokedKey: revoked.key };
  });
  return {
    ...f,
    dbPath: target,
    key,
    revokedKey,
    cleanup: async () => {
      await db.drop();
      await f.cleanup();
    },
  };
}

/** Every record of the fixture as the importable kinds of decisions.md. */
export function fixtureRecords(f: Fixture): Partial<Record<Kind, object[]>> {
  const eth = { currency: "ETH" };
  return {
    collections: f.collections,
    transfers: f.transfers,
    appraisals: f.appraisals.map((r) => ({ ...r, ...eth })),
    rarity: f.rarity,
    sales: f.sales.map((r) => ({ ...r, ...eth })),
    listings: f.listings.map((r) => ({ ...r, ...eth })),
    tokens: f.tokens,
    offers: f.offers.map((r) => ({ ...r, ...eth })),
    influencers: f.influencers,
    tweets: f.tweets.map(({ retweetedStatusJson, ...r }) => ({ ...r, retweetedStatus: retweetedStatusJson === null ? null : JSON.parse(retweetedStatusJson) })),
    scores: [f.score],
  };
}

async function* asLines(records: readonly object[]): AsyncIterable<string> {
  for (const r of records) yield JSON.stringify(r);
}

/** Marks the store as at schema `version` (to test how servers meet a store they were not built for). */
export async function setSchemaVersion(target: string, version: number): Promise<void> {
  if (!isPostgresUrl(target)) {
    const db = new Database(target);
    db.pragma(`user_version = ${version}`);
    db.close();
    return;
  }
  const client = new pg.Client({ connectionString: target });
  await client.connect();
  try {
    await client.query("DELETE FROM schema_migrations WHERE version > $1", [version]);
    await client.query("INSERT INTO schema_migrations (version) SELECT generate_series(coalesce(max(version), 0) + 1, $1::int) FROM schema_migrations", [version]);
  } finally {
    await client.end();
  }
}

/** The first row of a read of the store at `target` (either engine), its values as SQLite gives them (PostgreSQL's counts are numbers here too). */
export async function firstRow(target: string, sql: string): Promise<Record<string, unknown>> {
  if (!isPostgresUrl(target)) {
    const db = new Database(target, { readonly: true });
    try {
      return db.prepare(sql).get() as Record<string, unknown>;
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: target });
  await client.connect();
  try {
    const row = (await client.query<Record<string, unknown>>(sql)).rows[0]!;
    // count(*) is a bigint, which pg gives as text.
    return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === "string" && /^\d+$/.test(v) ? Number(v) : v]));
  } finally {
    await client.end();
  }
}

/** Runs `sqlite` on the SQLite store at `target`, or `postgres` on the PostgreSQL one, with a connection of its own. */
async function onStore(target: string, sqlite: (db: Database.Database) => void, postgres: (client: pg.Client) => Promise<void>): Promise<void> {
  if (!isPostgresUrl(target)) {
    const db = new Database(target);
    try {
      sqlite(db);
    } finally {
      db.close();
    }
    return;
  }
  const client = new pg.Client({ connectionString: target });
  await client.connect();
  try {
    await postgres(client);
  } finally {
    await client.end();
  }
}

/** Runs statement `sql` on the store at `target` (either engine). */
export async function execSql(target: string, sql: string): Promise<void> {
  await onStore(target, (db) => db.exec(sql), async (client) => void (await client.query(sql)));
}

/** Takes a store's schema back before migration 42: no transfer amounts, balances or token standards (holders by tokens' owners only). */
export async function dropBalances(target: string): Promise<void> {
  await dropQuantities(target);
  const sqlite = !isPostgresUrl(target);
  if (sqlite) {
    for (const t of [...BALANCE_TRIGGERS, "collections_standard_changed", ...TOKEN_HOLDER_TRIGGERS]) await execSql(target, `DROP TRIGGER ${t}`);
    await execSql(target, tokenHolderTriggers(false));
  } else {
    await execSql(target, `DROP TRIGGER collections_standard_changed ON collections; DROP FUNCTION collections_standard_changed; ${tokenOwnersKept(false)}`);
  }
  // Its triggers go with it (PostgreSQL's function after).
  await execSql(target, "DROP TABLE token_balances");
  if (!sqlite) await execSql(target, "DROP FUNCTION token_balances_held");
  for (const [table, column] of [["transfers", "amount"], [REMOVAL_TABLES.transfers, "amount"], ["collections", "token_standard"]]) {
    await execSql(target, `ALTER TABLE ${table} DROP COLUMN ${column}`);
  }
}

/** Takes a store back before migration 45: SQLite's triggers that end listings as 43 left them (PostgreSQL's rule is its statements'). */
export async function dropBalanceRule(target: string): Promise<void> {
  if (isPostgresUrl(target)) return;
  for (const t of BALANCE_RULE_TRIGGERS) await execSql(target, `DROP TRIGGER ${t}`);
  await execSql(target, `${fillableTriggers(true)}\n${eventRemovedTriggers(true)}`);
}

/**
 * Takes a store's schema back before migration 44: sales and listings
 * without quantities (43 changed no table), the listings' ready JSON without
 * it (SQLite's trigger writes the whole JSON again from the fragments).
 */
export async function dropQuantities(target: string): Promise<void> {
  await dropBalanceRule(target);
  for (const table of ["sales", REMOVAL_TABLES.sales, "listings", ORDER_LOGS.listings, REMOVAL_TABLES.listings]) {
    await execSql(target, `ALTER TABLE ${table} DROP COLUMN quantity`);
  }
  await execSql(target, `UPDATE listings SET wire_json_middle = replace(wire_json_middle, ',"quantity":"1"', '')`);
}

/** Takes a store's schema back before migration 41: no floor history kept, nor what came after. */
export async function dropFloorHistory(target: string): Promise<void> {
  await dropBalances(target);
  const sqlite = !isPostgresUrl(target);
  for (const t of FLOOR_HISTORY_TRIGGERS) await execSql(target, `DROP TRIGGER ${t}${sqlite ? "" : ` ON ${t.startsWith("listing_spans") ? "listing_spans" : "token_flags"}`}`);
  if (!sqlite) for (const f of ["floor_spans_added", "floor_spans_removed", "floor_flags_added", "floor_flags_changed"]) await execSql(target, `DROP FUNCTION ${f}`);
  for (const table of ["floor_points", "floor_buckets", "floor_dirty"]) await execSql(target, `DROP TABLE ${table}`);
  await execSql(target, "DROP INDEX listing_spans_by_end");
}

/** Takes a store's schema back before migration 40: listings without maker, expiry or lapse (SQLite's triggers as 39 left them), nor what came after. */
export async function dropListingOrders(target: string): Promise<void> {
  await dropFloorHistory(target);
  const sqlite = !isPostgresUrl(target);
  // SQLite's triggers name the columns: those of migration 39 come back around the drop.
  if (sqlite) for (const t of [...REMADE, "listings_expiry_changed", "listings_wire_changed"]) await execSql(target, `DROP TRIGGER ${t}`);
  await execSql(target, "DROP INDEX listings_due");
  for (const table of ["listings", ORDER_LOGS.listings, REMOVAL_TABLES.listings]) {
    for (const column of ["maker", "expires_at", ...(table === "listings" ? ["lapsed"] : [])]) await execSql(target, `ALTER TABLE ${table} DROP COLUMN ${column}`);
  }
  if (sqlite) await execSql(target, `${fillableTriggers(false)}${eventRemovedTriggers(false)}${listingWireTrigger("NEW.")}`);
}

/** Takes a store's schema back before migration 39: tokens in no feed (PostgreSQL's webhooks without a token position), nor what came after. */
export async function dropTokenFeed(target: string): Promise<void> {
  await dropListingOrders(target);
  await execSql(target, "DROP INDEX tokens_by_feed");
  for (const column of ["feed_seq", FED_AT]) await execSql(target, `ALTER TABLE tokens DROP COLUMN ${column}`);
  if (isPostgresUrl(target)) await execSql(target, "ALTER TABLE webhooks DROP COLUMN pos_tokens");
}

/** Takes a store's schema back before migration 38: no market cap or all-time volume kept with the collections list's summaries, nor what came after. */
export async function dropMarketCap(target: string): Promise<void> {
  await dropTokenFeed(target);
  for (const table of [CLEAN_SUMMARIES, WASH_SUMMARIES]) {
    for (const index of ["market_cap", "volume_all"]) await execSql(target, `DROP INDEX ${table}_by_${index}`);
    for (const column of ["market_cap", "market_cap_key", "volume_all", "volume_all_key"]) await execSql(target, `ALTER TABLE ${table} DROP COLUMN ${column}`);
  }
}

/** Takes a store's schema back before migration 37: no spam or flag marks (docs/data.md, "Spam and flags"), nor what came after. */
export async function dropFlags(target: string): Promise<void> {
  await dropMarketCap(target);
  for (const table of ["token_flags", "collection_flags"]) await execSql(target, `DROP TABLE ${table}`);
}

/** Takes a store's schema back before migration 36: no token or collection metadata (docs/data.md, "Metadata"), nor what came after. */
export async function dropMetadata(target: string): Promise<void> {
  await dropFlags(target);
  for (const c of TOKEN_METADATA_COLUMNS) await execSql(target, `ALTER TABLE tokens DROP COLUMN ${c}`);
  for (const c of COLLECTION_METADATA_COLUMNS) await execSql(target, `ALTER TABLE collections DROP COLUMN ${c}`);
}

/** Takes a store's schema back before migration 34: no US dollars kept with the series and the summaries (docs/money.md), nor what came after. */
export async function dropUsdSeries(target: string): Promise<void> {
  await dropMetadata(target);
  await execSql(target, "DROP INDEX sales_series_by_hour");
  for (const column of ["volume_usd", "unpriced"]) await execSql(target, `ALTER TABLE sales_series DROP COLUMN ${column}`);
  for (const table of [CLEAN_SUMMARIES, WASH_SUMMARIES]) {
    for (const w of ["1d", "7d", "30d"]) await execSql(target, `ALTER TABLE ${table} DROP COLUMN volume_usd_${w}`);
  }
}

/** Takes a store's schema back before migration 33: no order's payment token (docs/money.md), nor what came after. */
export async function dropOrderCurrency(target: string): Promise<void> {
  await dropUsdSeries(target);
  for (const table of [...ORDER_KINDS, ORDER_LOGS.listings, ORDER_LOGS.offers, REMOVAL_TABLES.listings, REMOVAL_TABLES.offers]) {
    await execSql(target, `ALTER TABLE ${table} DROP COLUMN currency`);
  }
}

/** Takes a store's schema back before migration 31: no sale's payment token or fees (docs/money.md), nor price points (32), nor what came after. */
export async function dropSaleMoney(target: string): Promise<void> {
  await dropOrderCurrency(target);
  await execSql(target, "DROP TABLE price_points");
  for (const table of ["sales", "sale_removals"]) {
    for (const column of ["currency", "marketplace_fee", "royalty_fee"]) await execSql(target, `ALTER TABLE ${table} DROP COLUMN ${column}`);
  }
}

/** Takes a store's schema back before migration 30: no summaries with wash (the collections list's includeWash), nor what came after. */
export async function dropWashSummaries(target: string): Promise<void> {
  await dropSaleMoney(target);
  await execSql(target, `DROP TABLE ${WASH_SUMMARIES}`);
}

/** Takes the store at `target` back to before migration 29 (docs/wash-trades.md): no wash flags, their indexes as they were. */
export async function dropWashFlags(target: string): Promise<void> {
  await dropWashSummaries(target);
  const drops = ["sales", "sale_removals"].map((t) => `ALTER TABLE ${t} DROP COLUMN wash_flags`);
  await onStore(
    target,
    (db) => {
      db.exec(`DROP INDEX sales_washed; DROP INDEX sales_by_marketplace;
        CREATE INDEX sales_by_marketplace ON sales (collection_id, marketplace, timestamp DESC, block DESC, hash, asset_key, price_hi, price_lo);`);
      for (const sql of drops) db.exec(sql);
    },
    async (client) => {
      // The column's drop drops the indexes that hold it.
      for (const sql of drops) await client.query(sql);
      await client.query("CREATE INDEX sales_by_marketplace ON sales (collection_id, marketplace, timestamp DESC, block DESC, hash, asset_id) INCLUDE (price)");
    },
  );
}
