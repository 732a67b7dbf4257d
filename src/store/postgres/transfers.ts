import type { TransferRow } from "../../domain/rows.js";
import type { PgQueries } from "./statements.js";
import { hexSql, hexToBytes } from "./hex.js";
import { type Page, type PageRequest, toPage } from "../ports/paging.js";
import type { TransfersRepository } from "../ports/reads.js";
import { toTransfer, transferKey } from "../shared/rows.js";
import { finalitySql, finalizedOfChain } from "../shared/finality.js";

// Transfers as a list and a live feed on PostgreSQL (migration 12), as
// SQLite's (store/sqlite/transfers.ts): newest first, one range of
// transfers_by_time; each insert or change at the next feed position, taken
// under the tokens' lock that every transfer write holds to COMMIT
// (record-writes.ts), so that positions grow in commit order.

export const TRANSFERS_FEED_MIGRATION = `
  ALTER TABLE transfers ADD COLUMN feed_seq bigint NOT NULL DEFAULT 0;
  CREATE INDEX transfers_by_time ON transfers (collection_id, timestamp DESC, block DESC, log_index DESC, hash, asset_id);
  CREATE INDEX transfers_by_feed ON transfers (collection_id, feed_seq);
`;

/** A transfer row's columns (of the alias `t`), as toTransfer reads them. */
export const TRANSFER_COLUMNS = (t = "t"): string =>
  `c.address, ${hexSql(`${t}.hash`, "hash")}, ${t}.log_index, ${hexSql(`${t}.sender`, "sender")}, ${hexSql(`${t}.recipient`, "recipient")},
  ${t}.asset_id::text AS asset_id, ${t}.amount, ${t}.timestamp, ${t}.block, ${hexSql(`${t}.block_hash`, "block_hash")},
  ${finalitySql(`${t}.block`, finalizedOfChain("c.chain"))} AS finality`;

export class PgTransfers implements TransfersRepository {
  constructor(private readonly q: PgQueries) {}

  async transfersPage(collectionId: number, page: PageRequest, maxBlock?: number): Promise<Page<TransferRow>> {
    const values: unknown[] = [collectionId];
    const $ = (v: unknown) => `$${values.push(v)}`;
    const where = ["t.collection_id = $1"];
    if (maxBlock !== undefined) where.push(`t.block <= ${$(maxBlock)}`);
    if (page.after) {
      const [ts, block, log, hash, assetId] = page.after;
      const t = $(ts);
      const b = $(block);
      const l = $(log);
      // The leading "<=" bounds the index range; the rest breaks ties.
      where.push(`t.timestamp <= ${t} AND (t.timestamp < ${t} OR t.block < ${b} OR (t.block = ${b} AND (t.log_index < ${l}
        OR (t.log_index = ${l} AND (t.hash, t.asset_id) > (${$(hexToBytes(hash as string))}, ${$(assetId)})))))`);
    }
    const rows = await this.q.rows(
      `SELECT ${TRANSFER_COLUMNS()} FROM transfers t JOIN collections c ON c.id = t.collection_id
       WHERE ${where.join(" AND ")}
       ORDER BY t.timestamp DESC, t.block DESC, t.log_index DESC, t.hash, t.asset_id LIMIT ${$(page.limit + 1)}`,
      values,
    );
    return toPage(rows, page.limit, toTransfer, transferKey);
  }
}
