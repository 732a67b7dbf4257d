import type { Statement } from "better-sqlite3";
import type { Db } from "./db.js";
import { assetKey } from "./asset-key.js";
import { OTHER_UNIT_SYMBOLS } from "../../domain/currencies.js";
import {
  FLAGGED, insertedOnly, newSalesAlone, PRICED_IN_WEI, RUN_MARGIN, type StoredWashSale, readsWide, tokenReadSpan, tokenSalesOf, washChanges, type WashMarks, wideReadSpan,
  windowBefore,
} from "../shared/wash-scope.js";

/** The sales the aggregates hold: those no wash rule flags (docs/wash-trades.md); sales_by_marketplace carries the flags, so its sums stay covered. */
export const CLEAN = "wash_flags = 0";
export { FLAGGED, IN_WEI } from "../shared/wash-scope.js";
/** The flagged sales of a collection by time (parameters: collection, from, to): a partial index of the few (migration 29), for what includeWash adds back. */
export const WASHED_FROM = "sales INDEXED BY sales_washed";
export const WASHED = `collection_id = ? AND ${FLAGGED} AND timestamp >= ? AND timestamp <= ?`;

// Wash flags on SQLite (shared/wash-scope.ts says what is read and why): before
// a commit, per collection marked, the run of sales around the marks by the
// time index and each marked token's sales by the asset index (or, for a
// backfill's marks, shared/wash-scope.ts readsWide, the tokens' sales out of
// one read of the collection's span), then one UPDATE per mask that changed.

// Read as arrays in the rules' order, the sales list's index read backwards
// (no sort: shared/wash-scope.ts washChanges takes them as they come, with no
// hash), the addresses as hex made by SQLite (a third of the cost of a Buffer
// per blob).
export const washColumns = (currency = "currency") => `id, asset_key, hex(seller), hex(buyer), timestamp, block, price, wash_flags, marketplace, ${currency}`;
export const WASH_COLUMNS = washColumns();
export const WASH_ORDER = "ORDER BY timestamp, block, hash DESC, asset_key DESC";

/**
 * What an evaluation reads (exported for the query-plan test): the time of
 * the RUN_MARGIN-th sale before and after the marks (an OFFSET within one
 * seek of the time index), the run by time, and a token's sales.
 */
export const WASH_SQL = {
  // Sales in wei, by their currency (a sale changed into another unit is not yet marked): the outlier rule's neighbours.
  before: `SELECT timestamp FROM sales INDEXED BY sales_by_time WHERE collection_id = ? AND timestamp < ? AND ${PRICED_IN_WEI} ORDER BY timestamp DESC LIMIT 1 OFFSET ${RUN_MARGIN - 1}`,
  after: `SELECT timestamp FROM sales INDEXED BY sales_by_time WHERE collection_id = ? AND timestamp > ? AND ${PRICED_IN_WEI} ORDER BY timestamp LIMIT 1 OFFSET ${RUN_MARGIN - 1}`,
  // Each names its index: before a commit's statistics (a bulk import's are gathered after it), the planner took the
  // time index for a token's sales, its order matching, and read the collection once per token (bench: 25x the import).
  span: `SELECT ${WASH_COLUMNS} FROM sales INDEXED BY sales_by_time WHERE collection_id = ? AND timestamp >= ? AND timestamp <= ? ${WASH_ORDER}`,
  token: `SELECT ${WASH_COLUMNS} FROM sales INDEXED BY sales_by_asset WHERE collection_id = ? AND asset_key = ? AND timestamp >= ? AND timestamp <= ? ${WASH_ORDER}`,
  // A token whose marks are all new sales (shared/wash-scope.ts newSalesAlone): its sales from a time on (the index alone),
  // and whether one in a new sale's window before it, other than itself, was sold by its buyer.
  heldFrom: "SELECT count(*) FROM sales INDEXED BY sales_by_asset WHERE collection_id = ? AND asset_key = ? AND timestamp >= ?",
  soldBy: "SELECT 1 FROM sales INDEXED BY sales_by_asset WHERE collection_id = ? AND asset_key = ? AND timestamp >= ? AND timestamp <= ? AND seller = unhex(?) AND id <> ? LIMIT 1",
  // Both questions of a token with one new sale (a live feed's usual token), in one range of the index from its window
  // on, its first hit enough: another sale at or after its time, or sold by its buyer (parameters: collection, asset key,
  // the window's start, the sale's id, its time, its buyer's bytes). Asked as the sale is written (SqliteWash.alone).
  notAlone: `SELECT 1 FROM sales INDEXED BY sales_by_asset WHERE collection_id = ? AND asset_key = ? AND timestamp >= ? AND id <> ?
    AND (timestamp >= ? OR seller = ?) LIMIT 1`,
} as const;

export type WashRead = [number, string, string, string, number, number, string, number, string, string];

export const asWashSale = (r: WashRead): StoredWashSale<number> => ({
  id: r[0], assetId: r[1].slice(2), seller: r[2], buyer: r[3], timestamp: r[4], block: r[5], hash: "", price: BigInt(r[6]), mask: r[7], marketplace: r[8],
  otherUnit: OTHER_UNIT_SYMBOLS.has(r[9]),
});

type WashStatement = "before" | "after" | "span" | "token" | "heldFrom" | "soldBy" | "notAlone" | "set";
const WASH_STATEMENTS = new WeakMap<Db, Record<WashStatement, Statement>>();

export class SqliteWash {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  get #s(): Record<WashStatement, Statement> {
    // The connection's, prepared once: group commit makes a write store (and so an evaluator) per commit.
    let statements = WASH_STATEMENTS.get(this.#db);
    if (statements === undefined) {
      const db = this.#db;
      WASH_STATEMENTS.set(db, (statements = {
        before: db.prepare(WASH_SQL.before).pluck(),
        after: db.prepare(WASH_SQL.after).pluck(),
        span: db.prepare(WASH_SQL.span).raw(),
        token: db.prepare(WASH_SQL.token).raw(),
        heldFrom: db.prepare(WASH_SQL.heldFrom).pluck(),
        soldBy: db.prepare(WASH_SQL.soldBy).pluck(),
        notAlone: db.prepare(WASH_SQL.notAlone).pluck(),
        set: db.prepare("UPDATE sales SET wash_flags = ? WHERE id = ?"),
      }));
    }
    return statements;
  }

  /**
   * Whether a new sale (its row id) is alone in its token (shared/wash-scope.ts
   * newSalesAlone, of one new sale). Its writer asks as the sale is written,
   * when the index pages it seeks are the ones its insert just wrote: asked
   * before the commit instead, the same seek cost 6.5 µs a sale against
   * about 4 (the writer's profile, a live feed's 1,000 tokens a commit).
   */
  alone(collectionId: number, key: string, sale: { id: number; timestamp: number; buyer: Uint8Array }): boolean {
    return this.#s.notAlone.get(collectionId, key, windowBefore(sale).from, sale.id, sale.timestamp, sale.buyer) === undefined;
  }

  /**
   * Evaluates the rules around every mark and writes the masks that changed;
   * `flipped` hears of each sale that became flagged or clean, with its new
   * mask (the aggregates hold clean sales only). Returns how many masks changed. The sales with an
   * id past `insertedAfter` are the transaction's own (undefined: none known).
   */
  evaluate(marks: Map<number, WashMarks>, flipped: (collectionId: number, sale: StoredWashSale<number>, mask: number) => void, insertedAfter?: number): number {
    let changed = 0;
    for (const [collectionId, m] of marks) {
      const s = this.#s;
      const lo = s.before.get(collectionId, m.span.from) as number | undefined;
      const hi = s.after.get(collectionId, m.span.to) as number | undefined;
      const complete = { first: lo === undefined, last: hi === undefined };
      const runFrom = lo ?? Number.MIN_SAFE_INTEGER;
      const runTo = hi ?? Number.MAX_SAFE_INTEGER;
      let tokens = new Map<string, StoredWashSale<number>[]>();
      let run: StoredWashSale<number>[];
      if (readsWide(m)) {
        const wide = wideReadSpan(m, runFrom, runTo);
        const all = (s.span.all(collectionId, wide.from, wide.to) as WashRead[]).map(asWashSale);
        run = all.filter((x) => x.timestamp >= runFrom && x.timestamp <= runTo);
        tokens = tokenSalesOf(m, all);
      } else {
        run = (s.span.all(collectionId, runFrom, runTo) as WashRead[]).map(asWashSale);
        // A live feed's tokens: a seek of the index each (for one new sale, asked as it was written), rather than their
        // months of sales read (bench:ingest).
        if (insertedAfter !== undefined) {
          for (const [assetId, sales] of insertedOnly(m, run, (x) => x.id > insertedAfter)) {
            const key = assetKey(assetId);
            let alone: boolean;
            if (sales.length === 1) {
              const x = sales[0]!;
              alone = m.tokens.get(assetId)!.alone ?? this.alone(collectionId, key, { id: x.id, timestamp: x.timestamp, buyer: Buffer.from(x.buyer, "hex") });
            } else {
              alone = newSalesAlone(sales, (from) => s.heldFrom.get(collectionId, key, from) as number,
                (x, w) => s.soldBy.get(collectionId, key, w.from, w.to, x.buyer, x.id) !== undefined);
            }
            if (alone) tokens.set(assetId, sales);
          }
        }
        for (const [assetId, span] of m.tokens) {
          if (tokens.has(assetId)) continue;
          const read = tokenReadSpan(span);
          tokens.set(assetId, (s.token.all(collectionId, assetKey(assetId), read.from, read.to) as WashRead[]).map(asWashSale));
        }
      }
      for (const [sale, mask] of washChanges(m, { sales: run, complete }, tokens)) {
        s.set.run(mask, sale.id);
        if ((sale.mask === 0) !== (mask === 0)) flipped(collectionId, sale, mask);
        changed++;
      }
    }
    return changed;
  }
}
