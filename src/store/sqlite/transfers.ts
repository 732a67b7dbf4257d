import type { TransferRow } from "../../domain/rows.js";
import { assetIdSql, assetKey } from "./asset-key.js";
import { hexSql, hexToBytes } from "./hex.js";
import { type Page, type PageRequest, toPage } from "../ports/paging.js";
import type { TransfersRepository } from "../ports/reads.js";
import { toTransfer, transferKey } from "../shared/rows.js";
import type { SqliteStatements } from "./statements.js";
import { finalityOf, finalitySql, finalizedOfChain } from "../shared/finality.js";
import { finalizedOf } from "./collections.js";

// Transfers as a list and a live feed (migration 13), for the activity
// feed: newest first by timestamp, block and log index (one range of
// transfers_by_time), and each insert or change at the next feed position,
// as sales are (record-writes.ts).

export const TRANSFERS_FEED_SCHEMA = `
  ALTER TABLE transfers ADD COLUMN feed_seq INTEGER NOT NULL DEFAULT 0;
  CREATE INDEX transfers_by_time ON transfers (collection_id, timestamp DESC, block DESC, log_index DESC, hash, asset_key);
  CREATE INDEX transfers_by_feed ON transfers (collection_id, feed_seq);
`;

/**
 * A transfer row's columns (of the alias `t`), as toTransfer reads them;
 * `finality`: with each row's (rows of several collections: the feeds); a
 * page of one collection reads it once (finality.ts).
 */
export const TRANSFER_COLUMNS = (t = "t", finality = true): string =>
  `c.address, ${hexSql(`${t}.hash`, "hash")}, ${t}.log_index, ${hexSql(`${t}.sender`, "sender")}, ${hexSql(`${t}.recipient`, "recipient")},
  ${assetIdSql(`${t}.`)}, ${t}.amount, ${t}.timestamp, ${t}.block, ${t}.block_hash${finality ? `, ${finalitySql(`${t}.block`, finalizedOfChain("c.chain"))} AS finality` : ""}`;

export class SqliteTransfers implements TransfersRepository {
  constructor(private readonly s: SqliteStatements) {}

  transfersPage(collectionId: number, page: PageRequest, maxBlock?: number): Page<TransferRow> {
    const where = ["t.collection_id = ?"];
    const params: unknown[] = [collectionId];
    if (maxBlock !== undefined) {
      where.push("t.block <= ?");
      params.push(maxBlock);
    }
    if (page.after) {
      // The leading "<=" bounds the index seek; the rest breaks ties, so a page costs the same however deep it is.
      const [ts, block, log, hash, assetId] = page.after;
      where.push(`t.timestamp <= ? AND (t.timestamp < ? OR (t.timestamp = ? AND (t.block < ? OR (t.block = ? AND (t.log_index < ?
        OR (t.log_index = ? AND (t.hash, t.asset_key) > (?, ?)))))))`);
      params.push(ts, ts, ts, block, block, log, log, hexToBytes(hash as string), assetKey(assetId as string));
    }
    params.push(page.limit + 1);
    const finalized = finalizedOf(this.s, collectionId);
    const rows = this.s.rows(
      `SELECT ${TRANSFER_COLUMNS("t", false)} FROM transfers t INDEXED BY transfers_by_time JOIN collections c ON c.id = t.collection_id
       WHERE ${where.join(" AND ")} ORDER BY t.timestamp DESC, t.block DESC, t.log_index DESC, t.hash, t.asset_key LIMIT ?`,
      params,
    );
    const transfer = (r: (typeof rows)[number]) => {
      r.finality = finalityOf(r.block as number, finalized);
      return toTransfer(r);
    };
    return toPage(rows, page.limit, transfer, transferKey);
  }
}
