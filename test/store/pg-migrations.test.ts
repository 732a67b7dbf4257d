import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migratePg, openPool, pgSchemaVersion, requireCurrentPgSchema } from "../../src/store/postgres/database.js";
import { PG_MIGRATIONS } from "../../src/store/postgres/migrations.js";
import { runCli } from "../cli/run-cli.js";
import { pgAtVersion } from "../support/old-stores.js";
import { createTestDatabase, skipPg } from "../support/pg.js";

// Versioned migrations on PostgreSQL (issue 10): `marketdata migrate --db
// postgres://...` creates the schema in PostgreSQL's own types, is
// idempotent and safe to run twice at once, and a store whose schema is
// older or newer than the build is refused with what to do.

describe.skipIf(skipPg)("PostgreSQL migrations", () => {
  let db: { url: string; drop(): Promise<void> };
  let pool: pg.Pool;
  beforeAll(async () => {
    db = await createTestDatabase();
    pool = openPool(db.url, 2);
  });
  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  it("an empty database is refused as too old, with the command that fixes it", async () => {
    await expect(requireCurrentPgSchema(pool, db.url)).rejects.toThrow(/schema version 0, this build needs \d+; run "marketdata migrate --db URL"/);
  });

  it("marketdata migrate creates the schema, twice at once without harm, then has nothing to do", async () => {
    const [a, b] = await Promise.all([migratePg(pool), migratePg(openPool(db.url, 1))]);
    expect([a.to, b.to]).toEqual([PG_MIGRATIONS.length, PG_MIGRATIONS.length]);
    expect(Math.min(a.from, b.from)).toBe(0);
    expect(Math.max(a.from, b.from)).toBe(PG_MIGRATIONS.length);
    expect(await pgSchemaVersion(pool)).toBe(PG_MIGRATIONS.length);
    await requireCurrentPgSchema(pool, db.url);
    const r = runCli(["migrate", "--db", db.url]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/is at schema version \d+: nothing to do/);
  });

  it("uses PostgreSQL's own types: numeric for ids and wei, bytea for hashes and addresses", async () => {
    const cols = await pool.query<{ table_name: string; column_name: string; data_type: string }>(
      `SELECT table_name, column_name, data_type FROM information_schema.columns
       WHERE table_schema = 'public' AND (table_name, column_name) IN
         (('sales', 'asset_id'), ('sales', 'price'), ('sales', 'hash'), ('sales', 'buyer'), ('sales_hourly', 'cum_volume'), ('api_keys', 'key_hash'))
       ORDER BY table_name, column_name`,
    );
    expect(cols.rows.map((r) => `${r.table_name}.${r.column_name} ${r.data_type}`)).toEqual([
      "api_keys.key_hash bytea",
      "sales.asset_id numeric",
      "sales.buyer bytea",
      "sales.hash bytea",
      "sales.price numeric",
      "sales_hourly.cum_volume numeric",
    ]);
    // Exact sums far above 2^64.
    await pool.query("INSERT INTO collections (address) VALUES ('0x' || repeat('a', 40))");
    const big = (2n ** 200n).toString();
    for (const [i, price] of [big, big, "1"].entries()) {
      await pool.query(
        `INSERT INTO sales (collection_id, asset_id, hash, seller, buyer, timestamp, block, price, amount_received, marketplace)
         VALUES (1, $1, $2, $3, $3, 1700000000, 1, $4, $4, 'OPENSEA')`,
        [String(i), Buffer.alloc(32, i + 1), Buffer.alloc(20, 7), price],
      );
    }
    const sum = await pool.query<{ s: string }>("SELECT sum(price)::text AS s FROM sales");
    expect(sum.rows[0]!.s).toBe((2n * 2n ** 200n + 1n).toString());
  });

  it("a store newer than the build is refused, by serve's check and by migrate", async () => {
    await pool.query("INSERT INTO schema_migrations (version) VALUES ($1)", [PG_MIGRATIONS.length + 1]);
    await expect(requireCurrentPgSchema(pool, db.url)).rejects.toThrow(/newer than this build/);
    const r = runCli(["migrate", "--db", db.url]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^marketdata: the PostgreSQL store has schema version \d+, newer than this build/);
    await pool.query("DELETE FROM schema_migrations WHERE version = $1", [PG_MIGRATIONS.length + 1]);
  });

  it("an unreachable server is a clear error, and a password never reaches a message", () => {
    const r = runCli(["migrate", "--db", "postgres://user:secret@127.0.0.1:1/nothing"]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^marketdata: cannot migrate the PostgreSQL store at postgres:\/\/user:\*\*\*@127\.0\.0\.1:1\/nothing/);
    expect(r.stderr).not.toContain("secret");
  });

  it("keys create, list, update and revoke work on PostgreSQL, and bump the data version", async () => {
    const version = async () => Number((await pool.query<{ v: string }>("SELECT data_version AS v FROM store_state")).rows[0]!.v);
    const before = await version();
    const created = runCli(["keys", "create", "--db", db.url, "--name", "pg", "--rate", "40"]);
    expect(created.status, created.stderr).toBe(0);
    const key = created.stdout.trim().split("\n").pop()!;
    expect(key).toMatch(/^mdk_/);
    expect(runCli(["keys", "update", "--db", db.url, "1", "--rate", "default"]).status).toBe(0);
    expect(runCli(["keys", "revoke", "--db", db.url, "1"]).status).toBe(0);
    expect(runCli(["keys", "list", "--db", db.url]).stdout).toMatch(/^ID\s+NAME\s+SCOPE\s+CREATED\s+REVOKED\s+RATE\/S\n1\s+pg\s+read\s+\S+\s+\d{4}-\S+\s+default\n$/);
    expect(runCli(["keys", "revoke", "--db", db.url, "9"]).stderr).toMatch(/no API key with id 9/);
    const stored = await pool.query<{ key_hash: Buffer }>("SELECT key_hash FROM api_keys");
    expect(stored.rows[0]!.key_hash).toHaveLength(32);
    expect(await version()).toBe(before + 3);
  });

  /** A new database at schema `version`, as a build of that version left it, migrated on by `fn`. */
  async function atVersion(version: number, fn: (pool: pg.Pool, url: string) => Promise<void>): Promise<void> {
    const old = await createTestDatabase();
    const p = openPool(old.url, 2);
    try {
      await pgAtVersion(p, version);
      await fn(p, old.url);
    } finally {
      await p.end();
      await old.drop();
    }
  }

  it("migration 2 gives every key made before it the read scope; keys create --scope ingest makes a writer", async () => {
    await atVersion(1, async (p, url) => {
      await p.query("INSERT INTO api_keys (name, key_hash, created_at) VALUES ('v1', sha256('old'::bytea), 1700000000)");
      expect(await migratePg(p)).toEqual({ from: 1, to: PG_MIGRATIONS.length });
      const scopes = await p.query<{ name: string; scope: string }>("SELECT name, scope FROM api_keys ORDER BY id");
      expect(scopes.rows.every((r) => r.scope === "read")).toBe(true);
      expect(runCli(["keys", "create", "--db", url, "--name", "indexer", "--scope", "ingest"]).status).toBe(0);
      expect(runCli(["keys", "list", "--db", url]).stdout).toMatch(/\n\d+\s+indexer\s+ingest\s+/);
      await expect(p.query("UPDATE api_keys SET scope = 'root'")).rejects.toThrow(/check constraint/);
    });
  });

  it("migration 18 moves a store with a partition per collection (300 of them) into one table: every row, its feed position and answer kept; 19 drops the sales' binary form", async () => {
    await atVersion(17, async (p) => {
      await p.query("INSERT INTO collections (address) SELECT '0x' || lpad(to_hex(g), 40, '0') FROM generate_series(1, 300) g");
      // As writes made them before: a partition per collection with sales.
      await p.query(`DO $$ BEGIN FOR cid IN 1..300 LOOP
        EXECUTE format('CREATE TABLE sales_c%1$s PARTITION OF sales FOR VALUES IN (%1$s)', cid); END LOOP; END $$`);
      await p.query(
        `INSERT INTO sales (collection_id, asset_id, hash, seller, buyer, timestamp, block, price, amount_received, marketplace, wire_json)
         SELECT 1 + g % 300, g % 50, sha256(int4send(g)), substr(sha256(int4send(-g)), 1, 20), substr(sha256(int4send(-g)), 1, 20),
                1700000000 + g, g, g * 1000, g * 900, 'OPENSEA', '{"n":' || g || '}'
         FROM generate_series(1, 3000) g`,
      );
      const before = (await p.query("SELECT collection_id, asset_id, hash, price, feed_seq, wire_json FROM sales ORDER BY feed_seq")).rows;
      expect(await migratePg(p)).toEqual({ from: 17, to: PG_MIGRATIONS.length });
      await expectOneSalesTable(p);
      // Every row and answer kept; 21 adds the block hash to each answer ("" for none).
      const answered = before.map((r: { wire_json: string }) => ({ ...r, wire_json: `${r.wire_json.slice(0, -1)},"blockHash":""}` }));
      expect((await p.query("SELECT collection_id, asset_id, hash, price, feed_seq, wire_json FROM sales ORDER BY feed_seq")).rows).toEqual(answered);
      const wire = await p.query("SELECT column_name FROM information_schema.columns WHERE table_name = 'sales' AND column_name LIKE 'wire%'");
      expect(wire.rows).toEqual([{ column_name: "wire_json" }]);
      // New positions follow the old ones; the natural key still refuses a repeat.
      const next = await p.query<{ s: string }>(
        `INSERT INTO sales (collection_id, asset_id, hash, seller, buyer, timestamp, block, price, amount_received, marketplace)
         VALUES (301, 1, sha256('x'), substr(sha256('y'), 1, 20), substr(sha256('y'), 1, 20), 1700000000, 1, 1, 1, 'BLUR') RETURNING feed_seq AS s`,
      );
      expect(BigInt(next.rows[0]!.s)).toBeGreaterThan(BigInt((before.at(-1) as { feed_seq: string }).feed_seq));
      await expect(p.query("INSERT INTO sales SELECT * FROM sales LIMIT 1")).rejects.toThrow(/sales_natural_key/);
    });
  });

  it("migrations 4 and 18: sales go into a partition per collection and back into one table, every row and index kept", async () => {
    await atVersion(3, async (p) => {
      await p.query("INSERT INTO collections (address) VALUES ('0x' || repeat('a', 40)), ('0x' || repeat('b', 40)), ('0x' || repeat('c', 40))");
      for (const [i, c] of [1, 1, 2, 1].entries()) {
        await p.query(
          `INSERT INTO sales (collection_id, asset_id, hash, seller, buyer, timestamp, block, price, amount_received, marketplace)
           VALUES ($1, $2, $3, $4, $4, 1700000000, 1, 5, 4, 'OPENSEA')`,
          [c, String(i), Buffer.alloc(32, i + 1), Buffer.alloc(20, 7)],
        );
      }
      expect(await migratePg(p)).toEqual({ from: 3, to: PG_MIGRATIONS.length });
      const perCollection = await p.query<{ c: number; n: number }>("SELECT collection_id AS c, count(*)::int AS n FROM sales GROUP BY 1 ORDER BY 1");
      expect(perCollection.rows).toEqual([{ c: 1, n: 3 }, { c: 2, n: 1 }]);
      await expectOneSalesTable(p);
      // Migration 5 (live feeds): every row already here has a position of its own, and the store an epoch.
      const positions = (await p.query<{ s: number }>("SELECT feed_seq AS s FROM sales")).rows.map((r) => Number(r.s));
      expect(new Set(positions).size).toBe(4);
      expect(positions.every((x) => x > 0)).toBe(true);
      expect((await p.query("SELECT feed_epoch FROM store_state")).rows[0].feed_epoch).toMatch(/^[0-9a-f]{16}$/);
    });
  });

  it("start (the embedded demo) refuses a PostgreSQL URL plainly instead of taking it for a file", () => {
    const r = runCli(["start", "--db", db.url, "--port", "0"]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/works on the embedded SQLite store only .* on PostgreSQL use demo, keys create and serve/);
  });
});


/**
 * Sales are one table (migration 18): not partitioned, no sales_c* tables,
 * its indexes leading with the collection but the natural key and (22)
 * sales_by_block, whose reorganisations reach every collection of a chain.
 */
async function expectOneSalesTable(p: pg.Pool): Promise<void> {
  expect((await p.query("SELECT count(*)::int AS n FROM pg_partitioned_table")).rows[0].n).toBe(0);
  expect((await p.query("SELECT count(*)::int AS n FROM pg_class WHERE relname ~ '^sales_c[0-9]+$'")).rows[0].n).toBe(0);
  const indexes = await p.query<{ name: string; def: string }>(
    "SELECT c.relname AS name, pg_get_indexdef(i.indexrelid) AS def FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'sales'::regclass ORDER BY 1",
  );
  expect(indexes.rows.map((r) => r.name)).toEqual(["sales_by_asset", "sales_by_block", "sales_by_feed", "sales_by_marketplace", "sales_by_time", "sales_natural_key", "sales_washed"]);
  for (const { name, def } of indexes.rows) {
    expect(def, name).toMatch(
      name === "sales_natural_key" ? /\(hash, collection_id, asset_id\)/ : name === "sales_by_block" ? /USING btree \(block\)/ : /USING btree \(collection_id, /,
    );
  }
}

describe("migrate on SQLite", () => {
  it("creates and migrates a store file, then has nothing to do", async () => {
    const { mkdtempSync, rmSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const dir = mkdtempSync(`${tmpdir()}/migrate-`);
    try {
      const first = runCli(["migrate", "--db", `${dir}/s.sqlite`]);
      expect(first.status, first.stderr).toBe(0);
      expect(first.stderr).toMatch(/migrated store .* from schema version 0 to \d+/);
      expect(runCli(["migrate", "--db", `${dir}/s.sqlite`]).stderr).toMatch(/nothing to do/);
      expect(runCli(["migrate", "--help"]).stdout).toMatch(/^Usage: marketdata migrate/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
