import type { Kind } from "../../domain/kinds/index.js";
import type { ImportRecord } from "../ports/writes.js";
import { type Columns, TABLES, type TableSpec, type TweetRecord, type UpsertResult, type WriteStore } from "./record-writes.js";

// Each record kind's writes on SQLite (the kinds are declared in
// domain/kinds; postgres/kind-writes.ts is the same table there): the table
// its records fill and the upsert of one checked record. Ingest (group
// commit) and import both write through this table.

export interface SqliteKindWrites {
  /** The table the kind's records fill (an import's bulk mode drops and rebuilds its indexes). */
  readonly table: string;
  /** Upserts one checked record (its declaration's shape) by natural key. */
  write(store: WriteStore, record: ImportRecord): UpsertResult;
}

// The records were checked against their kinds' shapes (domain/kinds).
const as = <T>(r: ImportRecord) => r as unknown as T;

const BUILT_IN: { [K in Kind]: SqliteKindWrites } = {
  collections: { table: TABLES.collection.table, write: (s, r) => s.upsertCollection(as(r)) },
  tokens: { table: TABLES.token.table, write: (s, r) => s.upsertToken(as(r)) },
  appraisals: { table: TABLES.appraisal.table, write: (s, r) => s.upsertAppraisal(as(r)) },
  rarity: { table: TABLES.rarity.table, write: (s, r) => s.upsertRarity(as(r)) },
  sales: { table: TABLES.sale.table, write: (s, r) => s.upsertSale(as(r)) },
  listings: { table: TABLES.listing.table, write: (s, r) => s.upsertListing(as(r)) },
  transfers: { table: TABLES.transfer.table, write: (s, r) => s.upsertTransfer(as(r)) },
  offers: { table: TABLES.offer.table, write: (s, r) => s.upsertOffer(as(r)) },
  influencers: { table: TABLES.influencer.table, write: (s, r) => s.upsertInfluencer(as(r)) },
  tweets: {
    table: TABLES.tweet.table,
    write: (s, r) => {
      const { retweetedStatus, ...rest } = r;
      return s.upsertTweet(as<TweetRecord>({ ...rest, retweetedStatusJson: retweetedStatus }));
    },
  },
  scores: { table: TABLES.score.table, write: (s, r) => s.upsertScore(as(r)) },
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
 * id: store.collectionId(address)).
 */
export function tableWrites(spec: TableSpec, columns: (record: ImportRecord, store: WriteStore) => Columns): SqliteKindWrites {
  return { table: spec.table, write: (s, r) => s.upsertRow(spec, columns(r, s)) };
}

/** Adds a kind's writes beside the built-in ones until the returned function is called (domain/kinds registerKind). */
export function registerSqliteKind(kind: string, writes: SqliteKindWrites): () => void {
  if (REGISTRY.has(kind)) throw new Error(`SQLite has writes for the record kind ${kind} already`);
  REGISTRY.set(kind, writes);
  return () => REGISTRY.delete(kind);
}
