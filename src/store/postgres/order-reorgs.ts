import type pg from "pg";
import { finalizedRemoval } from "../shared/conflicts.js";
import { LISTING_LOG_VERSIONS, ORDER_FEED_COLUMNS, ORDER_KINDS, ORDER_LOGS, type OrderKind, orderKeyIs, orderRecordOf } from "../shared/order-log.js";
import type { ListingRow } from "../../domain/rows.js";
import { listingFragments } from "../../domain/wire/fragments.js";
import { hexExpr } from "./hex.js";
import { REMOVAL_TABLES } from "../shared/removals.js";
import { lapseCleared, movedFound } from "./fillable.js";
import { spansOf } from "./listing-history.js";
import { LISTINGS_LOCK } from "./record-writes.js";

// Reorganisations of orders on PostgreSQL, as SQLite's order-reorgs.ts
// (shared/order-log.ts says what the log holds and why): the log written
// by the merge of a stage of orders (ORDER_LOG_BEGUN before it, the
// stage's lines after it, in line order), a removal's records deleted from
// it and each order it names replayed, and the logs no record of which can
// be taken back dropped by a finality's merge.

/** Each order table's record columns, which its log holds (kind-writes.ts merges them with a listing's ready answers, which a replay makes again). */
export const ORDER_COLUMNS: Readonly<Record<OrderKind, readonly string[]>> = {
  listings: ["collection_id", "asset_id", "created_at", "record_updated_at", "price", "currency", "maker", "expires_at", "quantity", "record_status", "block", "block_hash"],
  offers: ["collection_id", "asset_id", "trait_type", "trait_value", "maker", "price", "currency", "created_at", "last_updated_at", "expires_at", "status", "block", "block_hash"],
};

const logTable = (table: string, columns: string) => `
  CREATE TABLE ${table} (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    marketplace text NOT NULL,
    marketplace_id text NOT NULL,
    base integer NOT NULL,
    chain text NOT NULL,
    ${columns}
  );
  CREATE INDEX ${table}_by_order ON ${table} (marketplace, marketplace_id);
  CREATE INDEX ${table}_by_block ON ${table} (chain, block);`;

const removalTable = (table: string, columns: string) => `
  CREATE TABLE ${table} (
    feed_seq bigint PRIMARY KEY,
    original_seq bigint NOT NULL,
    collection_id integer NOT NULL REFERENCES collections(id),
    asset_id numeric(78,0),
    ${columns}
  );
  CREATE INDEX ${table}_by_feed ON ${table} (collection_id, feed_seq);
  CREATE INDEX ${table}_by_time ON ${table} (collection_id, created_at DESC, block DESC, feed_seq DESC);`;

/** Migration 28, as SQLite's 28. */
export const ORDER_LOG_MIGRATION = `
  ${logTable(ORDER_LOGS.listings, `collection_id integer NOT NULL, asset_id numeric(78,0) NOT NULL, created_at bigint NOT NULL, record_updated_at bigint NOT NULL,
    price numeric(78,0) NOT NULL, record_status text NOT NULL, block bigint NOT NULL, block_hash bytea`)}
  CREATE TABLE ${LISTING_LOG_VERSIONS} (
    marketplace text NOT NULL,
    marketplace_id text NOT NULL,
    updated_at bigint NOT NULL,
    price numeric(78,0) NOT NULL,
    status text NOT NULL,
    PRIMARY KEY (marketplace, marketplace_id, updated_at)
  );
  ${logTable(ORDER_LOGS.offers, `collection_id integer NOT NULL, asset_id numeric(78,0), trait_type text NOT NULL, trait_value text NOT NULL, maker text NOT NULL,
    price numeric(78,0) NOT NULL, created_at bigint NOT NULL, last_updated_at bigint NOT NULL, expires_at bigint NOT NULL, status text NOT NULL,
    block bigint NOT NULL, block_hash bytea`)}
  ${removalTable(REMOVAL_TABLES.listings, `marketplace_id text NOT NULL, marketplace text NOT NULL, created_at bigint NOT NULL, last_updated_at bigint NOT NULL,
    price numeric(78,0) NOT NULL, block bigint NOT NULL, block_hash bytea, status text NOT NULL`)}
  ${removalTable(REMOVAL_TABLES.offers, `marketplace_id text NOT NULL, marketplace text NOT NULL, trait_type text NOT NULL, trait_value text NOT NULL,
    maker text NOT NULL, price numeric(78,0) NOT NULL, created_at bigint NOT NULL, last_updated_at bigint NOT NULL, expires_at bigint NOT NULL,
    block bigint NOT NULL, block_hash bytea, status text NOT NULL`)}
`;

/** The staged orders the merge logs (begins: their log begins with this stage), made before the merge. */
const LOGGED = "logged_orders";

/**
 * Before the merge of a stage of orders: which staged orders are logged
 * (one of their lines may be taken back, or they keep a log), and the
 * base of those whose log begins here (their row and, for a listing, its
 * versions, as they are before the merge).
 */
export function orderLogBegun(kind: OrderKind): string[] {
  const log = ORDER_LOGS[kind];
  const columns = ORDER_COLUMNS[kind].join(", ");
  const key = (x: string, y: string) => `${x}.marketplace = ${y}.marketplace AND ${x}.marketplace_id = ${y}.marketplace_id`;
  return [
    `CREATE TEMP TABLE IF NOT EXISTS ${LOGGED} (marketplace text, marketplace_id text, begins boolean) ON COMMIT DELETE ROWS`,
    `TRUNCATE ${LOGGED}`,
    `INSERT INTO ${LOGGED} SELECT marketplace, marketplace_id, NOT bool_or(logged) FROM (
       SELECT st.marketplace, st.marketplace_id, EXISTS (SELECT 1 FROM ${log} e WHERE ${key("e", "st")}) AS logged,
         st.block > 0 AND st.block > coalesce((SELECT f.block FROM finality f WHERE f.chain = st.chain), -1) AS removable
       FROM stage st) x
     GROUP BY marketplace, marketplace_id HAVING bool_or(logged OR removable)`,
    `INSERT INTO ${log} (marketplace, marketplace_id, base, chain, ${columns})
     SELECT x.marketplace, x.marketplace_id, 1, c.chain, ${ORDER_COLUMNS[kind].map((c) => `x.${c}`).join(", ")}
     FROM ${kind} x JOIN ${LOGGED} o ON ${key("x", "o")} AND o.begins JOIN collections c ON c.id = x.collection_id`,
    ...(kind === "listings"
      ? [`INSERT INTO ${LISTING_LOG_VERSIONS} SELECT l.marketplace, l.marketplace_id, v.updated_at, v.price, v.status
          FROM listings l JOIN ${LOGGED} o ON ${key("l", "o")} AND o.begins JOIN listing_versions v ON v.listing_id = l.id`]
      : []),
  ];
}

/** After the merge: every staged line of a logged order, in line order (`source`: the merge's source of rows, with chain and line). */
export function orderLogAppended(kind: OrderKind, source: string): string {
  const columns = ORDER_COLUMNS[kind];
  return `INSERT INTO ${ORDER_LOGS[kind]} (marketplace, marketplace_id, base, chain, ${columns.join(", ")})
    SELECT s.marketplace, s.marketplace_id, 0, s.chain, ${columns.map((c) => `s.${c}`).join(", ")}
    FROM (${source}) s JOIN ${LOGGED} o ON o.marketplace = s.marketplace AND o.marketplace_id = s.marketplace_id ORDER BY s.line`;
}

/** After a finality's merge: the logs none of whose records can be taken back any more dropped (every block at or below its chain's finalized one). */
export const ORDER_LOGS_PRUNED: readonly string[] = ORDER_KINDS.map((kind) => {
  const log = ORDER_LOGS[kind];
  const dropped = `DELETE FROM ${log} WHERE (marketplace, marketplace_id) IN (
      SELECT e.marketplace, e.marketplace_id FROM ${log} e JOIN finality f ON f.chain = e.chain GROUP BY e.marketplace, e.marketplace_id
      HAVING coalesce(max(CASE WHEN e.base = 0 AND e.block > 0 THEN e.block END), -1) <= max(f.block))
    RETURNING marketplace, marketplace_id`;
  return kind === "listings"
    ? `WITH d AS (${dropped}) DELETE FROM ${LISTING_LOG_VERSIONS} v USING d WHERE v.marketplace = d.marketplace AND v.marketplace_id = d.marketplace_id`
    : dropped;
});

/**
 * The orders of `keys` replayed from what their logs hold (SQLite's
 * #replayed), set-based: a few statements whatever their number (one each
 * cost a reorganisation of 60 orders a quarter of a second). Each order
 * with a record left takes its last one (its ready answers made again in
 * JS, as the merge's), its versions the base's with each time's last
 * record over them, its answer, moves and spans found again; one with none
 * is deleted, kept in its removal table. The collections whose orders changed.
 */
async function replayedAll(client: pg.PoolClient, kind: OrderKind, keys: readonly { marketplace: string; marketplace_id: string }[]): Promise<number[]> {
  if (keys.length === 0) return [];
  const log = ORDER_LOGS[kind];
  const held = await client.query<Record<string, unknown> & { order_id: string; order_collection: number; last_id: string | null }>(
    `SELECT x.id AS order_id, x.collection_id AS order_collection, l.last_id, l.*
     FROM (SELECT DISTINCT * FROM unnest($1::text[], $2::text[]) AS k(mp, mpid)) k JOIN ${kind} x ON x.marketplace = k.mp AND x.marketplace_id = k.mpid
     LEFT JOIN LATERAL (SELECT e.id AS last_id, e.*, c.address, e.asset_id::text AS asset_id, ${hexExpr("e.block_hash")} AS block_hash_hex
       FROM ${log} e JOIN collections c ON c.id = e.collection_id WHERE e.marketplace = k.mp AND e.marketplace_id = k.mpid ORDER BY e.id DESC LIMIT 1) l ON true`,
    [keys.map((k) => k.marketplace), keys.map((k) => k.marketplace_id)],
  );
  const gone = held.rows.filter((r) => r.last_id === null).map((r) => r.order_id);
  const left = held.rows.filter((r) => r.last_id !== null);
  if (gone.length > 0) await deleted(client, kind, gone);
  if (left.length > 0) {
    const ids = left.map((r) => r.order_id);
    if (kind === "listings") {
      await client.query("DELETE FROM listing_versions WHERE listing_id = ANY($1::bigint[])", [ids]);
      await client.query(`INSERT INTO listing_versions (listing_id, updated_at, price, status)
        SELECT x.id, v.updated_at, v.price, v.status FROM ${LISTING_LOG_VERSIONS} v JOIN listings x ON ${orderKeyIs("v", "x.marketplace", "x.marketplace_id")}
        WHERE x.id = ANY($1::bigint[])`, [ids]);
      await client.query(`INSERT INTO listing_versions (listing_id, updated_at, price, status)
        SELECT DISTINCT ON (x.id, e.record_updated_at) x.id, e.record_updated_at, e.price, e.record_status
        FROM ${log} e JOIN listings x ON ${orderKeyIs("e", "x.marketplace", "x.marketplace_id")} WHERE x.id = ANY($1::bigint[]) AND e.base = 0
        ORDER BY x.id, e.record_updated_at, e.id DESC
        ON CONFLICT (listing_id, updated_at) DO UPDATE SET price = EXCLUDED.price, status = EXCLUDED.status`, [ids]);
    }
    // A listing's ready answers made again from its record, as the merge's (kind-writes.ts).
    const wires = kind === "listings" ? left.map((r) => listingFragments(orderRecordOf(kind, r) as ListingRow)) : [];
    const answers = wires.length === 0 ? [] : [wires.map((w) => w.jsonHead), wires.map((w) => w.jsonMiddle), wires.map((w) => Buffer.from(w.binary))];
    const answerColumns = answers.length === 0 ? [] : ["wire_json_head", "wire_json_middle", "wire_pb"];
    const columns = [...ORDER_COLUMNS[kind], ...answerColumns];
    const from = [...ORDER_COLUMNS[kind].map((c) => `e.${c}`), ...answerColumns.map((c) => `v.${c}`)].join(", ");
    const unnested = ["unnest($1::bigint[]) AS id", "unnest($2::bigint[]) AS entry",
      ...answerColumns.map((c, i) => `unnest($${i + 3}::${c === "wire_pb" ? "bytea" : "text"}[]) AS ${c}`)].join(", ");
    // A changed row takes a new feed position, as any merge's (its listing's ask follows by trigger).
    await client.query(`UPDATE ${kind} x SET (${columns.join(", ")}) = (${from}), feed_seq = nextval('feed_seq')
      FROM (SELECT ${unnested}) v JOIN ${log} e ON e.id = v.entry
      WHERE x.id = v.id AND (${columns.map((c) => `x.${c}`).join(", ")}) IS DISTINCT FROM (${from})`, [ids, left.map((r) => r.last_id), ...answers]);
    if (kind === "listings") {
      const list = ids.map((id) => String(Number(id))).join(", ");
      await client.query(lapseCleared(`SELECT unnest(ARRAY[${list}]::bigint[])`));
      await client.query(movedFound(`SELECT unnest(ARRAY[${list}]::bigint[])`, undefined, true));
      await client.query("DELETE FROM listing_spans WHERE listing_id = ANY($1::bigint[])", [ids]);
      await client.query(spansOf("SELECT id, collection_id, marketplace, marketplace_id, created_at, moved_at, expires_at FROM listings WHERE id = ANY($1::bigint[])",
        "(SELECT * FROM listing_versions WHERE listing_id = ANY($1::bigint[]))", "orders"), [ids]);
    }
  }
  return [...new Set(held.rows.map((r) => r.order_collection))];
}

/** Orders none of whose records is left: deleted, each kept in its removal table at a new feed position. */
async function deleted(client: pg.PoolClient, kind: OrderKind, ids: readonly string[]): Promise<void> {
  const columns = ["collection_id", "asset_id", ...ORDER_FEED_COLUMNS[kind]];
  await client.query(`INSERT INTO ${REMOVAL_TABLES[kind]} (feed_seq, original_seq, ${columns.join(", ")})
    SELECT nextval('feed_seq'), feed_seq, ${columns.join(", ")} FROM (SELECT * FROM ${kind} WHERE id = ANY($1::bigint[]) ORDER BY id) x`, [ids]);
  if (kind === "listings") {
    // Their tokens' asks found again without them (the ask triggers of a status change).
    await client.query("UPDATE listings SET status = 'CANCELLED' WHERE id = ANY($1::bigint[]) AND status = 'CREATED'", [ids]);
    await client.query("DELETE FROM listing_versions WHERE listing_id = ANY($1::bigint[])", [ids]);
    await client.query("DELETE FROM listing_spans WHERE listing_id = ANY($1::bigint[])", [ids]);
    await client.query(`DELETE FROM ${LISTING_LOG_VERSIONS} v USING listings l WHERE l.id = ANY($1::bigint[]) AND ${orderKeyIs("v", "l.marketplace", "l.marketplace_id")}`, [ids]);
  }
  await client.query(`DELETE FROM ${kind} WHERE id = ANY($1::bigint[])`, [ids]);
}

/** The collections a reorganisation's orders changed, kept for the reorgs kind's `touches` (reorgs.ts REMOVED_COLLECTIONS). */
export const REPLAYED_COLLECTIONS = "replayed_collections";
const REPLAYED_TABLE = `CREATE TEMP TABLE IF NOT EXISTS ${REPLAYED_COLLECTIONS} (collection_id integer) ON COMMIT DROP`;

/**
 * Takes back the order records of every staged reorganisation's blocks
 * (the reorgs kind's step after its sales and transfers), under the lock
 * the orders' feed positions are taken under.
 */
export async function removeStagedOrderBlocks(client: pg.PoolClient): Promise<void> {
  await client.query(REPLAYED_TABLE);
  await client.query(`SELECT pg_advisory_xact_lock(${LISTINGS_LOCK})`);
  const staged = await client.query<{ chain: string; from_block: string; block_hashes: string }>("SELECT chain, from_block, block_hashes FROM stage ORDER BY line");
  for (const r of staged.rows) {
    for (const kind of ORDER_KINDS) {
      const keys = await client.query<{ marketplace: string; marketplace_id: string }>(`DELETE FROM ${ORDER_LOGS[kind]} e
        WHERE e.chain = $2 AND e.block >= $1 AND e.block > 0 AND e.base = 0
          AND ($3 = '[]' OR '0x' || encode(e.block_hash, 'hex') IN (SELECT jsonb_array_elements_text($3::jsonb)))
        RETURNING e.marketplace, e.marketplace_id`, [r.from_block, r.chain, r.block_hashes]);
      const changed = await replayedAll(client, kind, keys.rows);
      if (changed.length > 0) await client.query(`INSERT INTO ${REPLAYED_COLLECTIONS} SELECT unnest($1::integer[])`, [changed]);
    }
  }
}

/** The lines of a stage of orders that took something back (the kind's `removed` count). */
const REMOVED_ORDERS = "removed_orders";

/**
 * The removals of a stage of orders (records sent with removed: true),
 * taken before its merge, in line order: each refused at or below its
 * chain's finalized block; the live lines before it of its order and block
 * leave the stage (it takes them back), the log's records of its block are
 * deleted and its order replayed; then the removals leave the stage, whose
 * live lines the merge writes as any.
 */
export const removeStagedOrders = (kind: OrderKind) => async (client: pg.PoolClient): Promise<void> => {
  await client.query(`CREATE TEMP TABLE IF NOT EXISTS ${REMOVED_ORDERS} (line bigint) ON COMMIT DROP`);
  await client.query(REPLAYED_TABLE);
  const removals = await client.query<{ line: string; chain: string; marketplace: string; marketplace_id: string; block: string; block_hash: string | null; finalized: string | null }>(
    `SELECT st.line, st.chain, st.marketplace, st.marketplace_id, st.block, st.block_hash, f.block AS finalized
     FROM stage st LEFT JOIN finality f ON f.chain = st.chain WHERE st.removed ORDER BY st.line`);
  const what = kind === "listings" ? "listing" : "offer";
  for (const r of removals.rows) {
    if (r.finalized !== null && Number(r.block) <= Number(r.finalized)) {
      throw finalizedRemoval(r.chain, Number(r.block), Number(r.finalized), `${what} ${r.marketplace} ${r.marketplace_id} (block ${r.block})`);
    }
  }
  for (const r of removals.rows) {
    const sameBlock = (x: string) => `${orderKeyIs(x, "$1", "$2")} AND ${x}.block = $3 AND ($4::text IS NULL OR ${x}.block_hash = $4)`;
    await client.query(`DELETE FROM stage st WHERE NOT st.removed AND st.line < $5 AND ${sameBlock("st")}`, [r.marketplace, r.marketplace_id, r.block, r.block_hash, r.line]);
    const taken = await client.query(`DELETE FROM ${ORDER_LOGS[kind]} e WHERE e.base = 0 AND ${orderKeyIs("e", "$1", "$2")} AND e.block = $3
        AND ($4::text IS NULL OR e.block_hash = decode(substr($4, 3), 'hex'))`, [r.marketplace, r.marketplace_id, r.block, r.block_hash]);
    if ((taken.rowCount ?? 0) === 0) continue;
    const changed = await replayedAll(client, kind, [r]);
    if (changed.length > 0) await client.query(`INSERT INTO ${REPLAYED_COLLECTIONS} SELECT unnest($1::integer[])`, [changed]);
    await client.query(`INSERT INTO ${REMOVED_ORDERS} VALUES ($1)`, [r.line]);
  }
  await client.query("DELETE FROM stage WHERE removed");
};

/** Rows {batch, removed}: the removals of each batch that took a record back. */
export const removedOrdersPerBatch = (batchLines: number) =>
  `SELECT (line / ${batchLines})::int AS batch, count(*)::int AS removed FROM ${REMOVED_ORDERS} GROUP BY 1`;
