import type pg from "pg";
import { PgAnalytics } from "./analytics.js";
import { PgAssetMetrics } from "./asset-metrics.js";
import { PgCollections } from "./collections.js";
import { PgCollectionList } from "./collection-summaries.js";
import { PgFeed } from "./feed.js";
import { PgKeyVerifier } from "./key-verifier.js";
import { PgListings } from "./listings.js";
import { PgTransfers } from "./transfers.js";
import { PgRemovalsRead } from "./removals.js";
import { PgPrices } from "./prices.js";
import type { ReadRepositories, StoreInfo } from "../ports/reads.js";
import { PgSales } from "./sales.js";
import { PgSocial } from "./social.js";
import { PgTokens } from "./tokens.js";
import { PgOffers } from "./offers.js";
import { pgSchemaVersion, redactUrl } from "./database.js";
import { PG_MIGRATIONS } from "./migrations.js";
import { PgQueries } from "./statements.js";
import { changesSince } from "./data-versions.js";

/** Every read repository on one PostgreSQL pool (a primary or a streaming replica). */
export interface PgRepositories extends ReadRepositories {
  /** Every SQL text run so far, with the values of its first run (for query-plan tests). */
  preparedRuns(): { text: string; values: unknown[] }[];
}

export function pgRepositories(pool: pg.Pool, url: string): PgRepositories {
  const q = new PgQueries(pool);
  const info: StoreInfo = {
    description: redactUrl(url),
    engine: "postgres",
    expectedSchemaVersion: PG_MIGRATIONS.length,
    // A row of the data, bumped by every write in its own transaction: a
    // replica reports the version it has replayed, never one ahead of its rows.
    dataVersion: async () => (await q.rows<{ v: number }>("SELECT data_version AS v FROM store_state WHERE id = 1", []))[0]?.v ?? 0,
    changesSince: (since) => changesSince(q, since),
    schemaVersion: () => pgSchemaVersion(pool),
    lastWrite: async () =>
      (await q.rows<{ t: number }>("SELECT extract(epoch FROM last_write)::float8 AS t FROM store_state WHERE id = 1", []))[0]?.t ?? 0,
  };
  return {
    feed: new PgFeed(q),
    collections: new PgCollections(q),
    collectionList: new PgCollectionList(q),
    assetMetrics: new PgAssetMetrics(q),
    sales: new PgSales(q),
    listings: new PgListings(q),
    transfers: new PgTransfers(q),
    removals: new PgRemovalsRead(q),
    tokens: new PgTokens(q),
    offers: new PgOffers(q),
    prices: new PgPrices(q),
    analytics: new PgAnalytics(q),
    social: new PgSocial(q),
    keys: new PgKeyVerifier(q),
    info,
    preparedRuns: () => q.preparedRuns(),
    close: () => pool.end(),
  };
}
