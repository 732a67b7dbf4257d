import { PRICED_AS } from "../../domain/money.js";

// The price point in force for a sale (docs/money.md), read beside its
// columns by both engines: its token's (ETH's for WETH and Blur's pool ETH)
// latest point at or before the sale's time, no older than a day. One seek
// of the points' key (currency, minute) per sale read.

/** How old a point may be and still be in force: a day. */
export const POINT_IN_FORCE_SECONDS = 86_400;

/** The symbol a sale's points are read under (alias `a`'s currency), as SQL. */
function pricedAs(alias: string): string {
  const mapped = [...PRICED_AS].filter(([symbol, as]) => symbol !== as);
  return `CASE ${alias}.currency ${mapped.map(([symbol, as]) => `WHEN '${symbol}' THEN '${as}'`).join(" ")} ELSE ${alias}.currency END`;
}

/** The usd of the point in force for the sale of alias `a` (its currency and timestamp), or null, named `as`. */
export function usdPointSql(alias: string, as = "usd_point"): string {
  return `(SELECT p.usd FROM price_points p WHERE p.currency = ${pricedAs(alias)} AND p.minute <= ${alias}.timestamp
    AND p.minute > ${alias}.timestamp - ${POINT_IN_FORCE_SECONDS} ORDER BY p.minute DESC LIMIT 1) AS ${as}`;
}
