import { rmSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { runCliSync } from "../src/cli/run-sync.js";

// A benchmark round's own empty store, and an import into it through the
// CLI: what bench:import and bench:export measure alike.

/**
 * Runs `fn` on an empty store of its own: a new SQLite file in `dir`, or a
 * new database on the PostgreSQL server `pgUrl` (`name` and `round` name
 * it), removed after.
 */
export async function withRoundStore(engine: string, where: { dir: string; pgUrl: string; name: string }, round: number, fn: (db: string) => void | Promise<void>): Promise<void> {
  if (engine === "sqlite") {
    const db = join(where.dir, `round-${round}.sqlite`);
    try {
      await fn(db);
    } finally {
      for (const suffix of ["", "-wal", "-shm", "-keys", "-keys-wal", "-keys-shm"]) rmSync(db + suffix, { force: true });
    }
    return;
  }
  const name = `marketdata_bench_${where.name}_${process.pid}_${round}`;
  const admin = new pg.Client({ connectionString: where.pgUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(where.pgUrl);
    url.pathname = `/${name}`;
    await fn(url.toString());
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

/** The CLI's own rows/s figure of one import of `file` (records of `kind`) into `db`, by this build or by `bin`'s. */
export function cliImportRate(db: string, file: string, kind = "sales", bin?: string): number {
  const out = runCliSync(["import", "--db", db, kind, file], undefined, bin).stderr;
  const rate = /\((\d+) rows\/s\)/.exec(out)?.[1];
  if (rate === undefined) throw new Error(`no rate in: ${out}`);
  return Number(rate);
}
