import type { Page, PageRequest } from "../ports/paging.js";
import type { RemovalsRepository, RemovedRecord } from "../ports/reads.js";
import { mergedRemovals, REMOVAL_TABLES, REMOVAL_TIME, removedRecord } from "../shared/removals.js";
import type { RemovableKind } from "../ports/feed.js";
import { LISTING_COLUMNS, OFFER_COLUMNS, SALE_COLUMNS } from "./feed.js";
import type { SqliteStatements } from "./statements.js";
import { TRANSFER_COLUMNS } from "./transfers.js";

// The records taken back, by time (shared/removals.ts), on SQLite: each
// removal table one range of its time index (migrations 25 and 28), from
// the page's key on.

const COLUMNS: Readonly<Record<RemovableKind, string>> = { sales: SALE_COLUMNS, transfers: TRANSFER_COLUMNS("a"), listings: LISTING_COLUMNS, offers: OFFER_COLUMNS };

export class SqliteRemovalsRead implements RemovalsRepository {
  constructor(private readonly s: SqliteStatements) {}

  removalsPage(collectionId: number, kinds: readonly RemovableKind[], page: PageRequest): Page<RemovedRecord> {
    const parts = kinds.map((kind) => {
      const table = REMOVAL_TABLES[kind];
      const time = `a.${REMOVAL_TIME[kind]}`;
      const where = ["a.collection_id = ?"];
      const params: unknown[] = [collectionId];
      if (page.after) {
        // The leading "<=" bounds the index seek; the rest breaks ties.
        const [ts, block, seq] = page.after;
        where.push(`${time} <= ? AND (${time} < ? OR (${time} = ? AND (a.block < ? OR (a.block = ? AND a.feed_seq < ?))))`);
        params.push(ts, ts, ts, block, block, seq);
      }
      params.push(page.limit + 1);
      const sql = `SELECT a.feed_seq, a.original_seq, ${COLUMNS[kind]} FROM ${table} a INDEXED BY ${table}_by_time JOIN collections c ON c.id = a.collection_id
        WHERE ${where.join(" AND ")} ORDER BY ${time} DESC, a.block DESC, a.feed_seq DESC LIMIT ?`;
      return this.s.rows(sql, params).map((r) => removedRecord(kind, r));
    });
    return mergedRemovals(parts, page.limit);
  }
}
