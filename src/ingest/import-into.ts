import type { WritableStore } from "../store/writable.js";
import { type ImportOptions, type ImportStats, importLines } from "./importer.js";
import { importLinesPg } from "./pg-importer.js";

/** Imports NDJSON lines into a store of either engine, atomically. */
export function importInto(store: WritableStore, lines: AsyncIterable<string>, options: ImportOptions): Promise<ImportStats> {
  return store.engine === "sqlite" ? importLines(store.db, lines, options) : importLinesPg(store.pool, lines, options);
}
