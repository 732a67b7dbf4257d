import pg from "pg";
import type { Kind } from "../../domain/kinds.js";
import { type ImportCounts, type ImportRecord, type IngestWriter, StoreReadOnlyError, StoreUnavailableError } from "../ports.js";
import { openPool, redactUrl, requireCurrentPgSchema } from "./database.js";
import { PgRecordImport } from "./importer.js";
import { unavailable } from "./queries.js";

// The server's writer on PostgreSQL (the ingest API): each batch is an
// import of its own (staged by COPY, merged by natural key, the data version
// bumped, all in one transaction), run on a small pool of its own beside the
// server's read-only pool, one batch at a time per process. PostgreSQL
// commits durably (synchronous_commit on, its default) before the promise
// resolves. A server whose URL is a hot standby cannot write: its batches
// fail with StoreReadOnlyError, and the topology documented in
// docs/postgresql.md sends ingest to the primary.

/** Connections for writes per server process (one batch at a time; one more for the schema check). */
const WRITE_POOL_SIZE = 2;
/** How long a batch waits for another writer (an import) before it fails as unavailable. */
const LOCK_WAIT_MS = 10_000;
/** SQLSTATE 55P03: lock_not_available (lock_timeout passed). */
const LOCK_NOT_AVAILABLE = "55P03";
/** SQLSTATE 25006: read_only_sql_transaction (a standby, or a read-only default). */
const READ_ONLY_TRANSACTION = "25006";

export function pgIngestWriter(url: string): IngestWriter {
  let pool: pg.Pool | undefined;
  let ready: Promise<PgRecordImport> | undefined;
  const open = (): Promise<PgRecordImport> => {
    ready ??= (async () => {
      pool = openPool(url, WRITE_POOL_SIZE);
      await requireCurrentPgSchema(pool, url);
      return new PgRecordImport(pool);
    })().catch((err: unknown) => {
      // The next batch tries again (the primary may be back).
      ready = undefined;
      void pool?.end();
      pool = undefined;
      throw err;
    });
    return ready;
  };
  // This process's batches go one after the other: the merges of sales take
  // turns on the store anyway (bulk-kinds.ts WRITE_LOCK), and batches waiting
  // in this queue hold no connection (50 writers at once otherwise waited
  // out the pool's connection timeout).
  let tail: Promise<unknown> = Promise.resolve();
  return {
    write(kind: Kind, records: readonly ImportRecord[]): Promise<ImportCounts> {
      const run = tail.then(() => writeNow(kind, records));
      tail = run.catch(() => {});
      return run;
    },
    async close() {
      await tail;
      const p = pool;
      pool = undefined;
      ready = undefined;
      await p?.end();
    },
  };

  async function writeNow(kind: Kind, records: readonly ImportRecord[]): Promise<ImportCounts> {
    const counts = { inserted: 0, updated: 0, unchanged: 0 };
    try {
      const importer = await open();
      await importer.importRecords(
        kind,
        async (write) => {
          for (const record of records) await write(record);
        },
        counts,
        // Autovacuum keeps the statistics of tables written a batch at a time;
        // an import holding the write lock makes batches wait, not hang.
        { refreshStatistics: false, lockWaitMs: LOCK_WAIT_MS },
      );
    } catch (err) {
      throw classify(err, url);
    }
    return counts;
  }
}

function classify(err: unknown, url: string): unknown {
  if (err instanceof pg.DatabaseError && err.code === READ_ONLY_TRANSACTION) {
    return new StoreReadOnlyError(`the PostgreSQL store at ${redactUrl(url)} takes no writes (a hot standby?): send ingest to a server on the primary`);
  }
  if (err instanceof pg.DatabaseError && err.code === LOCK_NOT_AVAILABLE) {
    return new StoreUnavailableError(`another writer (an import?) held the store's write lock for ${LOCK_WAIT_MS / 1000} s; retry`, { cause: err });
  }
  if (unavailable(err)) {
    return new StoreUnavailableError(`the PostgreSQL store at ${redactUrl(url)} is unreachable`, { cause: err });
  }
  return err;
}
