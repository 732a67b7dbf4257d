import { statSync } from "node:fs";
import { ApiKeyVerifier } from "./key-verifier.js";
import { SqliteAnalytics } from "./analytics.js";
import { SqliteAssetMetrics } from "./asset-metrics.js";
import { SqliteCollections } from "./collections.js";
import { SqliteCollectionList } from "./collection-summaries.js";
import { type Db, keysFileOf, openKeys, schemaVersion } from "./database.js";
import { SqliteFeed } from "./feed.js";
import { SqliteListings } from "./listings.js";
import { SqliteTransfers } from "./transfers.js";
import { SqliteRemovalsRead } from "./removals.js";
import { MIGRATIONS } from "./migrations.js";
import { SqlitePrices } from "./prices.js";
import type { ReadRepositories, StoreInfo } from "../ports/reads.js";
import { SqliteSales } from "./sales.js";
import { SqliteSocial } from "./social.js";
import { SqliteStatements } from "./statements.js";
import { SqliteTokens } from "./tokens.js";
import { SqliteOffers } from "./offers.js";
import { VersionReader } from "./data-versions.js";

/** Every read repository on one SQLite connection (synchronous results). */
export interface SqliteRepositories extends ReadRepositories {
  feed: SqliteFeed;
  collections: SqliteCollections;
  collectionList: SqliteCollectionList;
  assetMetrics: SqliteAssetMetrics;
  sales: SqliteSales;
  listings: SqliteListings;
  transfers: SqliteTransfers;
  removals: SqliteRemovalsRead;
  tokens: SqliteTokens;
  offers: SqliteOffers;
  prices: SqlitePrices;
  analytics: SqliteAnalytics;
  social: SqliteSocial;
  keys: ApiKeyVerifier;
  /** Every SQL text prepared so far (for query-plan tests). */
  preparedSql(): string[];
}

/** `keys`: the store's key file (database.ts openKeys); opened beside `db` when absent, and closed with it. */
export function sqliteRepositories(db: Db, keys: Db = openKeys(db.name, { readonly: db.readonly })): SqliteRepositories {
  const statements = new SqliteStatements(db);
  const dataVersion = db.prepare("PRAGMA data_version").pluck();
  const keysVersion = keys.prepare("PRAGMA data_version").pluck();
  // Prepared on first use: a store at an older schema (no store_state) can still be opened, to be refused as not ready.
  let versions: VersionReader | undefined;
  const info: StoreInfo = {
    description: db.name,
    engine: "sqlite",
    expectedSchemaVersion: MIGRATIONS.length,
    // SQLite's data_version: read from shared memory in WAL mode under its
    // read lock (cheap, but not free under load: transport/cache/freshness.ts
    // reads it at most once per loop turn). It moves whenever another
    // connection (an import, a derive) commits; the key file's moves with
    // every key change. Both only grow, so their sum moves with either.
    dataVersion: () => (dataVersion.get() as number) + (keysVersion.get() as number),
    changesSince: (since) => (versions ??= new VersionReader(db, keys)).changesSince(since),
    // An import may migrate the file under a running server.
    schemaVersion: () => schemaVersion(db),
    // The file's or its WAL's last write: the last import, derive or key change.
    lastWrite: () =>
      Math.max(mtime(db.name), mtime(`${db.name}-wal`), mtime(keysFileOf(db.name)), mtime(`${keysFileOf(db.name)}-wal`)) / 1000,
  };
  return {
    feed: new SqliteFeed(statements),
    collections: new SqliteCollections(statements),
    collectionList: new SqliteCollectionList(statements),
    assetMetrics: new SqliteAssetMetrics(statements),
    sales: new SqliteSales(statements),
    listings: new SqliteListings(statements),
    transfers: new SqliteTransfers(statements),
    removals: new SqliteRemovalsRead(statements),
    tokens: new SqliteTokens(statements),
    offers: new SqliteOffers(statements),
    prices: new SqlitePrices(statements),
    analytics: new SqliteAnalytics(statements),
    social: new SqliteSocial(statements),
    keys: new ApiKeyVerifier(keys),
    info,
    preparedSql: () => statements.preparedSql(),
    close: async () => {
      db.close();
      keys.close();
    },
  };
}

function mtime(path: string): number {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}
