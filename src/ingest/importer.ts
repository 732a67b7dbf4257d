import type { ImportRecord, RecordImport } from "../store/ports/writes.js";
import { NOT_UTF8, parseLine, type Problem } from "../domain/kinds/fields.js";
import { type Line, NotUtf8 } from "./line-batches.js";
import { handlerFor, type Kind } from "../domain/kinds/index.js";
import { DEFAULTS } from "../config/settings.js";
import { latestTimeAllowed } from "../domain/formats.js";

// NDJSON import: one record per line, checked here, then written by the
// store (its RecordImport port) by natural key, all inside one transaction,
// so a store sees the whole file or none of it.

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
  /** SQLite's bulk path: true from the first row, false never (tests of each path); unset, as the importer decides. */
  bulk?: boolean;
  /** How far past the clock (when the import starts) a sale's or listing's time may be; --max-clock-skew's default when absent. */
  maxClockSkewSeconds?: number;
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
 * Reads, parses and checks every line, handing each valid record to `accept`
 * (awaited only when it returns a promise: a full COPY stream). Counts lines
 * and rejections in `stats`; throws ImportCancelled or ImportRejected at the
 * end when the import must not commit. Shared by both engines.
 */
export async function scanLines(
  lines: AsyncIterable<Line | readonly Line[]>,
  options: ImportOptions,
  stats: ImportStats,
  accept: (record: unknown) => void | Promise<void>,
): Promise<void> {
  const handler = handlerFor(options.kind, { latestTime: latestTimeAllowed(options.maxClockSkewSeconds ?? DEFAULTS.maxClockSkew) });
  let lineNo = 0;
  let bytes = 0;
  for await (const item of lines) {
    const batch = typeof item === "string" || item instanceof NotUtf8 ? [item] : item;
    for (const text of batch) {
      lineNo += 1;
      if (text instanceof NotUtf8) bytes += text.bytes + 1;
      else {
        bytes += Buffer.byteLength(text) + 1;
        if (text.trim() === "") continue;
      }
      stats.lines += 1;
      const problems: Problem[] = [];
      let record: unknown;
      if (text instanceof NotUtf8) problems.push({ field: "record", reason: NOT_UTF8 });
      else {
        const parsed = parseLine(text);
        if (parsed.invalid !== undefined) problems.push(parsed.invalid);
        else record = handler.check(parsed.value, problems);
      }
      if (problems.length > 0 || record === undefined) {
        stats.rejected += 1;
        options.onReject?.({ line: lineNo, problems, input: text instanceof NotUtf8 ? "" : text });
      } else if (stats.rejected === 0 || options.skipInvalid) {
        const pending = accept(record);
        if (pending !== undefined) await pending;
      }
      if (stats.lines % PROGRESS_EVERY === 0) {
        options.onProgress?.(stats, bytes);
        if (options.cancelled?.()) throw new ImportCancelled();
      }
    }
  }
  options.onProgress?.(stats, bytes);
  // A cancelled input can end early without an error: never commit it.
  if (options.cancelled?.()) throw new ImportCancelled();
  if (stats.rejected > 0 && !options.skipInvalid) throw new ImportRejected(stats);
}

/**
 * Imports `lines` into `target` (a store's RecordImport port, either
 * engine), in one transaction. By default any bad line rolls the whole
 * import back (after reading every line, so all problems are reported);
 * with skipInvalid the valid records are kept.
 */
export async function importLines(
  target: RecordImport,
  lines: AsyncIterable<Line | readonly Line[]>,
  options: ImportOptions,
): Promise<ImportStats> {
  const stats: ImportStats = { lines: 0, inserted: 0, updated: 0, unchanged: 0, rejected: 0 };
  await target.importRecords(
    options.kind,
    (write) => scanLines(lines, options, stats, (record) => write(record as ImportRecord)),
    stats,
    {
      ...(options.maintainStats === undefined ? {} : { maintainStats: options.maintainStats }),
      ...(options.bulk === undefined ? {} : { bulk: options.bulk }),
    },
  );
  return stats;
}
