import pg from "pg";
import { sqliteErrorLine, StoreError } from "./sqlite/database.js";
import { RecordConflictError, StoreUnavailableError } from "./ports/errors.js";

/**
 * The one line a command prints for an error of the store: a StoreError's
 * message, SQLite's (busy, corrupt, read-only, full), PostgreSQL's own words
 * when it is unreachable or refuses (URLs are never in them); undefined for
 * any other error.
 */
export function storeErrorLine(err: unknown): string | undefined {
  if (err instanceof StoreError || err instanceof StoreUnavailableError) return err.message;
  if (err instanceof RecordConflictError) return `nothing was written: ${err.message}`;
  if (err instanceof Error && (err instanceof pg.DatabaseError || /^(ECONNREFUSED|ENOTFOUND|ETIMEDOUT|ECONNRESET)$/.test(String((err as { code?: unknown }).code)))) {
    return `PostgreSQL: ${err.message}`;
  }
  return sqliteErrorLine(err);
}
