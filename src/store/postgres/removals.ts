import type { Page, PageRequest } from "../ports/paging.js";
import type { RemovalsRepository, RemovedRecord } from "../ports/reads.js";
import { mergedRemovals, REMOVAL_TABLES, REMOVAL_TIME, removedRecord } from "../shared/removals.js";
import type { RemovableKind } from "../ports/feed.js";
import { LISTING_COLUMNS, OFFER_COLUMNS, SALE_COLUMNS } from "./feed.js";
import type { PgQueries } from "./statements.js";
import { TRANSFER_COLUMNS } from "./transfers.js";

// The records taken back, by time (shared/removals.ts), on PostgreSQL, as
// SQLite's removals.ts: each removal table one range of its time index
// (migrations 25 and 28), from the page's key on.

const COLUMNS: Readonly<Record<RemovableKind, string>> = { sales: SALE_COLUMNS, transfers: TRANSFER_COLUMNS("a"), listings: LISTING_COLUMNS, offers: OFFER_COLUMNS };

export class PgRemovalsRead implements RemovalsRepository {
  constructor(private readonly q: PgQueries) {}

  async removalsPage(collectionId: number, kinds: readonly RemovableKind[], page: PageRequest): Promise<Page<RemovedRecord>> {
    const parts = await Promise.all(kinds.map(async (kind) => {
      const values: unknown[] = [collectionId];
      const $ = (v: unknown) => `$${values.push(v)}`;
      const where = ["a.collection_id = $1"];
      const time = `a.${REMOVAL_TIME[kind]}`;
      if (page.after) {
        const [ts, block, seq] = page.after;
        const t = $(ts);
        const b = $(block);
        // The leading "<=" bounds the index range; the rest breaks ties.
        where.push(`${time} <= ${t} AND (${time} < ${t} OR a.block < ${b} OR (a.block = ${b} AND a.feed_seq < ${$(seq)}))`);
      }
      const rows = await this.q.rows(
        `SELECT a.feed_seq, a.original_seq, ${COLUMNS[kind]} FROM ${REMOVAL_TABLES[kind]} a JOIN collections c ON c.id = a.collection_id
         WHERE ${where.join(" AND ")} ORDER BY ${time} DESC, a.block DESC, a.feed_seq DESC LIMIT ${$(page.limit + 1)}`,
        values,
      );
      return rows.map((r) => removedRecord(kind, r));
    }));
    return mergedRemovals(parts, page.limit);
  }
}
