import { type Db, refreshPlannerStats } from "../store/database.js";
import { WriteStore } from "../store/write-store.js";
import type { Problem } from "./fields.js";
import { handlerFor, type Kind, TABLE_OF } from "./kinds.js";

// NDJSON import: one record per line, checked, then upserted by natural key,
// all inside one transaction, so a store sees the whole file or none of it
// (a killed import leaves the store as it was: SQLite rolls back).

export interface ImportStats {
  /** Non-blank lines read. */
  lines: number;
  inserted: number;
  updated: number;
  unchanged: number;
  rejected: number;
}

export interface LineError {
  line: number;
  problems: Problem[];
  input: string;
}

export interface ImportOptions {
  kind: Kind;
  /** Write the valid records even when some lines are bad. */
  skipInvalid: boolean;
  /** Told about each bad line as it is found. */
  onReject?: (error: LineError) => void;
  /** Told every so often how far the import got. */
  onProgress?: (stats: ImportStats, bytes: number) => void;
  /** Checked between lines; when it returns true the import rolls back. */
  cancelled?: () => boolean;
  /** false only to measure what keeping the stats aggregates costs (bench:stats). */
  maintainStats?: boolean;
}

export class ImportRejected extends Error {
  constructor(readonly stats: ImportStats) {
    super(`${stats.rejected} invalid line(s); nothing was written`);
  }
}

export class ImportCancelled extends Error {
  constructor() {
    super("import cancelled; nothing was written");
  }
}

const PROGRESS_EVERY = 10_000;

/**
 * An import switches to bulk mode (secondary indexes dropped, rebuilt once at
 * the end) once it has inserted a quarter as many rows as the table held:
 * from then on, rebuilding costs less than updating the indexes row by row.
 * Into an empty table that is from the first row.
 */
const BULK_FRACTION = 0.25;

/**
 * Reads, parses and checks every line, handing each valid record to `accept`
 * (awaited only when it returns a promise: a full COPY stream). Counts lines
 * and rejections in `stats`; throws ImportCancelled or ImportRejected at the
 * end when the import must not commit. Shared by both engines.
 */
export async function scanLines(
  lines: AsyncIterable<string>,
  options: ImportOptions,
  stats: ImportStats,
  accept: (record: unknown) => void | Promise<void>,
): Promise<void> {
  const handler = handlerFor(options.kind);
  let lineNo = 0;
  let bytes = 0;
  for await (const text of lines) {
    lineNo += 1;
    bytes += Buffer.byteLength(text) + 1;
    if (text.trim() === "") continue;
    stats.lines += 1;
    const problems: Problem[] = [];
    let record: unknown;
    try {
      record = handler.check(JSON.parse(text), problems);
    } catch (err) {
      if (!(err instanceof SyntaxError)) throw err;
      problems.push({ field: "record", reason: `is not valid JSON (${err.message})` });
    }
    if (problems.length > 0 || record === undefined) {
      stats.rejected += 1;
      options.onReject?.({ line: lineNo, problems, input: text });
    } else if (stats.rejected === 0 || options.skipInvalid) {
      const pending = accept(record);
      if (pending !== undefined) await pending;
    }
    if (stats.lines % PROGRESS_EVERY === 0) {
      options.onProgress?.(stats, bytes);
      if (options.cancelled?.()) throw new ImportCancelled();
    }
  }
  options.onProgress?.(stats, bytes);
  // A cancelled input can end early without an error: never commit it.
  if (options.cancelled?.()) throw new ImportCancelled();
  if (stats.rejected > 0 && !options.skipInvalid) throw new ImportRejected(stats);
}

/**
 * Imports `lines` into `db`. By default any bad line rolls the whole import
 * back (after reading every line, so all problems are reported);
 * with skipInvalid the valid records are kept.
 */
export async function importLines(db: Db, lines: AsyncIterable<string>, options: ImportOptions): Promise<ImportStats> {
  const store = new WriteStore(db, { maintainStats: options.maintainStats ?? true });
  const handler = handlerFor(options.kind);
  const stats: ImportStats = { lines: 0, inserted: 0, updated: 0, unchanged: 0, rejected: 0 };
  db.exec("BEGIN IMMEDIATE");
  const table = TABLE_OF[options.kind];
  const rowsBefore = store.rowCount(table);
  let restoreIndexes: (() => void) | undefined;
  try {
    await scanLines(lines, options, stats, (record) => {
      stats[handler.write(store, record)] += 1;
      if (restoreIndexes === undefined && stats.inserted >= Math.max(1, rowsBefore * BULK_FRACTION)) {
        restoreIndexes = store.deferIndexes(table);
      }
    });
    restoreIndexes?.();
    // After the indexes are back: the aggregates are recomputed from index ranges.
    store.flushAggregates();
    db.exec("COMMIT");
    refreshPlannerStats(db);
    return stats;
  } catch (err) {
    if (db.inTransaction) db.exec("ROLLBACK");
    throw err;
  }
}
