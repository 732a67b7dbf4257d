import type { Statement } from "better-sqlite3";
import type { Db } from "./db.js";
import { assetKey } from "./asset-key.js";
import { washFlagsOf } from "../../domain/wash.js";
import { RUN_MARGIN, type StoredWashSale, TOKEN_SEEKS_UP_TO, tokenReadSpan, tokenSalesOf, washChanges, type WashMarks, wideReadSpan } from "../shared/wash-scope.js";

// Wash flags on SQLite (shared/wash-scope.ts says what is read and why): before
// a commit, per collection marked, the run of sales around the marks by the
// time index and each marked token's sales by the asset index (or, past
// TOKEN_SEEKS_UP_TO tokens, the tokens' sales out of one read of the
// collection's span), then one UPDATE per mask that changed.

const COLUMNS = "id, substr(asset_key, 3) AS assetId, seller, buyer, timestamp, block, hash, price, wash_flags AS mask";

type Read = Omit<StoredWashSale<number>, "seller" | "buyer" | "hash" | "price"> & { seller: Buffer; buyer: Buffer; hash: Buffer; price: string };

const asWashSale = (r: Read): StoredWashSale<number> => ({
  ...r, seller: r.seller.toString("hex"), buyer: r.buyer.toString("hex"), hash: r.hash.toString("hex"), price: BigInt(r.price),
});

export class SqliteWash {
  readonly #db: Db;
  #statements: Record<"before" | "after" | "span" | "token" | "set", Statement> | undefined;

  constructor(db: Db) {
    this.#db = db;
  }

  get #s() {
    return (this.#statements ??= {
      before: this.#db.prepare(`SELECT timestamp FROM sales WHERE collection_id = ? AND timestamp < ? ORDER BY timestamp DESC LIMIT 1 OFFSET ${RUN_MARGIN - 1}`).pluck(),
      after: this.#db.prepare(`SELECT timestamp FROM sales WHERE collection_id = ? AND timestamp > ? ORDER BY timestamp LIMIT 1 OFFSET ${RUN_MARGIN - 1}`).pluck(),
      span: this.#db.prepare(`SELECT ${COLUMNS} FROM sales WHERE collection_id = ? AND timestamp >= ? AND timestamp <= ?`),
      token: this.#db.prepare(`SELECT ${COLUMNS} FROM sales WHERE collection_id = ? AND asset_key = ? AND timestamp >= ? AND timestamp <= ?`),
      set: this.#db.prepare("UPDATE sales SET wash_flags = ? WHERE id = ?"),
    });
  }

  /** Evaluates the rules around every mark and writes the masks that changed: how many. */
  evaluate(marks: Map<number, WashMarks>): number {
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
      if (m.tokens.size > TOKEN_SEEKS_UP_TO) {
        const wide = wideReadSpan(m, runFrom, runTo);
        const all = (s.span.all(collectionId, wide.from, wide.to) as Read[]).map(asWashSale);
        run = all.filter((x) => x.timestamp >= runFrom && x.timestamp <= runTo);
        tokens = tokenSalesOf(m, all);
      } else {
        run = (s.span.all(collectionId, runFrom, runTo) as Read[]).map(asWashSale);
        for (const [assetId, span] of m.tokens) {
          const read = tokenReadSpan(span);
          tokens.set(assetId, (s.token.all(collectionId, assetKey(assetId), read.from, read.to) as Read[]).map(asWashSale));
        }
      }
      for (const [id, mask] of washChanges(m, { sales: run, complete }, tokens)) {
        s.set.run(mask, id);
        changed++;
      }
    }
    return changed;
  }
}

/**
 * Migration 29: every sale's wash flags, and a removed sale's as it had them
 * (a removal keeps what its feed answers). The backfill reads one
 * collection's sales at a time and writes the masks the rules give the whole
 * of it (domain/wash.ts washFlagsOf): the same answer as the writes'.
 */
export function washFlagsMigration(db: Db): void {
  db.exec(`
    ALTER TABLE sales ADD COLUMN wash_flags INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sale_removals ADD COLUMN wash_flags INTEGER NOT NULL DEFAULT 0;
  `);
  const read = db.prepare(`SELECT ${COLUMNS} FROM sales WHERE collection_id = ?`);
  const set = db.prepare("UPDATE sales SET wash_flags = ? WHERE id = ?");
  for (const c of db.prepare("SELECT DISTINCT collection_id FROM sales").pluck().all() as number[]) {
    const sales = (read.all(c) as Read[]).map(asWashSale);
    for (const [id, mask] of washFlagsOf(sales)) if (mask !== 0) set.run(mask, id);
  }
}
