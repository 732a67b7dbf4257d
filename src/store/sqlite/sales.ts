import { type UsdSummary, usdValue, UsdVolumes } from "../../domain/money.js";
import { usdPointSql } from "../shared/prices.js";
import type { SaleRow, SalesSummary } from "../../domain/rows.js";
import type { Row } from "../shared/rows.js";
import { assetIdSql, assetKey } from "./asset-key.js";
import { hexSql, hexToBytes } from "./hex.js";
import type { Statement } from "better-sqlite3";
import { type Fragment, saleFragment, saleJsonWithFinality, type WireForm } from "../../domain/wire/fragments.js";
import { type Page, type PageRequest, toPage } from "../ports/paging.js";
import type { KeyValue } from "../../domain/rows.js";
import { filterAssets, type SalesFilter, type SalesRepository, type StatsFilter } from "../ports/reads.js";
import { encodedWhole, readyPage } from "../shared/wire-rows.js";
import { finalityOf } from "../shared/finality.js";
import { finalizedOf } from "./collections.js";
import { SalesStatsReader } from "./sales-stats.js";
import { CLEAN, IN_WEI } from "./wash.js";
import { saleKey, toSale } from "../shared/rows.js";
import type { SqliteStatements } from "./statements.js";
import { LATEST_POINT_SQL, PointsInForce } from "./prices.js";

// Sales newest first (decisions.md's order), in keyset pages that cost the
// same however deep they are, and a window's stats from the hourly running
// totals (sales-stats.ts).

export class SqliteSales implements SalesRepository {
  readonly #stats: SalesStatsReader;
  /** A sale's page key by id (a ready page reads it for a page's last row only). */
  #saleKey: Statement | undefined;
  #latestPoint: Statement | undefined;

  constructor(private readonly s: SqliteStatements) {
    this.#stats = new SalesStatsReader((sql) => s.prepare(sql), s.snapshot);
  }

  /** The page as rows, or, given a form, as each row's ready answer in it (domain/wire/fragments.ts). */
  salesPage(collectionId: number, filter: SalesFilter, page: PageRequest, form?: undefined): Page<SaleRow>;
  salesPage(collectionId: number, filter: SalesFilter, page: PageRequest, form: WireForm): Page<Fragment>;
  salesPage(collectionId: number, filter: SalesFilter, page: PageRequest, form?: WireForm): Page<SaleRow> | Page<Fragment>;
  salesPage(collectionId: number, filter: SalesFilter, page: PageRequest, form?: WireForm): Page<SaleRow> | Page<Fragment> {
    return form === undefined ? this.#salesPageRows(collectionId, filter, page) : this.#salesPageReady(collectionId, filter, page, form);
  }

  #salesPageRows(collectionId: number, filter: SalesFilter, page: PageRequest): Page<SaleRow> {
    const columns = `c.address, ${hexSql("s.hash", "hash")}, ${hexSql("s.seller", "seller")}, ${hexSql("s.buyer", "buyer")},
        ${assetIdSql("s.")}, s.timestamp, s.block, s.price, s.amount_received, s.marketplace, s.block_hash, s.wash_flags, s.currency, s.marketplace_fee, s.royalty_fee, s.quantity`;
    const { sql, params } = pageQuery(columns, collectionId, filter, page);
    const finalized = finalizedOf(this.s, collectionId);
    const points = this.#points();
    // Set on the row read (no object made per row: a spread per row showed in the profile's garbage collection).
    const sale = (r: Row) => {
      r.finality = finalityOf(r.block as number, finalized);
      r.usd_point = points.usdAt(r.currency as string, r.timestamp as number);
      return toSale(r);
    };
    return toPage(this.s.rows(sql, params), page.limit, sale, saleKey);
  }

  /** A page's answers: its ready JSON, or binary encoded from the columns (a sale keeps its JSON only). */
  #salesPageReady(collectionId: number, filter: SalesFilter, page: PageRequest, form: WireForm): Page<Fragment> {
    if (form === "binary") return encodedWhole(this.#salesPageRows(collectionId, filter, page), (r) => saleFragment(r, form));
    // The kept JSON with the sale's finality as it is now (shared/finality.ts): every one pending on a chain with no finality
    // (the most common case: no block read at all), and its wash flags.
    const finalized = finalizedOf(this.s, collectionId);
    const { sql, params } = pageQuery("s.id, s.wire_json, s.wash_flags, s.block, s.price, s.currency, s.timestamp, s.quantity", collectionId, filter, page);
    this.#saleKey ??= this.s.prepare(`SELECT timestamp, block, ${hexSql("hash", "hash")}, ${assetIdSql("")} FROM sales WHERE id = ?`).raw();
    const key = this.#saleKey;
    const points = this.#points();
    const wire = (v: unknown[]) => {
      const currency = v[5] as string;
      const usd = usdValue(v[4] as string, currency, points.usdAt(currency, v[6] as number));
      return saleJsonWithFinality(v[1] as string | null, finalized >= 0 && (v[3] as number) <= finalized, v[2] as number, usd, String(v[7]));
    };
    const ready = readyPage(this.s.values(sql, params), page.limit, wire, (v) => key.get(v[0]) as KeyValue[]);
    return ready ?? encodedWhole(this.#salesPageRows(collectionId, filter, page), (r) => saleFragment(r, form));
  }

  /** A page's points in force, found as its rows are read newest first (prices.ts). */
  #points(): PointsInForce {
    this.#latestPoint ??= this.s.prepare(LATEST_POINT_SQL).raw();
    return new PointsInForce(this.#latestPoint);
  }

  /**
   * A collection's stats for a window, from one snapshot of the store (an
   * import committing meanwhile cannot mix its rows into the sums), in a
   * bounded number of index seeks (sales-stats.ts).
   */
  salesSummary(collectionId: number, filter: StatsFilter): SalesSummary {
    return this.#stats.summary(collectionId, filter);
  }

  /**
   * A window's stats in US dollars: of the collection, from the series'
   * dollars and the edges' sales (SalesStatsReader.usdSummary); of an asset,
   * its sales each with its point in force, summed as they are read (one
   * statement, one snapshot).
   */
  salesUsdSummary(collectionId: number, filter: StatsFilter, maxSales: number): UsdSummary | undefined {
    if (filter.assetId === undefined) return this.#stats.usdSummary(collectionId, filter, maxSales);
    const where = ["s.collection_id = ?", "s.asset_key = ?", "s.timestamp >= ?", "s.timestamp <= ?", filter.includeWash === true ? IN_WEI : CLEAN];
    const params = [collectionId, assetKey(filter.assetId), filter.since ?? 0, filter.until ?? Number.MAX_SAFE_INTEGER];
    const read = this.s.prepare(`SELECT s.marketplace, s.price, s.currency, ${usdPointSql("s")} FROM sales s INDEXED BY sales_by_asset WHERE ${where.join(" AND ")}`).raw();
    const volumes = new UsdVolumes();
    let n = 0;
    // Leaving the loop early closes the statement's iterator: the read stops at the bound's next sale.
    for (const [marketplace, price, currency, usd] of read.iterate(...params) as Iterable<[string, string, string, string | null]>) {
      if (++n > maxSales) return undefined;
      volumes.sale(marketplace, price, currency, usd);
    }
    return volumes.summary();
  }
}

// Each filter combination names its index (INDEXED BY): the index whose
// leading columns bind the most selective filter, the asset before the
// marketplace. The planner would mostly find the same with statistics
// (refreshed after every import and derive), but a store served read-only
// cannot gather them, and a wrong guess scans a whole collection
// (test/store/query-plans.test.ts checks the columns each seek binds).
/** A keyset page of sales (decisions.md's order), selecting `columns`. */
function pageQuery(columns: string, collectionId: number, filter: SalesFilter, page: PageRequest): { sql: string; params: unknown[] } {
  const where = ["s.collection_id = ?"];
  const params: unknown[] = [collectionId];
  addSalesFilter(where, params, filter, "s.");
  if (page.after) {
    // The leading "<=" bounds the index seek; the rest breaks timestamp ties,
    // so a page costs the same however deep it is.
    const [ts, block, hash, assetId] = page.after;
    where.push(`s.timestamp <= ? AND (s.timestamp < ? OR (s.timestamp = ? AND (s.block < ? OR (s.block = ?
      AND (s.hash, s.asset_key) > (?, ?)))))`);
    params.push(ts, ts, ts, block, block, hexToBytes(hash as string), assetKey(assetId as string));
  }
  params.push(page.limit + 1);
  // The collection's address only when the columns name it (a page of ready rows does not).
  const join = columns.includes("c.address") ? " JOIN collections c ON c.id = s.collection_id" : "";
  const sql = `SELECT ${columns}
    FROM sales s INDEXED BY ${salesIndex(filter)}${join}
    WHERE ${where.join(" AND ")}
    ORDER BY s.timestamp DESC, s.block DESC, s.hash, s.asset_key LIMIT ?`;
  return { sql, params };
}

function salesIndex(f: SalesFilter): string {
  if (filterAssets(f) !== undefined) return "sales_by_asset";
  if (f.marketplace !== undefined) return "sales_by_marketplace";
  return "sales_by_time";
}

function addSalesFilter(where: string[], params: unknown[], f: SalesFilter, alias: string): void {
  const assets = filterAssets(f);
  if (assets !== undefined) {
    // Several: a seek per asset, their rows then sorted (at most 20 tokens' sales).
    where.push(assets.length === 1 ? `${alias}asset_key = ?` : `${alias}asset_key IN (${assets.map(() => "?").join(", ")})`);
    for (const a of assets) params.push(assetKey(a));
  }
  if (f.marketplace !== undefined) {
    where.push(`${alias}marketplace = ?`);
    params.push(f.marketplace);
  }
  if (f.maxBlock !== undefined) {
    where.push(`${alias}block <= ?`);
    params.push(f.maxBlock);
  }
  if (f.since !== undefined) {
    where.push(`${alias}timestamp >= ?`);
    params.push(f.since);
  }
  if (f.until !== undefined) {
    where.push(`${alias}timestamp <= ?`);
    params.push(f.until);
  }
}

