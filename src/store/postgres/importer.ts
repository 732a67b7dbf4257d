import type pg from "pg";
import { refSql } from "../shared/collection-ref.js";
import type { Kind } from "../../domain/kinds/index.js";
import type { MaybePromise } from "../ports/paging.js";
import type { ImportCounts, ImportRecord, ImportRecordsOptions, RecordImport } from "../ports/writes.js";
import { kindWrites } from "./kind-writes.js";
import { BATCH_LINES, type BulkKind, WRITE_LOCK } from "./record-writes.js";
import type { Touched } from "./data-versions.js";
import { openStage, writeTransaction } from "./copy.js";

// Import into PostgreSQL: the checked records streamed by COPY into a
// staging table and merged by set-based upserts (record-writes.ts), the stats
// aggregates recomputed from the hours the sales touched, and the data
// version bumped: all in one transaction, so readers (and replicas) see the
// whole import or none of it. A killed import rolls back.

export class PgRecordImport implements RecordImport {
  constructor(
    private readonly pool: pg.Pool,
    /** Staging tables kept per connection between transactions (the server's writer, on a pool of its own: copy.ts openStage). */
    private readonly sessionStages = false,
  ) {}

  async importRecords(
    kindName: Kind,
    feed: (write: (record: ImportRecord) => MaybePromise<void>) => Promise<void>,
    counts: ImportCounts,
    options: ImportRecordsOptions = {},
  ): Promise<void> {
    const kind = kindWrites(kindName);
    await writeTransaction(this.pool, async (client, touched) => {
      const stage = await openStage(client, kind);
      let removals = false;
      try {
        await feed((record) => {
          if (record.removed === true) removals = true;
          return stage.write(record);
        });
      } catch (err) {
        stage.abort(err);
        throw err;
      }
      await stage.finish();
      await takeWriteLock(client, kind, options);
      await merge(client, mergedAs(kind, removals), counts, touched);
      // Lines whose key repeats within the file, or whose values were already there.
      counts.unchanged = stage.rows - counts.inserted - counts.updated;
    });
    await this.#refreshStatistics(kind, options);
  }

  /**
   * Several batches in one transaction (group commit: one COPY, one merge,
   * one commit for all), each counted as if it had been imported alone,
   * after the ones before it. Records are checked; a batch's line numbers
   * are BATCH_LINES apart from the next one's.
   */
  async importBatches(kindName: Kind, batches: readonly (readonly ImportRecord[])[], options: ImportRecordsOptions = {}): Promise<ImportCounts[]> {
    const kind = kindWrites(kindName);
    const counts: ImportCounts[] = batches.map(() => ({ inserted: 0, updated: 0, unchanged: 0 }));
    if (kind.settle !== undefined && batches.every((records) => records.length === 0)) {
      // Nothing to stage or merge (the listing clock's tick): what the clock settles alone, under the kind's lock.
      // Its staging and merge statements would write catalog rows for their temporary tables and sync them at
      // COMMIT (bench:listing-clock: a tick 6 ms, of which the lapse 0.2), where a transaction that changed nothing
      // commits without a sync.
      await writeTransaction(this.pool, async (client, touched) => {
        await takeWriteLock(client, kind, options);
        await settle(client, kind, touched);
      });
      return counts;
    }
    await writeTransaction(this.pool, async (client, touched) => {
      const stage = await openStage(client, kind, this.sessionStages);
      for (const [b, records] of batches.entries()) {
        for (const [i, record] of records.entries()) {
          const pending = stage.write(record, b * BATCH_LINES + i + 1);
          if (pending !== undefined) await pending;
        }
      }
      await stage.finish();
      await takeWriteLock(client, kind, options);
      const all = { inserted: 0, updated: 0, unchanged: 0 };
      const merged = mergedAs(kind, batches.some((records) => records.some((r) => r.removed === true)));
      await merge(client, merged, all, touched, async () => {
        for (const row of (await client.query<{ batch: number; inserted: number; updated: number }>(merged.classify)).rows) {
          counts[row.batch]!.inserted = row.inserted;
          counts[row.batch]!.updated = row.updated;
        }
      }, (batch, removed) => {
        counts[batch]!.updated += removed;
      });
      for (const [b, c] of counts.entries()) c.unchanged = batches[b]!.length - c.inserted - c.updated;
      // A kind whose records name no collection (a reorganisation): the collections it changed, for the background derive (group-wide).
      if (merged.touches !== undefined && (touched.ids?.length ?? 0) > 0) {
        const refs = (await client.query<{ ref: string }>(`SELECT ${refSql("c")} AS ref FROM collections c WHERE c.id = ANY($1::integer[])`, [touched.ids])).rows.map((r) => r.ref);
        for (const c of counts) c.collections = refs;
      }
    });
    await this.#refreshStatistics(kind, options);
    return counts;
  }

  // After the commit (readers are not blocked): planner statistics, and the
  // visibility map, without which an index-only scan (an asset's stats over
  // sales_by_asset) visits the heap for every row until autovacuum comes
  // (bench:engines' asset read several times slower).
  async #refreshStatistics(kind: BulkKind, options: ImportRecordsOptions): Promise<void> {
    if (options.refreshStatistics ?? true) await this.pool.query(`VACUUM (ANALYZE) ${kind.tables.join(", ")}`);
  }
}

/** Staged concurrently; merged one writer at a time where aggregates are kept. */
async function takeWriteLock(client: pg.PoolClient, kind: BulkKind, options: ImportRecordsOptions): Promise<void> {
  if (!kind.serialized) return;
  // One round trip for both (a simple query of two statements).
  const timeout = options.lockWaitMs === undefined ? "" : `SET LOCAL lock_timeout = ${Math.max(1, Math.round(options.lockWaitMs))}; `;
  await client.query(`${timeout}SELECT pg_advisory_xact_lock(${Number(kind.lock ?? WRITE_LOCK)})`);
}

/**
 * Merges the stage into the tables of `kind`, counting inserted and updated
 * rows, and marks the staged collections touched when anything changed.
 * `beforeCounted` runs just before the rows are counted (and written).
 */
async function merge(
  client: pg.PoolClient,
  kind: BulkKind,
  counts: ImportCounts,
  touched: Touched,
  beforeCounted?: () => Promise<void>,
  removedOf?: (batch: number, removed: number) => void,
): Promise<void> {
  await kind.check?.(client);
  await kind.prepare?.(client);
  // The statements whose results are not read go together, one round trip
  // each run of them (several statements in one simple query).
  let pending: string[] = [];
  const flush = async () => {
    if (pending.length > 0) await client.query(pending.join(";\n"));
    pending = [];
  };
  for (const [i, sql] of kind.statements.entries()) {
    if (i !== kind.counts && i !== kind.sharedCounts) {
      pending.push(sql);
      continue;
    }
    await flush();
    if (i === kind.counts) await beforeCounted?.();
    const r = await client.query<{ inserted: number; updated: number }>(sql);
    if (i === kind.counts) {
      counts.inserted = r.rows[0]!.inserted;
      counts.updated = r.rows[0]!.updated;
    }
    // A changed profile shows wherever the user is named, in any collection.
    if (i === kind.sharedCounts && r.rows[0]!.updated > 0) touched.all = true;
  }
  await flush();
  // What the stage took back (reorgs.ts) is a change of the rows it was.
  if (kind.removed !== undefined) {
    for (const { batch, removed } of (await client.query<{ batch: number; removed: number }>(kind.removed)).rows) {
      counts.updated += removed;
      removedOf?.(batch, removed);
    }
  }
  // Rows all unchanged move no owner and end no listing.
  if (kind.afterward !== undefined && counts.inserted + counts.updated > 0) await client.query(kind.afterward.join(";\n"));
  await kind.finish?.(client);
  await settle(client, kind, touched);
  if (kind.touchesAll === true && counts.inserted + counts.updated > 0) touched.all = true;
  // The collections its statements changed, whatever the count (a reorganisation sent again may still take back what was sent since);
  // with touchesAll too, those whose summaries a change moved (a price point's).
  if (kind.touches !== undefined) {
    const ids = (await client.query<{ id: number }>(kind.touches)).rows.map((r) => r.id);
    if (ids.length > 0) touched.ids = [...(touched.ids ?? []), ...ids];
    return;
  }
  if (kind.touchesAll === true) return;
  // Every staged collection, changed or not: fewer statements than finding which.
  if (counts.inserted + counts.updated > 0) touched.staged = true;
}

/** What the clock changed (BulkKind.settle), stamped beside what the stage did. */
async function settle(client: pg.PoolClient, kind: BulkKind, touched: Touched): Promise<void> {
  if (kind.settle === undefined) return;
  const ids = (await client.query<{ id: number }>(kind.settle)).rows.map((r) => r.id);
  if (ids.length > 0) touched.ids = [...(touched.ids ?? []), ...ids];
}

/** The kind's merge for a stage: its withRemovals when the stage holds a record taken back (seen as the records were staged). */
function mergedAs(kind: BulkKind, removals: boolean): BulkKind {
  return removals && kind.withRemovals !== undefined ? kind.withRemovals : kind;
}
