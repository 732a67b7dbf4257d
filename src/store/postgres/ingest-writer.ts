import type pg from "pg";
import type { Kind } from "../../domain/kinds/index.js";
import { StoreReadOnlyError, StoreUnavailableError } from "../ports/errors.js";
import type { ImportCounts, ImportRecord, IngestWriter } from "../ports/writes.js";
import { LOCK_WAIT_MS, type LockWaitOptions } from "../shared/lock-wait.js";
import { openPool, redactUrl, requireCurrentPgSchema } from "./database.js";
import { parsePgUrl } from "./hosts.js";
import { PgRecordImport } from "./importer.js";
import { unavailable } from "./statements.js";

// The server's writer on PostgreSQL (the ingest API): batches are imported
// (staged by COPY, merged by natural key, the data version bumped, in one
// transaction) on a small pool of its own beside the server's read-only
// pool, one transaction at a time per process, queued batches sharing one. PostgreSQL
// commits durably (synchronous_commit on, its default) before the promise
// resolves. A server whose URL is a hot standby cannot write: its batches
// fail with StoreReadOnlyError, and the topology documented in
// docs/postgresql.md sends ingest to the primary.

/** Connections for writes per server process (one batch at a time; one more for the schema check). */
const WRITE_POOL_SIZE = 2;
/** SQLSTATE 55P03: lock_not_available (lock_timeout passed). */
const LOCK_NOT_AVAILABLE = "55P03";
/** SQLSTATE 25006: read_only_sql_transaction (a standby, or a read-only default). */
const READ_ONLY_TRANSACTION = "25006";

export function pgIngestWriter(url: string, options: LockWaitOptions = {}): IngestWriter {
  const lockWaitMs = options.lockWaitMs ?? LOCK_WAIT_MS;
  // Several hosts: a read-only answer means a failover under way, not a replica.
  const failingOver = (parsePgUrl(url)?.hosts.length ?? 1) > 1;
  let pool: pg.Pool | undefined;
  let ready: Promise<PgRecordImport> | undefined;
  const open = (): Promise<PgRecordImport> => {
    ready ??= (async () => {
      pool = openPool(url, { max: WRITE_POOL_SIZE, localSessionCommits: failingOver });
      await requireCurrentPgSchema(pool, url);
      return new PgRecordImport(pool, true);
    })().catch((err: unknown) => {
      // The next batch tries again (the primary may be back).
      ready = undefined;
      void pool?.end();
      pool = undefined;
      throw err;
    });
    return ready;
  };
  // This process's batches go one transaction at a time: the merges of
  // sales take turns on the store anyway (record-writes.ts WRITE_LOCK), and
  // batches waiting here hold no connection (50 writers at once otherwise
  // waited out the pool's connection timeout). The batches that queued
  // during a transaction share the next one (group commit, as the SQLite
  // writer does): one COPY, merge and commit for all, each batch counted as
  // if it had been written alone. A transaction has a fixed cost however
  // small, so one at a time per batch made writers queue behind each other.
  const queue: Pending[] = [];
  let running: Promise<void> | undefined;
  const drain = async () => {
    while (queue.length > 0) {
      const group = takeGroup(queue);
      try {
        const counts = await writeGroup(group[0]!.kind, group.map((p) => p.records));
        for (const [i, p] of group.entries()) p.resolve(counts[i]!);
      } catch (err) {
        // What fails for the store fails for each batch; anything else is
        // tried again one batch at a time, so one batch cannot fail another.
        const storeWide = err instanceof StoreUnavailableError || err instanceof StoreReadOnlyError;
        for (const p of group) {
          if (group.length === 1 || storeWide) p.reject(err);
          else await writeGroup(p.kind, [p.records]).then((c) => p.resolve(c[0]!), p.reject);
        }
      }
    }
    running = undefined;
  };
  return {
    write(kind: Kind, records: readonly ImportRecord[]): Promise<ImportCounts> {
      return new Promise<ImportCounts>((resolve, reject) => {
        queue.push({ kind, records, resolve, reject });
        running ??= drain();
      });
    },
    async close() {
      await running;
      const p = pool;
      pool = undefined;
      ready = undefined;
      await p?.end();
    },
  };

  async function writeGroup(kind: Kind, batches: (readonly ImportRecord[])[]): Promise<ImportCounts[]> {
    try {
      const importer = await open();
      // Autovacuum keeps the statistics of tables written a batch at a time;
      // an import holding the write lock makes batches wait, not hang.
      return await importer.importBatches(kind, batches, { refreshStatistics: false, lockWaitMs });
    } catch (err) {
      if (failingOver && sqlState(err) === READ_ONLY_TRANSACTION) {
        // The host this pool chose stopped taking writes (pg_auto_failover
        // demotes a primary by making it read-only first): its connections
        // are of no more use; the next batch opens a pool that looks for
        // the new primary (hosts.ts), and this one is unavailable, not refused.
        const old = pool;
        pool = undefined;
        ready = undefined;
        void old?.end().catch(() => {});
        throw new StoreUnavailableError(`the primary of ${redactUrl(url)} is changing (a failover); retry`, { cause: err });
      }
      throw classify(err, url, lockWaitMs);
    }
  }
}

interface Pending {
  kind: Kind;
  records: readonly ImportRecord[];
  resolve(counts: ImportCounts): void;
  reject(err: unknown): void;
}

/** Records in one group commit at most (a batch alone may hold 10,000). */
const MAX_GROUP_RECORDS = 20_000;

/** The first queued batches of one kind, in order, up to MAX_GROUP_RECORDS records (always at least one batch). */
function takeGroup(queue: Pending[]): Pending[] {
  let n = 0;
  let end = 0;
  while (end < queue.length && queue[end]!.kind === queue[0]!.kind && (end === 0 || n + queue[end]!.records.length <= MAX_GROUP_RECORDS)) {
    n += queue[end]!.records.length;
    end++;
  }
  return queue.splice(0, end);
}

/** The SQLSTATE of a PostgreSQL error, whichever copy of pg-protocol made it. */
function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

function classify(err: unknown, url: string, lockWaitMs: number): unknown {
  if (sqlState(err) === READ_ONLY_TRANSACTION) {
    return new StoreReadOnlyError(`the PostgreSQL store at ${redactUrl(url)} takes no writes (a hot standby?): send ingest to a server on the primary`);
  }
  if (sqlState(err) === LOCK_NOT_AVAILABLE) {
    return new StoreUnavailableError(`another writer (an import?) held the store's write lock for ${lockWaitMs / 1000} s; retry`, { cause: err });
  }
  if (unavailable(err)) {
    return new StoreUnavailableError(`the PostgreSQL store at ${redactUrl(url)} is unreachable`, { cause: err });
  }
  return err;
}
