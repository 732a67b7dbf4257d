import { SALE_LOG_INDEX } from "../shared/ownership.js";

// Ownership that follows the market, as in SQLite (store/sqlite/ownership.ts;
// decisions.md, "Ownership"): a token's owner is the recipient of its latest
// transfer by (block, log index), a sale being a transfer at the end of its
// block unless a transfer of its transaction is known. Here the merges of
// sales, transfers and tokens find the owners of the tokens they staged
// again, set-based, from those tokens' sales and transfers (one index range
// each): the cost follows the tokens a batch names, not its rows. They do
// so under TOKENS_LOCK, held to the commit, so the last writer to take it
// sees every other's rows (READ COMMITTED: each statement's snapshot is
// taken after the lock is granted).

/** An owner from 20 address bytes: the zero address (a burn) is no owner. */
export const ownerOf = (bytes: string) => `CASE WHEN ${bytes} = '\\x${"00".repeat(20)}'::bytea THEN '' ELSE '0x' || encode(${bytes}, 'hex') END`;

export const OWNERSHIP_MIGRATION = `
  ALTER TABLE tokens
    ADD COLUMN record_owner text NOT NULL DEFAULT '',
    ADD COLUMN recorded boolean NOT NULL DEFAULT true,
    ADD COLUMN owner_block bigint,
    ADD COLUMN owner_log bigint,
    ADD COLUMN owner_hash bytea;
  UPDATE tokens SET record_owner = current_owner;
  CREATE TABLE transfers (
    hash bytea NOT NULL,
    log_index bigint NOT NULL,
    collection_id integer NOT NULL REFERENCES collections(id),
    asset_id numeric(78,0) NOT NULL,
    sender bytea NOT NULL,
    recipient bytea NOT NULL,
    timestamp bigint NOT NULL,
    block bigint NOT NULL,
    PRIMARY KEY (hash, log_index, collection_id, asset_id)
  );
  CREATE INDEX transfers_by_asset ON transfers (collection_id, asset_id, block DESC, log_index DESC, hash DESC) INCLUDE (recipient);
  ${ensureTokens("SELECT DISTINCT collection_id, asset_id FROM sales")};
  ${ownersFound("SELECT DISTINCT collection_id, asset_id FROM sales")};
`;

/** Rows for the tokens `assets` names (collection_id, asset_id) that have none: known only from their events. */
export function ensureTokens(assets: string): string {
  return `INSERT INTO tokens (collection_id, asset_id, recorded)
    SELECT a.collection_id, a.asset_id, false FROM (${assets}) a ON CONFLICT DO NOTHING`;
}

/** The owners of the tokens `assets` names, found again from their transfers and sales (the record's owner without either). */
export function ownersFound(assets: string): string {
  return `WITH latest AS (
      SELECT a.collection_id, a.asset_id, e.owner, e.block, e.log_index, e.hash FROM (${assets}) a
      LEFT JOIN LATERAL (
        SELECT * FROM (
          (SELECT ${ownerOf("t.recipient")} AS owner, t.block, t.log_index, t.hash FROM transfers t
           WHERE t.collection_id = a.collection_id AND t.asset_id = a.asset_id
           ORDER BY t.block DESC, t.log_index DESC, t.hash DESC LIMIT 1)
          UNION ALL
          (SELECT ${ownerOf("s.buyer")}, s.block, ${SALE_LOG_INDEX}::bigint, s.hash FROM sales s
           WHERE s.collection_id = a.collection_id AND s.asset_id = a.asset_id
             AND NOT EXISTS (SELECT 1 FROM transfers t WHERE t.hash = s.hash AND t.collection_id = s.collection_id AND t.asset_id = s.asset_id)
           ORDER BY s.block DESC, s.hash DESC LIMIT 1)) u
        ORDER BY block DESC, log_index DESC, hash DESC LIMIT 1) e ON true)
    UPDATE tokens t SET current_owner = coalesce(l.owner, t.record_owner), owner_block = l.block, owner_log = l.log_index, owner_hash = l.hash
    FROM latest l WHERE t.collection_id = l.collection_id AND t.asset_id = l.asset_id
      AND (t.current_owner, t.owner_block, t.owner_log, t.owner_hash) IS DISTINCT FROM (coalesce(l.owner, t.record_owner), l.block, l.log_index, l.hash)`;
}
