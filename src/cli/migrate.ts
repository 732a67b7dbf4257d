import { existsSync } from "node:fs";
import Database from "better-sqlite3";
import { MIGRATIONS } from "../store/migrations.js";
import { openWritable, StoreError } from "../store/database.js";
import { isPostgresUrl, migratePg, openPool, redactUrl } from "../store/pg/database.js";

// `migrate`: brings a store to this build's schema, on either engine: a
// SQLite file (created if absent) or a PostgreSQL database (--db
// postgres://...; run it against the primary). import and demo migrate
// SQLite stores themselves; serve never migrates, it refuses a store whose
// schema is not this build's.

export async function runMigrate(db: string): Promise<void> {
  if (isPostgresUrl(db)) {
    const pool = openPool(db, 1);
    try {
      const { from, to } = await migratePg(pool).catch((err: unknown) => {
        if (err instanceof StoreError) throw err;
        throw new StoreError(`cannot migrate the PostgreSQL store at ${redactUrl(db)}: ${err instanceof Error ? err.message : String(err)}`);
      });
      process.stderr.write(
        from === to
          ? `PostgreSQL store ${redactUrl(db)} is at schema version ${to}: nothing to do\n`
          : `migrated PostgreSQL store ${redactUrl(db)} from schema version ${from} to ${to}\n`,
      );
    } finally {
      await pool.end();
    }
    return;
  }
  let from = 0;
  if (existsSync(db)) {
    const probe = new Database(db, { readonly: true, fileMustExist: true });
    from = probe.pragma("user_version", { simple: true }) as number;
    probe.close();
  }
  openWritable(db).close();
  const to = MIGRATIONS.length;
  process.stderr.write(from === to ? `store ${db} is at schema version ${to}: nothing to do\n` : `migrated store ${db} from schema version ${from} to ${to}\n`);
}
