import { PRICED_AS, USD_SUM_FACTORS } from "../../domain/money.js";

// The price point in force for a sale (docs/money.md), read beside its
// columns by both engines: its token's (ETH's for WETH and Blur's pool ETH)
// latest point at or before the sale's time, no older than a day. One seek
// of the points' key (currency, minute) per sale read.

/** How old a point may be and still be in force: a day. */
export const POINT_IN_FORCE_SECONDS = 86_400;

/** The symbol a sale's points are read under (alias `a`'s currency), as SQL. */
export function pricedAsSql(alias: string): string {
  const mapped = [...PRICED_AS].filter(([symbol, as]) => symbol !== as);
  return `CASE ${alias}.currency ${mapped.map(([symbol, as]) => `WHEN '${symbol}' THEN '${as}'`).join(" ")} ELSE ${alias}.currency END`;
}

/** The usd of the point in force for the sale of alias `a` (its currency and timestamp), or null: a scalar subquery. */
export function usdPointOf(alias: string): string {
  return `(SELECT p.usd FROM price_points p WHERE p.currency = ${pricedAsSql(alias)} AND p.minute <= ${alias}.timestamp
    AND p.minute > ${alias}.timestamp - ${POINT_IN_FORCE_SECONDS} ORDER BY p.minute DESC LIMIT 1)`;
}

/** usdPointOf named `as`. */
export function usdPointSql(alias: string, as = "usd_point"): string {
  return `${usdPointOf(alias)} AS ${as}`;
}

/**
 * An amount of the sale of alias `a` (`amount`: its price) at `usd` (SQL
 * text of a point's usd, or NULL), exact at the kept sums' scale (money.ts
 * exactUsd): PostgreSQL's numeric, NULL without a point.
 */
export function exactUsdSql(alias: string, usd: string, amount = `${alias}.price`): string {
  const factors = [...USD_SUM_FACTORS].filter(([, f]) => f !== USD_SUM_FACTORS.get("ETH"));
  const factor = factors.length === 0 ? String(USD_SUM_FACTORS.get("ETH")) : `CASE ${alias}.currency ${factors.map(([symbol, f]) => `WHEN '${symbol}' THEN ${f}`).join(" ")} ELSE ${USD_SUM_FACTORS.get("ETH")} END`;
  // An integer (a point's usd has at most 12 fractional digits): round() only drops the scale numeric carries, so that it reads as one.
  return `round(${amount} * (${usd})::numeric * ${factor})`;
}
