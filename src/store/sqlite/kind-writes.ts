import type { Kind } from "../../domain/kinds/index.js";
import { assetKey } from "./asset-key.js";
import { FLAG_TABLES } from "./flags.js";
import type { ImportRecord } from "../ports/writes.js";
import { type Columns, TABLES, type TableSpec, type TweetRecord, type UpsertResult, type WriteStore } from "./record-writes.js";

// Each record kind's writes on SQLite (the kinds are declared in
// domain/kinds; postgres/kind-writes.ts is the same table there): the table
// its records fill and the upsert of one checked record. Ingest (group
// commit) and import both write through this table.

export interface SqliteKindWrites {
  /** The table the kind's records fill (an import's bulk mode drops and rebuilds its indexes). */
  readonly table: string;
  /** Its natural key's columns (the declaration's naturalKey). */
  readonly key: readonly string[];
  /** Upserts one checked record (its declaration's shape) by natural key. */
  write(store: WriteStore, record: ImportRecord): UpsertResult;
}

// The records were checked against their kinds' shapes (domain/kinds).
const as = <T>(r: ImportRecord) => r as unknown as T;

const at = (spec: TableSpec) => ({ table: spec.table, key: spec.key });

const BUILT_IN: { [K in Kind]: SqliteKindWrites } = {
  collections: { ...at(TABLES.collection), write: (s, r) => s.upsertCollection(as(r)) },
  tokens: { ...at(TABLES.token), write: (s, r) => s.upsertToken(as(r)) },
  appraisals: { ...at(TABLES.appraisal), write: (s, r) => s.upsertAppraisal(as(r)) },
  rarity: { ...at(TABLES.rarity), write: (s, r) => s.upsertRarity(as(r)) },
  // A record sent with removed: true is taken back (a reorganisation: docs/chains.md); an order's, its records of its block.
  sales: { ...at(TABLES.sale), write: (s, r) => (r.removed === true ? s.removeSale(as(r)) : s.upsertSale(as(r))) },
  listings: { ...at(TABLES.listing), write: (s, r) => (r.removed === true ? s.removeOrder("listings", as(r)) : s.upsertListing(as(r))) },
  transfers: { ...at(TABLES.transfer), write: (s, r) => (r.removed === true ? s.removeTransfer(as(r)) : s.upsertTransfer(as(r))) },
  offers: { ...at(TABLES.offer), write: (s, r) => (r.removed === true ? s.removeOrder("offers", as(r)) : s.upsertOffer(as(r))) },
  influencers: { ...at(TABLES.influencer), write: (s, r) => s.upsertInfluencer(as(r)) },
  tweets: {
    ...at(TABLES.tweet),
    write: (s, r) => {
      const { retweetedStatus, ...rest } = r;
      return s.upsertTweet(as<TweetRecord>({ ...rest, retweetedStatusJson: retweetedStatus }));
    },
  },
  scores: { ...at(TABLES.score), write: (s, r) => s.upsertScore(as(r)) },
  // Every sale and transfer of its blocks taken back; the reorgs table keeps what it removed.
  reorgs: { ...at(TABLES.reorg), write: (s, r) => s.removeBlocks(as(r)) },
  // Only forward: a record at or below the chain's finalized block is unchanged.
  finality: { table: "finality", key: ["chain"], write: (s, r) => s.finalize(as(r)) },
  // A token's USD price at a minute (docs/money.md), by natural key.
  prices: { ...at(TABLES.pricePoint), write: (s, r) => s.upsertPricePoint(as(r)) },
  spam: tableWrites(FLAG_TABLES.spam, (r, s) => ({ collection_id: s.collectionOf(as(r)), is_spam: r.isSpam ? 1 : 0, reason: r.reason })),
  flags: tableWrites(FLAG_TABLES.flags, (r, s) => ({
    collection_id: s.collectionOf(as(r)), asset_key: assetKey(r.assetId as string), is_flagged: r.isFlagged ? 1 : 0, reason: r.reason,
  })),
};

const REGISTRY = new Map<string, SqliteKindWrites>(Object.entries(BUILT_IN));

export function kindWrites(kind: Kind): SqliteKindWrites {
  const w = REGISTRY.get(kind);
  if (w === undefined) throw new Error(`SQLite has no writes for the record kind ${JSON.stringify(kind)}`);
  return w;
}

/**
 * The writes of a kind whose records are rows of one table and nothing
 * more: its table spec and a record's columns (`store` gives a collection's
 * id: store.collectionOf(record)).
 */
export function tableWrites(spec: TableSpec, columns: (record: ImportRecord, store: WriteStore) => Columns): SqliteKindWrites {
  return { ...at(spec), write: (s, r) => s.upsertRow(spec, columns(r, s)) };
}

/** Adds a kind's writes beside the built-in ones until the returned function is called (domain/kinds registerKind). */
export function registerSqliteKind(kind: string, writes: SqliteKindWrites): () => void {
  if (REGISTRY.has(kind)) throw new Error(`SQLite has writes for the record kind ${kind} already`);
  REGISTRY.set(kind, writes);
  return () => REGISTRY.delete(kind);
}
