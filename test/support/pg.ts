import pg from "pg";
import { freshHourlySql } from "../../src/store/postgres/sales-stats.js";

// PostgreSQL for tests: the server at MARKETDATA_TEST_PG (default
// postgres://postgres@127.0.0.1:5432/postgres). Each test file creates a
// database of its own and drops it afterwards. Without a reachable server
// the tests skip with a visible message, unless MARKETDATA_TEST_PG is set,
// which makes them required (CI sets it).

export const PG_ADMIN_URL = process.env.MARKETDATA_TEST_PG || "postgres://postgres@127.0.0.1:5432/postgres";

export const pgAvailable = await (async () => {
  const client = new pg.Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query("SELECT 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
})();

export const skipPg = !pgAvailable && !process.env.MARKETDATA_TEST_PG;
if (skipPg) console.warn(`SKIPPED: PostgreSQL tests: no server at ${PG_ADMIN_URL} (set MARKETDATA_TEST_PG to require it)`);

/** A fresh, empty database; `drop` removes it (and closes what still uses it). */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `marketdata_test_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: PG_ADMIN_URL });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** Hour rows of sales_hourly that differ from the ones the raw sales imply, counted both ways (0 when exact). */
export async function hourRowDrift(db: pg.Pool | pg.Client): Promise<number> {
  // The hours hold the sales no wash rule flags (docs/wash-trades.md; the flags themselves: wash.property.test.ts).
  const fresh = freshHourlySql("wash_flags = 0");
  return (await db.query(`(SELECT * FROM sales_hourly EXCEPT ${fresh}) UNION ALL (${fresh} EXCEPT SELECT * FROM sales_hourly)`)).rowCount ?? 0;
}
