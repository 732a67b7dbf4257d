import type { PricesRepository } from "../ports/market.js";
import { POINT_IN_FORCE_SECONDS } from "../shared/prices.js";
import type { PgQueries } from "./statements.js";

// Migration 32 (docs/money.md): price points, as SQLite's (its usd kept as
// the decimal text it was sent, so both engines answer the same cents).
export const PRICE_POINTS_SCHEMA = `
  CREATE TABLE price_points (
    currency text NOT NULL,
    minute bigint NOT NULL,
    usd text NOT NULL,
    PRIMARY KEY (currency, minute)
  );`;

/** Price points read on their own (the orders' amounts in USD): every symbol's seek in one statement, one snapshot. */
export class PgPrices implements PricesRepository {
  constructor(private readonly q: PgQueries) {}

  async pointsInForce(symbols: readonly string[], at: number): Promise<Map<string, string | null>> {
    const rows = await this.q.rows<{ symbol: string; usd: string | null }>(
      `SELECT s.symbol, (SELECT p.usd FROM price_points p WHERE p.currency = s.symbol AND p.minute <= $2
         AND p.minute > $2 - ${POINT_IN_FORCE_SECONDS} ORDER BY p.minute DESC LIMIT 1) AS usd
       FROM unnest($1::text[]) AS s(symbol)`,
      [symbols, at],
    );
    return new Map(rows.map((r) => [r.symbol, r.usd]));
  }
}
