import { isAddress } from "../domain/formats.js";
import { openWritable } from "../store/database.js";
import { SalesAggregates } from "../store/sales-stats.js";
import { CliError } from "./errors.js";
import { isPostgresUrl } from "../store/pg/database.js";
import { PgDeriveStore } from "../store/pg/pg-derive-store.js";
import { rebuildStatsPg } from "../store/pg/pg-stats-rebuild.js";
import { openWritableStore } from "../store/writable.js";

export interface StatsRebuildResult {
  /** Hour rows that were wrong (inserted, changed or deleted by the rebuild). */
  changed: number;
  /** Hour rows after the rebuild. */
  rows: number;
  ms: number;
}

/**
 * Recomputes the stats aggregates from the raw sales, in one transaction.
 * With check, nothing is written: the result says how many rows were wrong.
 */
export async function rebuildStats(dbPath: string, options: { collection?: string | undefined; check?: boolean }): Promise<StatsRebuildResult> {
  if (options.collection !== undefined && !isAddress(options.collection)) {
    throw new CliError(`--collection must be 0x followed by 40 hex characters, got ${JSON.stringify(options.collection)}`);
  }
  if (isPostgresUrl(dbPath)) return rebuildOnPostgres(dbPath, options);
  const db = openWritable(dbPath);
  try {
    let collectionId: number | undefined;
    if (options.collection !== undefined) {
      const row = db.prepare("SELECT id FROM collections WHERE address = ?").get(options.collection.toLowerCase()) as
        | { id: number }
        | undefined;
      if (!row) throw new CliError(`collection ${options.collection.toLowerCase()} not found in ${dbPath}`);
      collectionId = row.id;
    }
    const started = performance.now();
    db.exec("BEGIN IMMEDIATE");
    try {
      const { changed } = new SalesAggregates(db).rebuild(collectionId);
      const rows = db.prepare("SELECT count(*) FROM sales_hourly").pluck().get() as number;
      db.exec(options.check ? "ROLLBACK" : "COMMIT");
      return { changed, rows, ms: performance.now() - started };
    } catch (err) {
      if (db.inTransaction) db.exec("ROLLBACK");
      throw err;
    }
  } finally {
    db.close();
  }
}

async function rebuildOnPostgres(url: string, options: { collection?: string | undefined; check?: boolean }): Promise<StatsRebuildResult> {
  const store = await openWritableStore(url);
  if (store.engine !== "postgres") throw new Error("unreachable");
  try {
    let collectionId: number | undefined;
    if (options.collection !== undefined) {
      collectionId = await new PgDeriveStore(store.pool).collectionId(options.collection.toLowerCase());
      if (collectionId === undefined) throw new CliError(`collection ${options.collection.toLowerCase()} not found in ${store.description}`);
    }
    const started = performance.now();
    const r = await rebuildStatsPg(store.pool, collectionId, options.check ?? false);
    return { ...r, ms: performance.now() - started };
  } finally {
    await store.close();
  }
}

export async function runStatsRebuild(dbPath: string, options: { collection?: string | undefined; check: boolean }): Promise<void> {
  const r = await rebuildStats(dbPath, options);
  const scope = options.collection === undefined ? "every collection" : options.collection.toLowerCase();
  if (options.check) {
    process.stderr.write(
      r.changed === 0
        ? `stats of ${scope} are consistent with the sales (checked in ${r.ms.toFixed(0)} ms)\n`
        : `stats of ${scope}: ${r.changed} hour row(s) differ from the sales; run "marketdata stats rebuild" to fix them\n`,
    );
    if (r.changed > 0) process.exitCode = 1;
    return;
  }
  process.stderr.write(
    `rebuilt stats of ${scope} from the sales in ${r.ms.toFixed(0)} ms: ${r.changed} hour row(s) fixed, ${r.rows} in the store\n`,
  );
}
