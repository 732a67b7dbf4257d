import { FLAGGED, IN_WEI } from "../shared/wash-scope.js";
import { type UsdSummary, usdValue, UsdVolumes } from "../../domain/money.js";
import { usdPointSql } from "../shared/prices.js";
import { usdWindowParts } from "../shared/usd-window.js";
import { type SaleRow, type SalesSummary, summarize } from "../../domain/rows.js";
import type { PgQueries } from "./statements.js";
import { hexSql, hexToBytes } from "./hex.js";
import { type Page, type PageRequest, toPage } from "../ports/paging.js";
import { filterAssets, type SalesFilter, type SalesRepository, type StatsFilter } from "../ports/reads.js";
import { BUCKET_SECONDS } from "../shared/sales-buckets.js";
import { saleKey, toSale } from "../shared/rows.js";
import { encodedWhole, readyPage } from "../shared/wire-rows.js";
import { finalitySql, finalizedOfCollection } from "../shared/finality.js";
import { type Fragment, saleFragment, saleJsonWithFinality, type WireForm } from "../../domain/wire/fragments.js";

// Sales on PostgreSQL: the same order and keyset pages as SQLite's, and a
// window's stats in ONE statement (one snapshot, one round trip): per
// marketplace, found by a loose index scan of sales_hourly, the running
// totals at two instants, each the last hour row before the instant's hour
// plus the raw sales of that hour up to it (store/sqlite/sales-stats.ts has the
// reasoning). Sums are numeric: exact for any amount.

const SALE_COLUMNS = `c.address, ${hexSql("s.hash", "hash")}, ${hexSql("s.seller", "seller")}, ${hexSql("s.buyer", "buyer")},
  s.asset_id::text AS asset_id, s.timestamp, s.block, s.price::text AS price,
  s.amount_received::text AS amount_received, s.marketplace, ${hexSql("s.block_hash", "block_hash")},
  ${finalitySql("s.block", finalizedOfCollection("$1"))} AS finality, s.wash_flags, s.currency, s.marketplace_fee, s.royalty_fee, s.quantity, ${usdPointSql("s")}`;

/** The totals of one marketplace's sales at or before an instant: $hour (its hour) and $from..$to (that hour up to it). */
const atOrBefore = (hour: string, from: string, to: string) => `
  SELECT coalesce(run.n, 0) + edge.n AS n, coalesce(run.v, 0) + edge.v AS v
  FROM (SELECT 1) one
  LEFT JOIN LATERAL (
    SELECT h.cum_num_sales AS n, h.cum_volume AS v FROM sales_hourly h
    WHERE h.collection_id = $1 AND h.marketplace = m.marketplace AND h.hour < ${hour}
    ORDER BY h.hour DESC LIMIT 1) run ON true
  CROSS JOIN LATERAL (
    SELECT count(*) AS n, coalesce(sum(s.price), 0) AS v FROM sales s
    WHERE s.collection_id = $1 AND s.marketplace = m.marketplace AND s.timestamp >= ${from} AND s.timestamp <= ${to} AND s.wash_flags = 0) edge`;

/** The collection's ($1) marketplaces as m(marketplace), found by a loose index scan of sales_hourly (one NULL row closes it). */
const MARKETPLACES_CTE = `m(marketplace) AS (
    SELECT min(marketplace) FROM sales_hourly WHERE collection_id = $1
    UNION ALL
    SELECT (SELECT min(h.marketplace) FROM sales_hourly h WHERE h.collection_id = $1 AND h.marketplace > m.marketplace)
    FROM m WHERE m.marketplace IS NOT NULL)`;

export const PG_WINDOW_STATS_SQL = `
  WITH RECURSIVE ${MARKETPLACES_CTE}
  SELECT m.marketplace, (up.n - lo.n)::int AS n, (up.v - lo.v)::text AS v
  FROM m
  CROSS JOIN LATERAL (${atOrBefore("$2", "$3", "$4")}) up
  CROSS JOIN LATERAL (${atOrBefore("$5", "$6", "$7")}) lo
  WHERE m.marketplace IS NOT NULL`;

/**
 * The collection's ($1) sales with timestamp <= $3 counted from the running
 * totals ($4: the hour of $3, $5: its start), and its sales after $2 up to
 * $3 in the model's order, in one statement (one snapshot). A count of the
 * raw sales cost what the collection's history holds, every round of the
 * background derive; this costs its marketplaces and the last hour's
 * sales.
 */
export const PG_SALES_SINCE_SQL = `
  WITH RECURSIVE ${MARKETPLACES_CTE},
  t AS (SELECT coalesce(sum(up.n), 0)::int AS total FROM m CROSS JOIN LATERAL (${atOrBefore("$4", "$5", "$3")}) up WHERE m.marketplace IS NOT NULL)
  SELECT t.total, s.* FROM t LEFT JOIN LATERAL (
    SELECT s.asset_id::text AS asset_id, s.timestamp, s.price::text AS price, '0x' || encode(s.buyer, 'hex') AS buyer
    FROM sales s WHERE s.collection_id = $1 AND s.timestamp > $2 AND s.timestamp <= $3 AND s.wash_flags = 0
    ORDER BY s.timestamp, s.block, s.hash, s.asset_id) s ON true`;

/** PG_SALES_SINCE_SQL's parameters. */
export function salesSinceValues(collectionId: number, after: number, until: number): number[] {
  const [hour, from, to] = instant(until);
  return [collectionId, after, to, hour, from];
}

/** One asset's sales in [$3, $4] by marketplace; $5: wash trades counted too (docs/wash-trades.md). */
export const PG_ASSET_STATS_SQL = `
  SELECT marketplace, count(*)::int AS n, sum(price)::text AS v FROM sales
  WHERE collection_id = $1 AND asset_id = $2 AND timestamp >= $3 AND timestamp <= $4 AND (wash_flags = 0 OR $5 AND ${IN_WEI})
  GROUP BY marketplace`;

/**
 * PG_WINDOW_STATS_SQL and, by marketplace, the collection's flagged sales in
 * [$8, $9]: what includeWash adds to the aggregates' figures (clean sales),
 * in one statement (one snapshot), by sales_washed (migration 29).
 */
export const PG_WINDOW_WITH_WASH_SQL = `${PG_WINDOW_STATS_SQL}
  UNION ALL
  SELECT marketplace, count(*)::int AS n, sum(price)::text AS v FROM sales
  WHERE collection_id = $1 AND ${FLAGGED} AND timestamp >= $8 AND timestamp <= $9
  GROUP BY marketplace`;

/** Past every timestamp the API accepts (and within bigint). */
const END_OF_TIME = Number.MAX_SAFE_INTEGER;

/** The parameters of atOrBefore for instant t: everything for undefined, nothing for t < 0. */
function instant(t: number | undefined): [number, number, number] {
  if (t === undefined) return [Math.floor(END_OF_TIME / BUCKET_SECONDS) + 1, 1, 0];
  if (t < 0) return [-1, 1, 0];
  const hour = Math.floor(t / BUCKET_SECONDS);
  return [hour, hour * BUCKET_SECONDS, t];
}

/** A keyset page of sales (decisions.md's order), selecting `columns`. */
function pageQuery(columns: string, collectionId: number, filter: SalesFilter, page: PageRequest): { sql: string; values: unknown[] } {
  const values: unknown[] = [collectionId];
  const $ = (v: unknown) => `$${values.push(v)}`;
  const where = ["s.collection_id = $1"];
  const assets = filterAssets(filter);
  if (assets !== undefined) where.push(assets.length === 1 ? `s.asset_id = ${$(assets[0])}` : `s.asset_id IN (${assets.map((a) => $(a)).join(", ")})`);
  if (filter.marketplace !== undefined) where.push(`s.marketplace = ${$(filter.marketplace)}`);
  if (filter.maxBlock !== undefined) where.push(`s.block <= ${$(filter.maxBlock)}`);
  if (filter.since !== undefined) where.push(`s.timestamp >= ${$(filter.since)}`);
  if (filter.until !== undefined) where.push(`s.timestamp <= ${$(filter.until)}`);
  if (page.after) {
    const [ts, block, hash, assetId] = page.after;
    const t = $(ts);
    const b = $(block);
    where.push(`s.timestamp <= ${t} AND (s.timestamp < ${t} OR s.block < ${b} OR (s.block = ${b}
      AND (s.hash, s.asset_id) > (${$(hexToBytes(hash as string))}, ${$(assetId)})))`);
  }
  // The collection's address only when the columns name it (a page of ready rows does not).
  // The collection's address only when the columns name it (a page of ready rows does not).
  const join = columns.includes("c.address") ? " JOIN collections c ON c.id = s.collection_id" : "";
  const sql = `SELECT ${columns} FROM sales s${join}
     WHERE ${where.join(" AND ")}
     ORDER BY s.timestamp DESC, s.block DESC, s.hash, s.asset_id LIMIT ${$(page.limit + 1)}`;
  return { sql, values };
}

export class PgSales implements SalesRepository {
  constructor(private readonly q: PgQueries) {}

  /** The page as rows, or, given a form, as each row's ready answer in it (domain/wire/fragments.ts). */
  salesPage(collectionId: number, filter: SalesFilter, page: PageRequest, form?: undefined): Promise<Page<SaleRow>>;
  salesPage(collectionId: number, filter: SalesFilter, page: PageRequest, form: WireForm): Promise<Page<Fragment>>;
  salesPage(collectionId: number, filter: SalesFilter, page: PageRequest, form?: WireForm): Promise<Page<SaleRow> | Page<Fragment>>;
  salesPage(collectionId: number, filter: SalesFilter, page: PageRequest, form?: WireForm): Promise<Page<SaleRow> | Page<Fragment>> {
    return form === undefined ? this.#salesPageRows(collectionId, filter, page) : this.#salesPageReady(collectionId, filter, page, form);
  }

  async #salesPageRows(collectionId: number, filter: SalesFilter, page: PageRequest): Promise<Page<SaleRow>> {
    const { sql, values } = pageQuery(SALE_COLUMNS, collectionId, filter, page);
    return toPage(await this.q.rows(sql, values), page.limit, toSale, saleKey);
  }

  /** A page's answers: its ready JSON, or binary encoded from the columns (a sale keeps its JSON only). */
  async #salesPageReady(collectionId: number, filter: SalesFilter, page: PageRequest, form: WireForm): Promise<Page<Fragment>> {
    if (form === "binary") return encodedWhole(await this.#salesPageRows(collectionId, filter, page), (r) => saleFragment(r, form));
    // Each row's key comes with it: a second round trip for the last row's would cost more than its four values.
    // The kept JSON with the sale's finality as it is now (shared/finality.ts).
    const columns = `${hexSql("s.hash", "hash")}, s.asset_id::text AS asset_id, s.timestamp, s.block,
      s.wire_json AS wire, s.wash_flags AS wash, ${finalizedOfCollection("$1")} AS finalized, s.price::text AS price, s.currency, ${usdPointSql("s")}, s.quantity::text AS quantity`;
    const { sql, values } = pageQuery(columns, collectionId, filter, page);
    type Ready = { hash: string; asset_id: string; timestamp: string; block: string; wire: string | null; wash: number; finalized: string; price: string; currency: string; usd_point: string | null; quantity: string };
    const rows = await this.q.rows<Ready>(sql, values);
    const wire = (r: Ready) => saleJsonWithFinality(r.wire, Number(r.block) <= Number(r.finalized), r.wash, usdValue(r.price, r.currency, r.usd_point), r.quantity);
    const ready = readyPage(rows, page.limit, wire, (r) => [Number(r.timestamp), Number(r.block), r.hash, r.asset_id]);
    return ready ?? encodedWhole(await this.#salesPageRows(collectionId, filter, page), (r) => saleFragment(r, form));
  }

  async salesSummary(collectionId: number, filter: StatsFilter): Promise<SalesSummary> {
    type Row = { marketplace: string; n: number; v: string };
    const includeWash = filter.includeWash === true;
    if (filter.assetId !== undefined) {
      const rows = await this.q.rows<Row>(PG_ASSET_STATS_SQL, [collectionId, filter.assetId, filter.since ?? 0, filter.until ?? END_OF_TIME, includeWash]);
      return summarize(rows.map((r) => [r.marketplace, { n: r.n, volume: BigInt(r.v) }]));
    }
    const window = [collectionId, ...instant(filter.until), ...instant(filter.since === undefined ? -1 : filter.since - 1)];
    // With includeWash, the aggregates' figures (clean sales) and the window's flagged sales, summed per marketplace.
    const rows = includeWash
      ? await this.q.rows<Row>(PG_WINDOW_WITH_WASH_SQL, [...window, filter.since ?? 0, filter.until ?? END_OF_TIME])
      : await this.q.rows<Row>(PG_WINDOW_STATS_SQL, window);
    const totals = new Map<string, { n: number; volume: bigint }>();
    for (const r of rows) {
      const t = totals.get(r.marketplace) ?? { n: 0, volume: 0n };
      totals.set(r.marketplace, { n: t.n + r.n, volume: t.volume + BigInt(r.v) });
    }
    return summarize([...totals]);
  }

  /**
   * A window's stats in US dollars, in one statement: of the collection, its
   * whole days and hours from the series' dollars and its edges' sales (and
   * flagged ones, with includeWash) at their points (shared/usd-window.ts);
   * of an asset, its sales at their points. Sums exact in numeric, by
   * marketplace and token.
   */
  async salesUsdSummary(collectionId: number, filter: StatsFilter, maxSales: number): Promise<UsdSummary | undefined> {
    type Row = { marketplace: string; currency: string; n: number; unpriced: number; v: string | null; kept: boolean };
    const since = filter.since ?? 0;
    const until = filter.until ?? END_OF_TIME;
    let rows: Row[];
    if (filter.assetId !== undefined) {
      rows = await this.q.rows<Row>(PG_USD_STATS_SQL(true), [collectionId, since, until, filter.includeWash === true, maxSales + 1, filter.assetId]);
    } else {
      const parts = usdWindowParts(since, until);
      rows = await this.q.rows<Row>(PG_USD_WINDOW_SQL, [collectionId, parts.kept.map((p) => p.span), parts.kept.map((p) => p.from), parts.kept.map((p) => p.to),
        parts.raw.map((r) => r.from), parts.raw.map((r) => r.to), filter.includeWash === true, since, until, maxSales + 1]);
    }
    if (rows.filter((r) => !r.kept).reduce((n, r) => n + r.n, 0) > maxSales) return undefined;
    const volumes = new UsdVolumes();
    // The series' dollars are exact at a sale of 18 decimals' scale (money.ts exactUsd), as ETH's; the raw sums a numeric product.
    for (const r of rows) volumes.add(r.marketplace, r.kept ? "ETH" : r.currency, r.n, r.unpriced, r.kept ? BigInt(r.v ?? 0) : r.v);
    return volumes.summary();
  }
}

/**
 * A window's sales ($1 collection, [$2, $3], $4: flagged ones too, $6: the
 * asset, if `asset`), at most $5 of them (the caller's bound and one: more
 * is refused, so no point is sought past it), with their points in force,
 * summed by marketplace and token.
 */
const PG_USD_STATS_SQL = (asset: boolean) => `
  SELECT marketplace, currency, count(*)::int AS n, (count(*) - count(usd_point))::int AS unpriced, sum(price * usd_point::numeric)::text AS v
  FROM (SELECT w.marketplace, w.currency, w.price, ${usdPointSql("w")} FROM (SELECT s.marketplace, s.currency, s.price, s.timestamp FROM sales s
    WHERE s.collection_id = $1 AND s.timestamp >= $2 AND s.timestamp <= $3 AND (s.wash_flags = 0 OR $4 AND ${IN_WEI})${asset ? " AND s.asset_id = $6" : ""} LIMIT $5) w) x
  GROUP BY marketplace, currency`;

/**
 * A collection's window in US dollars ($1): the series' dollars of each
 * of its marketplaces in the parts ($2 spans, [$3, $4) buckets), and at most
 * $10 raw sales at their points: the clean ones of the edges ([$5, $6]
 * inclusive) and, if $7, the flagged ones of [$8, $9].
 */
const PG_USD_WINDOW_SQL = `
  WITH RECURSIVE mk(name) AS (
    -- The collection's marketplaces in its series: a loose index scan, one seek each.
    (SELECT marketplace FROM sales_series WHERE collection_id = $1 AND marketplace > '' ORDER BY marketplace LIMIT 1)
    UNION ALL
    SELECT (SELECT t.marketplace FROM sales_series t WHERE t.collection_id = $1 AND t.marketplace > mk.name ORDER BY t.marketplace LIMIT 1)
    FROM mk WHERE mk.name IS NOT NULL)
  -- A row per marketplace and part (added up by the caller: a GROUP BY here sorted them).
  SELECT mk.name AS marketplace, 'ETH' AS currency, k.num_sales::int AS n, k.unpriced::int AS unpriced, k.volume_usd::text AS v, true AS kept
  FROM mk CROSS JOIN unnest($2::int[], $3::bigint[], $4::bigint[]) p(span, lo, hi)
  -- Summed in the lateral (an aggregate is not pulled up into a join): one seek of each marketplace's intervals per part.
  CROSS JOIN LATERAL (SELECT sum(t.num_sales) AS num_sales, sum(t.unpriced) AS unpriced, sum(t.volume_usd) AS volume_usd FROM sales_series t
    WHERE t.collection_id = $1 AND t.marketplace = mk.name AND t.span = p.span AND t.bucket >= p.lo AND t.bucket < p.hi) k
  WHERE mk.name IS NOT NULL AND k.num_sales IS NOT NULL
  UNION ALL
  SELECT marketplace, currency, count(*)::int, (count(*) - count(usd_point))::int, sum(price * usd_point::numeric)::text, false
  FROM (SELECT w.marketplace, w.currency, w.price, ${usdPointSql("w")} FROM (
    SELECT s.marketplace, s.currency, s.price, s.timestamp FROM unnest($5::bigint[], $6::bigint[]) e(lo, hi)
      CROSS JOIN LATERAL (SELECT * FROM sales s WHERE s.collection_id = $1 AND s.timestamp >= e.lo AND s.timestamp <= e.hi AND s.wash_flags = 0) s
    UNION ALL
    SELECT s.marketplace, s.currency, s.price, s.timestamp FROM sales s WHERE $7 AND s.collection_id = $1 AND ${FLAGGED} AND s.timestamp >= $8 AND s.timestamp <= $9
    LIMIT $10) w) x
  GROUP BY marketplace, currency`;
