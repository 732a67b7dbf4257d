import type { SeriesBucket } from "../../domain/series.js";
import type { AnalyticsRepository, FloorFilter, HoldersPage, SeriesFilter } from "../ports/market.js";
import { type FloorListingRow, HOLDER_BUCKETS, type HolderBucketRow, type HolderRow } from "../../domain/rows.js";
import { type PageRequest, toPage } from "../ports/paging.js";
import { SalesSeries } from "./sales-series.js";
import type { SqliteStatements } from "./statements.js";
import { lowestPrice } from "../shared/listing-prices.js";
import { notFlagged } from "./flags.js";
import { BUCKETS, bucketRows, FLOOR_BEFORE } from "./floor-history.js";
import type { FloorBucket, FloorPrice, FloorSpanLength } from "../../domain/floor-candles.js";

// Floor, holders and sales series (migration 7 keeps what they read): each
// answer a bounded number of index seeks, read in one snapshot.

/** The open listings (partial index listings_open_by_price), or the spans active at a time (listing_spans_by_price). */
const FLOOR_SOURCES = {
  now: {
    table: "listings f INDEXED BY listings_open_by_price",
    active: "f.status = 'CREATED'",
    /** What the partial index holds: its every query names it. */
    scope: "AND f.status = 'CREATED'",
    listing: "l.marketplace = f.marketplace AND l.marketplace_id = f.marketplace_id",
  },
  at: {
    table: "listing_spans f INDEXED BY listing_spans_by_price",
    active: "f.active_from <= ? AND f.active_until > ?",
    scope: "",
    listing: "l.id = f.listing_id",
  },
} as const;

export class SqliteAnalytics implements AnalyticsRepository {
  readonly #series: SalesSeries;

  constructor(private readonly s: SqliteStatements) {
    this.#series = new SalesSeries((sql) => s.prepare(sql));
  }

  floors(collectionId: number, filter: FloorFilter): FloorListingRow[] {
    const source = FLOOR_SOURCES[filter.at === undefined ? "now" : "at"];
    const at = filter.at === undefined ? [] : [filter.at, filter.at];
    return this.s.snapshot(() => {
      const marketplaces = filter.marketplace !== undefined ? [filter.marketplace] : this.#marketplaces(source.table, source.scope, collectionId);
      const out: FloorListingRow[] = [];
      for (const m of marketplaces) {
        // The lowest price active at the time: the first entry of the
        // marketplace's price order that is active (always the first for
        // "now"; for a past time, the spans of cheaper listings that had
        // ended by then are stepped over, in the index).
        const row = this.s.row(
          `SELECT f.marketplace, f.marketplace_id, substr(l.asset_key, 3) AS asset_id, l.created_at, f.price
           FROM ${source.table} JOIN listings l ON ${source.listing}
           WHERE f.collection_id = ? AND f.marketplace = ? AND ${source.active}${filter.includeFlagged ? "" : ` AND ${notFlagged("l")}`}
           ORDER BY length(f.price), f.price, f.marketplace_id LIMIT 1`,
          [collectionId, m, ...at],
        );
        if (row !== undefined) {
          out.push({
            marketplace: row.marketplace as string,
            marketplaceId: row.marketplace_id as string,
            assetId: row.asset_id as string,
            price: row.price as string,
            createdAt: row.created_at as number,
          });
        }
      }
      return out;
    });
  }

  /** The distinct marketplaces of a collection in an index led by (collection_id, marketplace): one seek each. */
  #marketplaces(table: string, scope: string, collectionId: number): string[] {
    const next = this.s
      .prepare(`SELECT f.marketplace FROM ${table} WHERE f.collection_id = ? AND f.marketplace > ? ${scope} ORDER BY f.marketplace LIMIT 1`)
      .pluck();
    const found: string[] = [];
    for (let m = next.get(collectionId, "") as string | undefined; m !== undefined; m = next.get(collectionId, m) as string | undefined) {
      found.push(m);
    }
    return found;
  }

  holders(collectionId: number, page: PageRequest): HoldersPage {
    return this.s.snapshot(() => {
      const counts = this.s.prepare("SELECT tokens, holders FROM collection_holdings WHERE collection_id = ?").raw().get(collectionId) as
        | [number, number]
        | undefined;
      const [totalTokens, numHolders] = counts ?? [0, 0];
      const params: unknown[] = [collectionId];
      let after = "";
      if (page.after) {
        after = "AND (tokens < ? OR (tokens = ? AND owner > ?))";
        params.push(page.after[0], page.after[0], page.after[1]);
      }
      params.push(page.limit + 1);
      const rows = this.s.rows(
        `SELECT owner, tokens FROM token_owners INDEXED BY token_owners_by_count
         WHERE collection_id = ? ${after} ORDER BY tokens DESC, owner LIMIT ?`,
        params,
      );
      // Each bucket one range of the count index (covering): its wallets and their tokens.
      const bucket = this.s.prepare(`SELECT count(*), coalesce(sum(tokens), 0) FROM token_owners INDEXED BY token_owners_by_count
        WHERE collection_id = ? AND tokens >= ? AND tokens <= ?`).raw();
      const distribution = HOLDER_BUCKETS.map(([min, max]): HolderBucketRow => {
        const [wallets, tokens] = bucket.get(collectionId, min, max === 0 ? Number.MAX_SAFE_INTEGER : max) as [number, number];
        return { min, max, wallets, tokens };
      });
      return {
        totalTokens,
        numHolders,
        distribution,
        page: toPage(
          rows,
          page.limit,
          (r): HolderRow => ({ address: r.owner as string, tokens: r.tokens as number }),
          (h) => [h.tokens, h.address],
        ),
      };
    });
  }

  series(collectionId: number, filter: SeriesFilter): SeriesBucket[] {
    return this.#series.read(collectionId, filter);
  }

  lowestFloorsAt(collectionIds: readonly number[], at: number): (string | undefined)[] {
    return this.s.snapshot(() => collectionIds.map((id) => lowestPrice(this.floors(id, { at }))));
  }

  salesExtent(collectionId: number): { first: number; last: number } | undefined {
    return this.s.snapshot(() => {
      const at = (order: "ASC" | "DESC") =>
        this.s
          .prepare(`SELECT timestamp FROM sales INDEXED BY sales_by_time WHERE collection_id = ? ORDER BY timestamp ${order} LIMIT 1`)
          .pluck()
          .get(collectionId) as number | undefined;
      const first = at("ASC");
      const last = at("DESC");
      return first === undefined || last === undefined ? undefined : { first, last };
    });
  }

  floorHistory(collectionId: number, marketplace: string, span: FloorSpanLength, from: number, until: number): { before: FloorPrice; rows: FloorBucket[] } {
    return this.s.snapshot(() => {
      const before = this.s.prepare(FLOOR_BEFORE).pluck().get(collectionId, marketplace, from) as string | null | undefined;
      const rows = bucketRows(this.s.prepare(BUCKETS).raw().all(collectionId, marketplace, span, from, until) as Parameters<typeof bucketRows>[0]);
      return { before: before ?? null, rows };
    });
  }

  floorExtent(collectionId: number, marketplace: string): { first: number; last: number } | undefined {
    return this.s.snapshot(() => {
      const at = (order: "ASC" | "DESC") =>
        this.s.prepare(`SELECT t FROM floor_points WHERE collection_id = ? AND marketplace = ? ORDER BY t ${order} LIMIT 1`).pluck().get(collectionId, marketplace) as number | undefined;
      const first = at("ASC");
      const last = at("DESC");
      return first === undefined || last === undefined ? undefined : { first, last };
    });
  }
}
