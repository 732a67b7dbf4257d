import { isAddress } from "../domain/formats.js";
import { openWritableStore } from "../store/open.js";
import type { DiskUsage } from "../store/ports/writes.js";
import { CliError } from "./errors.js";

export interface StatsRebuildResult {
  /** Hour and series rows that were wrong (inserted, changed or deleted by the rebuild). */
  changed: number;
  /** Hour rows after the rebuild. */
  rows: number;
  ms: number;
}

/**
 * Recomputes the stats aggregates from the raw sales, in one transaction, on
 * either engine. With check, nothing is written: the result says how many
 * rows were wrong.
 */
export async function rebuildStats(dbPath: string, options: { collection?: string | undefined; check?: boolean }): Promise<StatsRebuildResult> {
  if (options.collection !== undefined && !isAddress(options.collection)) {
    throw new CliError(`--collection must be 0x followed by 40 hex characters, got ${JSON.stringify(options.collection)}`);
  }
  const store = await openWritableStore(dbPath);
  try {
    let collectionId: number | undefined;
    if (options.collection !== undefined) {
      collectionId = await store.derive.collectionId(options.collection.toLowerCase());
      if (collectionId === undefined) throw new CliError(`collection ${options.collection.toLowerCase()} not found in ${store.description}`);
    }
    const started = performance.now();
    const r = await store.rebuildStats(collectionId, options.check ?? false);
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
        : `stats of ${scope}: ${r.changed} aggregate row(s) (hours, series) differ from the sales; run "marketdata stats rebuild" to fix them\n`,
    );
    if (r.changed > 0) process.exitCode = 1;
    return;
  }
  process.stderr.write(
    `rebuilt stats of ${scope} from the sales in ${r.ms.toFixed(0)} ms: ${r.changed} aggregate row(s) (hours, series) fixed, ${r.rows} hour rows in the store\n`,
  );
}

/** Where the store's disk goes, on either engine. */
export async function diskUsage(dbPath: string): Promise<DiskUsage> {
  const store = await openWritableStore(dbPath);
  try {
    return await store.diskUsage();
  } finally {
    await store.close();
  }
}

const mb = (bytes: number) => (bytes / 1e6).toFixed(1).padStart(9);

export async function runStatsDisk(dbPath: string, json: boolean): Promise<void> {
  const usage = await diskUsage(dbPath);
  if (json) {
    process.stdout.write(`${JSON.stringify(usage)}\n`);
    return;
  }
  const rows = usage.parts.filter((p) => p.bytes > 0);
  const width = Math.max(4, ...rows.map((p) => p.name.length));
  const lines = rows.map((p) => `${p.name.padEnd(width)} ${mb(p.bytes)} MB ${String(p.rows).padStart(12)}  ${p.name === p.table ? "" : `(index of ${p.table})`}`);
  process.stdout.write(`${"name".padEnd(width)} ${"size".padStart(12)} ${"rows".padStart(12)}\n${lines.join("\n")}\n${"total".padEnd(width)} ${mb(usage.total)} MB\n`);
}
