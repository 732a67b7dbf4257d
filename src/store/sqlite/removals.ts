import type { Page, PageRequest } from "../ports/paging.js";
import type { RemovalsRepository, RemovedRecord } from "../ports/reads.js";
import { mergedRemovals, REMOVAL_TABLES, removedRecord } from "../shared/removals.js";
import { SALE_COLUMNS } from "./feed.js";
import type { SqliteStatements } from "./statements.js";
import { TRANSFER_COLUMNS } from "./transfers.js";

// The records taken back, by time (shared/removals.ts), on SQLite: each
// removal table one range of its time index (migration 25), from the
// page's key on.

const COLUMNS = { sales: SALE_COLUMNS, transfers: TRANSFER_COLUMNS("a") };

export class SqliteRemovalsRead implements RemovalsRepository {
  constructor(private readonly s: SqliteStatements) {}

  removalsPage(collectionId: number, kinds: readonly ("sales" | "transfers")[], page: PageRequest): Page<RemovedRecord> {
    const parts = kinds.map((kind) => {
      const table = REMOVAL_TABLES[kind];
      const where = ["a.collection_id = ?"];
      const params: unknown[] = [collectionId];
      if (page.after) {
        // The leading "<=" bounds the index seek; the rest breaks ties.
        const [ts, block, seq] = page.after;
        where.push("a.timestamp <= ? AND (a.timestamp < ? OR (a.timestamp = ? AND (a.block < ? OR (a.block = ? AND a.feed_seq < ?))))");
        params.push(ts, ts, ts, block, block, seq);
      }
      params.push(page.limit + 1);
      const sql = `SELECT a.feed_seq, a.original_seq, ${COLUMNS[kind]} FROM ${table} a INDEXED BY ${table}_by_time JOIN collections c ON c.id = a.collection_id
        WHERE ${where.join(" AND ")} ORDER BY a.timestamp DESC, a.block DESC, a.feed_seq DESC LIMIT ?`;
      return this.s.rows(sql, params).map((r) => removedRecord(kind, r));
    });
    return mergedRemovals(parts, page.limit);
  }
}
