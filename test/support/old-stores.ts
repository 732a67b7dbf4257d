import Database from "better-sqlite3";
import type pg from "pg";
import { PG_MIGRATIONS } from "../../src/store/postgres/migrations.js";
import { openKeys } from "../../src/store/sqlite/database.js";
import { MIGRATIONS } from "../../src/store/sqlite/migrations.js";

// Stores as an older build left them, to test what a migration makes of
// their rows: the schema's first `version` steps, and nothing after.

/** A new SQLite file at schema `version` (WAL, as the store runs), open for the test to fill; the test closes it. */
export function sqliteAtVersion(path: string, version: number): Database.Database {
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  for (const step of MIGRATIONS.slice(0, version)) {
    if (typeof step === "string") db.exec(step);
    else step(db, { openKeys: () => openKeys(path) });
  }
  db.pragma(`user_version = ${version}`);
  return db;
}

/** An empty PostgreSQL database brought to schema `version`. */
export async function pgAtVersion(pool: pg.Pool, version: number): Promise<void> {
  await pool.query("CREATE TABLE schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())");
  for (let v = 0; v < version; v++) {
    const step = PG_MIGRATIONS[v]!;
    if (typeof step === "string") await pool.query(step);
    else {
      const client = await pool.connect();
      try {
        await step(client);
      } finally {
        client.release();
      }
    }
    await pool.query("INSERT INTO schema_migrations (version) VALUES ($1)", [v + 1]);
  }
}
