import type { Statement } from "better-sqlite3";
import type { Db } from "./db.js";
import { spansRebuilt } from "./fillable.js";
import { LISTING_LOG_VERSIONS, ORDER_FEED_COLUMNS, ORDER_KINDS, ORDER_LOGS, type OrderKind, orderKeyIs, orderRecordOf } from "../shared/order-log.js";
import { assetIdSql } from "./asset-key.js";
import { hexExpr } from "./hex.js";
import { REMOVAL_TABLES } from "../shared/removals.js";

// Reorganisations of orders on SQLite (shared/order-log.ts says what the
// log holds and why): the log written as an order's record is (by the
// writer, record-writes.ts, before and after its upsert), a removal's
// records deleted from it and the order replayed, the logs no record of
// which can be taken back dropped as the finality moves.

/** A log: after its key, its order table's record columns (record-writes.ts TABLES, without the ready answers). */
const logTable = (table: string, columns: string) => `
  CREATE TABLE ${table} (
    -- arrival order
    id INTEGER PRIMARY KEY,
    marketplace TEXT NOT NULL,
    marketplace_id TEXT NOT NULL,
    -- 1: the order's row when its log began
    base INTEGER NOT NULL,
    chain TEXT NOT NULL,
    ${columns}
  );
  CREATE INDEX ${table}_by_order ON ${table} (marketplace, marketplace_id);
  CREATE INDEX ${table}_by_block ON ${table} (chain, block);`;

const removalTable = (table: string, columns: string) => `
  CREATE TABLE ${table} (
    feed_seq INTEGER PRIMARY KEY,
    original_seq INTEGER NOT NULL,
    collection_id INTEGER NOT NULL REFERENCES collections(id),
    asset_key TEXT NOT NULL,
    ${columns}
  );
  CREATE INDEX ${table}_by_feed ON ${table} (collection_id, feed_seq);
  -- by time, as the activity list reads them (includeRemoved; removals.ts)
  CREATE INDEX ${table}_by_time ON ${table} (collection_id, created_at DESC, block DESC, feed_seq DESC);`;

/** Migration 28: the orders' logs, a listing's versions when its log began, and the orders taken back whole. */
export const ORDER_LOG_SCHEMA = `
  ${logTable(ORDER_LOGS.listings, `collection_id INTEGER NOT NULL, asset_key TEXT NOT NULL, created_at INTEGER NOT NULL, record_updated_at INTEGER NOT NULL,
    price TEXT NOT NULL, record_status TEXT NOT NULL, block INTEGER NOT NULL, block_hash BLOB`)}
  CREATE TABLE ${LISTING_LOG_VERSIONS} (
    marketplace TEXT NOT NULL,
    marketplace_id TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    price TEXT NOT NULL,
    status TEXT NOT NULL,
    PRIMARY KEY (marketplace, marketplace_id, updated_at)
  ) WITHOUT ROWID;
  ${logTable(ORDER_LOGS.offers, `collection_id INTEGER NOT NULL, asset_key TEXT NOT NULL, trait_type TEXT NOT NULL, trait_value TEXT NOT NULL, maker TEXT NOT NULL,
    price TEXT NOT NULL, created_at INTEGER NOT NULL, last_updated_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, status TEXT NOT NULL,
    block INTEGER NOT NULL, block_hash BLOB`)}
  ${removalTable(REMOVAL_TABLES.listings, `marketplace_id TEXT NOT NULL, marketplace TEXT NOT NULL, created_at INTEGER NOT NULL, last_updated_at INTEGER NOT NULL,
    price TEXT NOT NULL, block INTEGER NOT NULL, block_hash BLOB, status TEXT NOT NULL`)}
  ${removalTable(REMOVAL_TABLES.offers, `marketplace_id TEXT NOT NULL, marketplace TEXT NOT NULL, trait_type TEXT NOT NULL, trait_value TEXT NOT NULL,
    maker TEXT NOT NULL, price TEXT NOT NULL, created_at INTEGER NOT NULL, last_updated_at INTEGER NOT NULL, expires_at INTEGER NOT NULL,
    block INTEGER NOT NULL, block_hash BLOB, status TEXT NOT NULL`)}
`;

/** An order's record as the writer upserts it: its table's columns by name. */
type Columns = Record<string, unknown>;

/** How the writer upserts a replayed order's record (shared/order-log.ts orderRecordOf): record-writes.ts, so that its answers, feed position and triggers follow. */
export type OrderUpsert = (kind: OrderKind, record: ReturnType<typeof orderRecordOf>) => void;

/**
 * A listing's versions as the replay leaves them, listing id `id`, key `mp`,
 * `mpid` (the caller's placeholders): the base's versions, then each
 * time's last record of the log over them.
 */
function versionsReplayed(id: string, mp: string, mpid: string): string[] {
  return [
    `DELETE FROM listing_versions WHERE listing_id = ${id}`,
    `INSERT INTO listing_versions (listing_id, updated_at, price, status)
       SELECT ${id}, v.updated_at, v.price, v.status FROM ${LISTING_LOG_VERSIONS} v WHERE ${orderKeyIs("v", mp, mpid)}`,
    `INSERT INTO listing_versions (listing_id, updated_at, price, status)
       SELECT ${id}, e.record_updated_at, e.price, e.record_status FROM ${ORDER_LOGS.listings} e
       WHERE ${orderKeyIs("e", mp, mpid)} AND e.base = 0 AND e.id = (
         SELECT max(x.id) FROM ${ORDER_LOGS.listings} x WHERE ${orderKeyIs("x", mp, mpid)} AND x.base = 0 AND x.record_updated_at = e.record_updated_at)
       ON CONFLICT (listing_id, updated_at) DO UPDATE SET price = excluded.price, status = excluded.status`,
  ];
}

/** The hashes' test of a removal by blocks (a JSON array of hex hashes, or none named). */
const NAMED = "hex(e.block_hash) IN (SELECT upper(substr(value, 3)) FROM json_each(?))";

export class SqliteOrderLog {
  readonly #db: Db;
  readonly #statements = new Map<string, Statement>();
  readonly #writes = new Map<OrderKind, { logged: Statement; base: Statement; baseVersions?: Statement; append: Statement }>();

  /**
   * `columns`: each order table's record columns (record-writes.ts TABLES,
   * without the ready answers), which its log holds; `nextSeq`: the
   * writer's next feed position.
   */
  constructor(
    db: Db,
    private readonly columns: Readonly<Record<OrderKind, readonly string[]>>,
    private readonly nextSeq: () => number,
    private readonly upsert: OrderUpsert,
  ) {
    this.#db = db;
  }

  #prepare(sql: string): Statement {
    let s = this.#statements.get(sql);
    if (s === undefined) this.#statements.set(sql, (s = this.#db.prepare(sql)));
    return s;
  }

  /** Whether the order of this key keeps a log (then each of its records is logged). */
  logged(kind: OrderKind, row: Columns): boolean {
    return this.#of(kind).logged.get(row.marketplace, row.marketplace_id) !== undefined;
  }

  /**
   * The order's row and versions kept as its log's base, before the first
   * record that may be taken back replaces them (the writer calls it just
   * before its update; a new order has no base).
   */
  base(kind: OrderKind, row: Columns, chain: string): void {
    const s = this.#of(kind);
    s.base.run(chain, row.marketplace, row.marketplace_id);
    s.baseVersions?.run(row.marketplace, row.marketplace_id);
  }

  /** An order's record logged, after its upsert. */
  append(kind: OrderKind, row: Columns, chain: string): void {
    this.#of(kind).append.run(row.marketplace, row.marketplace_id, chain, ...this.columns[kind].map((c) => row[c]));
  }

  /** The statements of a record's write, per kind, prepared at the kind's first record. */
  #of(kind: OrderKind): { logged: Statement; base: Statement; baseVersions?: Statement; append: Statement } {
    let s = this.#writes.get(kind);
    if (s === undefined) {
      const log = ORDER_LOGS[kind];
      const columns = this.columns[kind];
      const cols = columns.join(", ");
      s = {
        logged: this.#db.prepare(`SELECT 1 FROM ${log} e WHERE ${orderKeyIs("e", "?", "?")} LIMIT 1`).pluck(),
        base: this.#db.prepare(`INSERT INTO ${log} (marketplace, marketplace_id, base, chain, ${cols}) SELECT marketplace, marketplace_id, 1, ?, ${cols}
          FROM ${kind} x WHERE ${orderKeyIs("x", "?", "?")}`),
        ...(kind === "listings"
          ? { baseVersions: this.#db.prepare(`INSERT INTO ${LISTING_LOG_VERSIONS} SELECT l.marketplace, l.marketplace_id, v.updated_at, v.price, v.status
              FROM listings l JOIN listing_versions v ON v.listing_id = l.id WHERE ${orderKeyIs("l", "?", "?")}`) }
          : {}),
        append: this.#db.prepare(`INSERT INTO ${log} (marketplace, marketplace_id, base, chain, ${cols}) VALUES (?, ?, 0, ?, ${columns.map(() => "?").join(", ")})`),
      };
      this.#writes.set(kind, s);
    }
    return s;
  }

  /** Takes back every order record of `chain` from block `fromBlock` on (of the named blocks only): the collections whose orders changed. */
  blocks(chain: string, fromBlock: number, hashes: readonly string[]): number[] {
    const named = hashes.length > 0;
    const changed: number[] = [];
    for (const kind of ORDER_KINDS) {
      const log = ORDER_LOGS[kind];
      const keys = this.#prepare(`DELETE FROM ${log} WHERE id IN (SELECT e.id FROM ${log} e INDEXED BY ${log}_by_block
          WHERE e.chain = ? AND e.block >= ? AND e.block > 0 AND e.base = 0${named ? ` AND ${NAMED}` : ""}) RETURNING marketplace, marketplace_id`)
        .raw().all(chain, fromBlock, ...(named ? [JSON.stringify(hashes)] : [])) as [string, string][];
      const seen = new Set<string>();
      for (const [mp, id] of keys) {
        const key = JSON.stringify([mp, id]);
        if (seen.has(key)) continue;
        seen.add(key);
        const collection = this.#replayed(kind, mp, id);
        if (collection !== undefined) changed.push(collection);
      }
    }
    return changed;
  }

  /**
   * Takes back an order's records of one block (a record sent again with
   * `removed: true`; of that block hash only when it names one): the
   * order's collection, or undefined when the log held none.
   */
  record(kind: OrderKind, marketplace: string, marketplaceId: string, block: number, blockHash: Uint8Array | null): number | undefined {
    const log = ORDER_LOGS[kind];
    const removed = this.#prepare(`DELETE FROM ${log} AS e WHERE ${orderKeyIs("e", "?", "?")} AND e.base = 0 AND e.block = ? AND (? IS NULL OR e.block_hash = ?)`)
      .run(marketplace, marketplaceId, block, blockHash, blockHash).changes;
    return removed === 0 ? undefined : this.#replayed(kind, marketplace, marketplaceId);
  }

  /** Drops the logs of `chain` none of whose records can be taken back any more (every block of theirs at or below `finalized`). */
  pruned(chain: string, finalized: number): void {
    for (const kind of ORDER_KINDS) {
      const log = ORDER_LOGS[kind];
      const dropped = this.#prepare(`DELETE FROM ${log} WHERE (marketplace, marketplace_id) IN (
          SELECT marketplace, marketplace_id FROM ${log} WHERE chain = ? GROUP BY marketplace, marketplace_id
          HAVING coalesce(max(CASE WHEN base = 0 AND block > 0 THEN block END), -1) <= ?)
        RETURNING marketplace, marketplace_id`).raw().all(chain, finalized) as [string, string][];
      if (kind !== "listings") continue;
      const versions = this.#prepare(`DELETE FROM ${LISTING_LOG_VERSIONS} AS v WHERE ${orderKeyIs("v", "?", "?")}`);
      for (const [mp, id] of dropped) versions.run(mp, id);
    }
  }

  /**
   * The order of a key replayed from what its log holds (its last record,
   * or none: the order deleted, kept in its removal table): its
   * collection, or undefined when the store holds no such order.
   */
  #replayed(kind: OrderKind, marketplace: string, marketplaceId: string): number | undefined {
    const log = ORDER_LOGS[kind];
    const held = this.#prepare(`SELECT id, collection_id FROM ${kind} x WHERE ${orderKeyIs("x", "?", "?")}`).get(marketplace, marketplaceId) as
      { id: number; collection_id: number } | undefined;
    if (held === undefined) return undefined;
    // (hex(NULL) is "", so a record sent without a hash is "0x" here: none.)
    const last = this.#prepare(`SELECT e.*, c.address, ${assetIdSql("e.")}, nullif(${hexExpr("e.block_hash")}, '0x') AS block_hash_hex
      FROM ${log} e JOIN collections c ON c.id = e.collection_id WHERE ${orderKeyIs("e", "?", "?")} ORDER BY e.id DESC LIMIT 1`).get(marketplace, marketplaceId) as
      Columns | undefined;
    if (last === undefined) {
      this.#deleted(kind, held.id);
      return held.collection_id;
    }
    if (kind === "listings") {
      const params = { id: held.id, mp: marketplace, mpid: marketplaceId };
      for (const sql of versionsReplayed("@id", "@mp", "@mpid")) this.#prepare(sql).run(params);
    }
    this.upsert(kind, orderRecordOf(kind, last));
    // The spans follow the versions even when the row itself did not change.
    if (kind === "listings") this.#db.exec(spansRebuilt(String(held.id), true));
    return held.collection_id;
  }

  /** An order none of whose records is left: kept in its removal table at a new feed position, as it was answered, then deleted. */
  #deleted(kind: OrderKind, id: number): void {
    const columns = ["collection_id", "asset_key", ...ORDER_FEED_COLUMNS[kind]].join(", ");
    this.#prepare(`INSERT INTO ${REMOVAL_TABLES[kind]} (feed_seq, original_seq, ${columns}) SELECT ?, feed_seq, ${columns} FROM ${kind} WHERE id = ?`)
      .run(this.nextSeq(), id);
    if (kind === "listings") {
      // Its token's ask found again without it (the ask triggers of a status change).
      this.#prepare("UPDATE listings SET record_status = 'CANCELLED' WHERE id = ? AND status = 'CREATED'").run(id);
      this.#prepare("DELETE FROM listing_versions WHERE listing_id = ?").run(id);
      this.#prepare("DELETE FROM listing_spans WHERE listing_id = ?").run(id);
      this.#prepare(`DELETE FROM ${LISTING_LOG_VERSIONS} AS v WHERE (v.marketplace, v.marketplace_id) = (SELECT marketplace, marketplace_id FROM listings WHERE id = ?)`).run(id);
    }
    this.#prepare(`DELETE FROM ${kind} WHERE id = ?`).run(id);
  }
}
