import type { Statement } from "better-sqlite3";
import { PRICED_AS } from "../../domain/money.js";
import { POINT_IN_FORCE_SECONDS } from "../shared/prices.js";
import type { PricesRepository } from "../ports/market.js";
import type { SqliteStatements } from "./statements.js";

// Migration 32 (docs/money.md): price points, a token's USD price by
// minute, read by shared/prices.ts usdPointSql (the key is its seek) and,
// for the sales lists, by PointsInForce.
export const PRICE_POINTS_SCHEMA = `
  CREATE TABLE price_points (
    currency TEXT NOT NULL,
    minute INTEGER NOT NULL,
    usd TEXT NOT NULL,
    PRIMARY KEY (currency, minute)
  ) WITHOUT ROWID;`;

/** The latest point of a token at or before a time: one seek of the key, however old (whether it is in force is the caller's test). */
export const LATEST_POINT_SQL = "SELECT minute, usd FROM price_points WHERE currency = ? AND minute <= ? ORDER BY minute DESC LIMIT 1";

/** The next point of a token after a minute: one seek of the key. */
export const NEXT_POINT_SQL = "SELECT minute FROM price_points WHERE currency = ? AND minute > ? ORDER BY minute LIMIT 1";

/**
 * The point in force for each sale of a page read newest first (the sales
 * lists' order), with one seek per point the page meets rather than one per
 * sale (a correlated seek per row was a third of the cold sales list's added
 * cost, docs/benchmarks.md). A sale at or after the latest point found for a
 * newer sale has that point too: no point lies between them. Its being in
 * force (no older than a day) is tested per sale. Any order is answered
 * right; another order only seeks more. Given `next` (the writer's: sales
 * written oldest first), a point found is also known to hold up to the
 * next point, so sales written in time order seek once per point too.
 */
export class PointsInForce {
  /**
   * Per priced-as symbol, the last point found: its minute (-Infinity: none
   * at or before), its usd, and the time it was sought at (it is the latest
   * point of every time from its minute to that one).
   */
  readonly #found = new Map<string, { minute: number; usd: string | null; soughtAt: number }>();

  constructor(private readonly latest: Statement, private readonly next?: Statement) {}

  /** Forgets the points found: a point was written (or a write rolled back). */
  forget(): void {
    this.#found.clear();
  }

  /** The usd of the point in force for a sale in `currency` at `timestamp`, or null. */
  usdAt(currency: string, timestamp: number): string | null {
    const as = PRICED_AS.get(currency) ?? currency;
    let point = this.#found.get(as);
    if (point === undefined || timestamp < point.minute || timestamp > point.soughtAt) {
      const row = this.latest.get(as, timestamp) as [number, string] | undefined;
      point = row === undefined ? { minute: -Infinity, usd: null, soughtAt: timestamp } : { minute: row[0], usd: row[1], soughtAt: timestamp };
      if (this.next !== undefined) {
        // The latest point of every time up to the next one's minute (or of every later time: there is none).
        const next = this.next.get(as, row === undefined ? Number.MIN_SAFE_INTEGER : row[0]) as number | undefined;
        point.soughtAt = next === undefined ? Number.POSITIVE_INFINITY : next - 1;
      }
      this.#found.set(as, point);
    }
    return point.minute > timestamp - POINT_IN_FORCE_SECONDS ? point.usd : null;
  }
}

/** Price points read on their own (the orders' amounts in USD). */
export class SqlitePrices implements PricesRepository {
  constructor(private readonly s: SqliteStatements) {}

  pointsInForce(symbols: readonly string[], at: number): Map<string, string | null> {
    // Synchronous reads on one connection: no write lands between the seeks. The rule of a point in force is PointsInForce's.
    const points = new PointsInForce(this.s.prepare(LATEST_POINT_SQL).raw());
    return new Map(symbols.map((symbol) => [symbol, points.usdAt(symbol, at)]));
  }
}
