import Database from "better-sqlite3";
import { setTimeout as sleep } from "node:timers/promises";
import type { Kind } from "../../domain/kinds/index.js";
import { StoreError, StoreReadOnlyError, StoreUnavailableError } from "../ports/errors.js";
import type { ImportCounts, ImportRecord, IngestWriter } from "../ports/writes.js";
import { type Db, hasPlannerStats, refreshPlannerStats, schemaVersion, tuneForWrites } from "./database.js";
import { LOCK_WAIT_MS, type LockWaitOptions } from "../shared/lock-wait.js";
import { kindWrites } from "./kind-writes.js";
import { MIGRATIONS } from "./migrations.js";
import { WriteStore } from "./record-writes.js";

// The ingest writer of a SQLite file, as it runs in its worker thread
// (ingest-worker.ts; ingest-writer.ts is the server's side). SQLite has one
// writer per file, so a process writes through one connection, and the
// batches that arrive while a commit is under way wait and then share the
// next transaction (group commit): one fsync for all of them, each batch in
// a savepoint of its own, so a batch that fails leaves the others. The
// connection syncs every commit to disk (synchronous = FULL): a batch is
// acknowledged only once it would survive a power cut.
//
// Its thread never sleeps on the lock: the connection does not wait in
// SQLite's busy handler (busy_timeout 0). When another process holds the
// write lock (an import from the CLI, another worker's writer), the writer
// retries on a timer, and past LOCK_WAIT_MS the waiting batches fail with
// StoreUnavailableError (callers see `unavailable` and retry).

const FIRST_RETRY_MS = 2;
/** Retries at most this far apart: the background derive holds the lock for some tens of ms, and a longer step would add its own wait to every batch behind it. */
const MAX_RETRY_MS = 10;
/** WAL pages between checkpoints (4 KB each). */
const CHECKPOINT_PAGES = 10_000;
/** Rows written between two refreshes of the planner's statistics. */
const STATS_EVERY_ROWS = 50_000;

interface Pending {
  kind: Kind;
  records: readonly ImportRecord[];
  resolve(counts: ImportCounts): void;
  reject(err: unknown): void;
}

export class GroupCommitWriter implements IngestWriter {
  readonly #path: string;
  readonly #statsEveryRows: number;
  readonly #lockWaitMs: number;
  #db: Db | undefined;
  #queue: Pending[] = [];
  #running = false;
  #rowsSinceStats = 0;
  #closed = false;

  /** `statsEveryRows`: rows written between two refreshes of the planner's statistics (tests make it small). */
  constructor(path: string, options: { statsEveryRows?: number | undefined } & LockWaitOptions = {}) {
    this.#path = path;
    this.#statsEveryRows = options.statsEveryRows ?? STATS_EVERY_ROWS;
    this.#lockWaitMs = options.lockWaitMs ?? LOCK_WAIT_MS;
  }

  write(kind: Kind, records: readonly ImportRecord[]): Promise<ImportCounts> {
    if (this.#closed) return Promise.reject(new StoreUnavailableError("the store's writer is closed"));
    return new Promise((resolve, reject) => {
      this.#queue.push({ kind, records, resolve, reject });
      if (!this.#running) void this.#run();
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    while (this.#running) await sleep(5);
    this.#db?.close();
    this.#db = undefined;
  }

  /** Commits what is queued, one group per transaction, until the queue is empty. */
  async #run(): Promise<void> {
    this.#running = true;
    try {
      while (this.#queue.length > 0) {
        // A turn of the event loop first: the batches that arrived during the
        // last commit (messages from the server's thread) join this group.
        await new Promise((resolve) => setImmediate(resolve));
        const group = this.#queue;
        this.#queue = [];
        try {
          await this.#commit(group);
        } catch (err) {
          // Nothing may end the writer: a failure #commit did not expect fails its group, and the next group is written.
          for (const p of group) p.reject(err);
        }
      }
    } finally {
      this.#running = false;
    }
  }

  /**
   * Writes each batch of the group in a savepoint of its own, then commits
   * them together. Should a batch fail, the group is rolled back and each
   * batch committed alone, so only the failing one fails (nothing a
   * rolled-back savepoint left in the write store's memory is trusted).
   */
  async #commit(group: Pending[]): Promise<void> {
    let db: Db;
    try {
      db = this.#open();
      await this.#begin(db);
    } catch (err) {
      for (const p of group) p.reject(err);
      return;
    }
    const store = new WriteStore(db);
    const counts = group.map(() => ({ inserted: 0, updated: 0, unchanged: 0 }));
    try {
      group.forEach((p, i) => this.#writeBatch(store, p, counts[i]!));
      store.beforeCommit();
      db.exec("COMMIT");
    } catch (err) {
      if (db.inTransaction) db.exec("ROLLBACK");
      if (group.length === 1) group[0]!.reject(err);
      else for (const p of group) await this.#commit([p]);
      return;
    }
    group.forEach((p, i) => p.resolve(counts[i]!));
    this.#afterCommit(db, counts);
  }

  /** BEGIN IMMEDIATE, retried on a timer while another connection holds the write lock. */
  async #begin(db: Db): Promise<void> {
    const deadline = performance.now() + this.#lockWaitMs;
    for (let wait = FIRST_RETRY_MS; ; wait = Math.min(MAX_RETRY_MS, wait * 2)) {
      try {
        db.exec("BEGIN IMMEDIATE");
        return;
      } catch (err) {
        if (!isBusy(err)) throw err;
        if (performance.now() + wait > deadline) {
          throw new StoreUnavailableError(`another writer (an import?) held the store's write lock for ${this.#lockWaitMs / 1000} s; retry`, { cause: err });
        }
        await sleep(wait);
      }
    }
  }

  #writeBatch(store: WriteStore, p: Pending, counts: ImportCounts): void {
    const { write } = kindWrites(p.kind);
    store.transaction(() => {
      for (const record of p.records) counts[write(store, record)] += 1;
    });
    // A reorganisation names no collection: those it changed, for the background derive.
    const reorganised = store.takeReorganised();
    if (reorganised.length > 0) counts.collections = reorganised;
  }

  /**
   * Refreshes the planner's statistics now and then. ANALYZE writes, so it
   * needs the write lock, and this connection never waits for it: when
   * another writer holds it (another worker's writer, the background derive),
   * the refresh waits for a later commit. (Thrown out of here, SQLITE_BUSY
   * once ended the writer's thread under two workers' load.)
   */
  #afterCommit(db: Db, counts: ImportCounts[]): void {
    for (const c of counts) this.#rowsSinceStats += c.inserted;
    if (this.#rowsSinceStats >= this.#statsEveryRows || !hasPlannerStats(db)) {
      try {
        refreshPlannerStats(db);
        this.#rowsSinceStats = 0;
      } catch (err) {
        if (!isBusy(err)) throw err;
      }
    }
  }

  #open(): Db {
    if (this.#db !== undefined) return this.#db;
    let db: Db;
    try {
      db = new Database(this.#path, { fileMustExist: true });
      db.pragma("journal_mode = WAL");
    } catch (err) {
      throw new StoreReadOnlyError(`the store ${this.#path} cannot be opened for writing: ${err instanceof Error ? err.message : String(err)}`);
    }
    const version = schemaVersion(db);
    if (version !== MIGRATIONS.length) {
      db.close();
      throw new StoreError(`store ${this.#path} has schema version ${version}, this build needs ${MIGRATIONS.length}`);
    }
    // Acknowledged means on disk: every commit is synced (group commit shares the sync).
    db.pragma("synchronous = FULL");
    db.pragma("busy_timeout = 0");
    tuneForWrites(db);
    // Checkpoints every 40 MB of WAL rather than 4 MB: a sale dirties pages
    // all over its hash and asset indexes, and the same pages again in the
    // next commits; a checkpoint copies each page once however many commits
    // rewrote it (bench:ingest: commits a third cheaper at 200,000 sales).
    db.pragma(`wal_autocheckpoint = ${CHECKPOINT_PAGES}`);
    this.#db = db;
    return db;
  }
}

function isBusy(err: unknown): boolean {
  return err instanceof Database.SqliteError && (err.code === "SQLITE_BUSY" || err.code === "SQLITE_BUSY_SNAPSHOT");
}
