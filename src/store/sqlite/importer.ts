import type { Kind } from "../../domain/kinds.js";
import type { MaybePromise } from "../ports/paging.js";
import type { ImportCounts, ImportRecord, ImportRecordsOptions, RecordImport } from "../ports/writes.js";
import { type Db, refreshPlannerStats } from "./database.js";
import { type RecordKind, type TweetRecord, type UpsertResult, WriteStore } from "./record-writes.js";

// Import into SQLite: checked records upserted by natural key, all inside
// one BEGIN IMMEDIATE transaction, so a store sees the whole import or none
// of it (a killed import leaves the store as it was: SQLite rolls back).

/**
 * An import switches to bulk mode (secondary indexes dropped, rebuilt once at
 * the end) once it has inserted a quarter as many rows as the table held:
 * from then on, rebuilding costs less than updating the indexes row by row.
 * Into an empty table that is from the first row.
 */
const BULK_FRACTION = 0.25;

type Writer = (store: WriteStore, record: ImportRecord) => UpsertResult;
// The records were checked against these shapes by ingest/kinds.ts.
const as = <T>(r: ImportRecord) => r as unknown as T;

export const WRITERS: { [K in Kind]: Writer } = {
  collections: (s, r) => s.upsertCollection(as(r)),
  tokens: (s, r) => s.upsertToken(as(r)),
  appraisals: (s, r) => s.upsertAppraisal(as(r)),
  rarity: (s, r) => s.upsertRarity(as(r)),
  sales: (s, r) => s.upsertSale(as(r)),
  listings: (s, r) => s.upsertListing(as(r)),
  transfers: (s, r) => s.upsertTransfer(as(r)),
  offers: (s, r) => s.upsertOffer(as(r)),
  influencers: (s, r) => s.upsertInfluencer(as(r)),
  tweets: (s, r) => {
    const { retweetedStatus, ...rest } = r;
    return s.upsertTweet(as<TweetRecord>({ ...rest, retweetedStatusJson: retweetedStatus }));
  },
  scores: (s, r) => s.upsertScore(as(r)),
};

/** The store table each kind fills (for bulk-load index handling). */
const TABLE_OF: { [K in Kind]: RecordKind } = {
  collections: "collection",
  tokens: "token",
  appraisals: "appraisal",
  rarity: "rarity",
  sales: "sale",
  listings: "listing",
  transfers: "transfer",
  offers: "offer",
  influencers: "influencer",
  tweets: "tweet",
  scores: "score",
};

export class SqliteRecordImport implements RecordImport {
  constructor(private readonly db: Db) {}

  async importRecords(
    kind: Kind,
    feed: (write: (record: ImportRecord) => MaybePromise<void>) => Promise<void>,
    counts: ImportCounts,
    options: ImportRecordsOptions = {},
  ): Promise<void> {
    const db = this.db;
    const store = new WriteStore(db, { maintainStats: options.maintainStats ?? true });
    const write = WRITERS[kind];
    db.exec("BEGIN IMMEDIATE");
    const table = TABLE_OF[kind];
    const rowsBefore = store.rowCount(table);
    let restoreIndexes: (() => void) | undefined;
    try {
      await feed((record) => {
        counts[write(store, record)] += 1;
        const threshold = options.bulk === true ? 1 : Math.max(1, rowsBefore * BULK_FRACTION);
        if (restoreIndexes === undefined && options.bulk !== false && counts.inserted >= threshold) {
          restoreIndexes = store.deferIndexes(table);
        }
      });
      restoreIndexes?.();
      // After the indexes are back: the aggregates are recomputed from index ranges.
      store.beforeCommit();
      db.exec("COMMIT");
      if (options.refreshStatistics ?? true) refreshPlannerStats(db);
    } catch (err) {
      if (db.inTransaction) db.exec("ROLLBACK");
      throw err;
    }
  }
}
