import type { Kind } from "../../domain/kinds/index.js";
import type { DeriveRepository } from "./derive.js";
import type { MaybePromise } from "./paging.js";

// Writes: imports, the server's ingest writer, and a store opened for writing
// (import, derive, demo, stats rebuild).

// import: checked records (ingest/) written in one transaction.

/** A checked record of one importable kind, in the API's JSON shape (its kind's declaration checked it: domain/kinds). */
export type ImportRecord = Record<string, unknown>;

/** How the written records compared with what the store held; kept up to date as records are written where the engine can. */
export interface ImportCounts {
  inserted: number;
  updated: number;
  unchanged: number;
  /**
   * The collections (references: domain/chains.ts collectionRef) a write of
   * records that name none changed (a reorganisation's), as the ingest
   * writers report them: the background derive fits those again.
   */
  collections?: readonly string[];
}

export interface RecordImport {
  /**
   * One import in one transaction: `feed` hands each checked record to
   * `write` (awaited when it returns a promise); the transaction commits
   * when `feed` resolves and rolls back when it throws, so readers see the
   * whole import or none of it. `counts` is filled in.
   */
  importRecords(
    kind: Kind,
    feed: (write: (record: ImportRecord) => MaybePromise<void>) => Promise<void>,
    counts: ImportCounts,
    options?: ImportRecordsOptions,
  ): Promise<void>;
}

export interface ImportRecordsOptions {
  /** false only to measure what keeping the stats aggregates costs (bench:stats). */
  maintainStats?: boolean;
  /** SQLite's bulk path (indexes and triggers dropped, rebuilt at the end): true from the first row, false never (tests of each path); unset, once an import has inserted a quarter of the table's rows. */
  bulk?: boolean;
  /**
   * Refresh the planner's statistics after the commit (default true): right
   * after a file's import; not after each small batch of the ingest API,
   * whose rows move the statistics little (the SQLite writer refreshes them
   * now and then; PostgreSQL's autovacuum does).
   */
  refreshStatistics?: boolean;
  /**
   * How long the write may wait for another writer's lock before it fails
   * (PostgreSQL; the server's writer: a caller gets `unavailable` and
   * retries). Unset: as long as it takes (an import).
   */
  lockWaitMs?: number;
}

/**
 * The server's writes (the ingest API): one batch of checked records of one
 * kind in one transaction, durable once the promise resolves. Fails with
 * StoreUnavailableError when the store cannot take writes now (another
 * writer held it past the writer's patience), and with StoreReadOnlyError
 * where this server cannot write at all.
 */
export interface IngestWriter {
  write(kind: Kind, records: readonly ImportRecord[]): Promise<ImportCounts>;
  close(): Promise<void>;
}

// a store opened for writing (import, derive, demo, stats rebuild).

/** What a stats rebuild found and left. */
export interface StatsRebuildCounts {
  /** Hour and series rows that were wrong (inserted, changed or deleted by the rebuild). */
  changed: number;
  /** Hour rows after the rebuild. */
  rows: number;
}

/** One table or index of the store and the bytes it takes on disk. */
export interface DiskPart {
  name: string;
  /** The table it belongs to (itself for a table). */
  table: string;
  bytes: number;
  /** Rows (a table) or entries (an index); SQLite counts cells, PostgreSQL estimates. */
  rows: number;
}

/** Where a store's disk goes: every table and index, largest first, and the whole store's size. */
export interface DiskUsage {
  parts: DiskPart[];
  /** The file with its write-ahead log after a checkpoint (SQLite), or the database (PostgreSQL). */
  total: number;
}

export interface WritableStore {
  /** The store for messages: a file path, or a PostgreSQL URL without its password. */
  description: string;
  records: RecordImport;
  derive: DeriveRepository;
  /**
   * Recomputes the stats aggregates of one collection (or all) from the raw
   * sales, in one transaction; with `check`, writes nothing.
   */
  rebuildStats(collectionId: number | undefined, check: boolean): Promise<StatsRebuildCounts>;
  /** The collection with the most tokens (what `start` shows first); undefined in an empty store. */
  largestCollection(): Promise<string | undefined>;
  /** Where the store's disk goes (after a checkpoint on SQLite). */
  diskUsage(): Promise<DiskUsage>;
  close(): Promise<void>;
}
