import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { importLines, type ImportStats } from "../../src/ingest/importer.js";
import { BULK_KINDS } from "../../src/store/postgres/bulk-kinds.js";
import { openStage } from "../../src/store/postgres/copy.js";
import { migratePg, openPool } from "../../src/store/postgres/database.js";
import { PgRecordImport } from "../../src/store/postgres/importer.js";
import { VALID } from "../ingest/records.js";
import { createTestDatabase, hourRowDrift, skipPg } from "../support/pg.js";

// Sales partitioned by collection (issue 21, item 6): a collection's first
// sales build its partition whole (a table without indexes, filled, indexed
// once, attached), with the same counts, last-line-wins and hour rows as the
// row-by-row merge; a file that names a collection with sales is merged row
// by row, new collections' partitions created empty first; and readers of
// other collections never wait on a partition being built.

const address = (c: string) => `0x${c.repeat(40)}`;
const sale = (c: string, i: number, over: Record<string, unknown> = {}) => ({
  ...VALID.sales,
  contractAddress: address(c),
  hash: `0x${i.toString(16).padStart(64, "0")}`,
  assetId: String(i % 50),
  timestamp: 1_700_000_000 + i * 900,
  block: 18_000_000 + i,
  price: String(1_000_000 + i),
  amountReceived: "1",
  marketplace: ["OPENSEA", "BLUR", "X2Y2"][i % 3],
  ...over,
});

async function* lines(rows: object[]): AsyncIterable<string> {
  for (const r of rows) yield JSON.stringify(r);
}

describe.skipIf(skipPg)("PostgreSQL sales partitions", () => {
  let db: { url: string; drop(): Promise<void> };
  let pool: pg.Pool;
  beforeAll(async () => {
    db = await createTestDatabase();
    pool = openPool(db.url, 4);
    await migratePg(pool);
  });
  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  const importSales = (rows: object[]): Promise<ImportStats> =>
    importLines(new PgRecordImport(pool), lines(rows), { kind: "sales", skipInvalid: false });
  const idOf = async (c: string) => (await pool.query<{ id: number }>("SELECT id FROM collections WHERE address = $1", [address(c)])).rows[0]!.id;
  const partitions = async () =>
    (await pool.query<{ part: string }>("SELECT inhrelid::regclass::text AS part FROM pg_inherits WHERE inhparent = 'sales'::regclass ORDER BY 1")).rows.map(
      (r) => r.part,
    );

  it("a collection's first import builds its partition whole: counts, the last line of a repeated key, indexes attached, hour rows exact", async () => {
    const rows = Array.from({ length: 3000 }, (_, i) => sale("a", i));
    // Sale 7 twice: the second line wins, and the first fill meets the repeat.
    rows.push(sale("a", 7, { price: "42" }));
    expect(await importSales(rows)).toMatchObject({ lines: 3001, inserted: 3000, updated: 0, unchanged: 1, rejected: 0 });
    const id = await idOf("a");
    expect(await partitions()).toEqual([`sales_c${id}`]);
    expect((await pool.query("SELECT price::text AS p FROM sales WHERE block = 18000007")).rows).toEqual([{ p: "42" }]);
    // Each of the partition's four indexes is a partition of one of sales's.
    const attached = await pool.query<{ parent: string }>(
      `SELECT inhparent::regclass::text AS parent FROM pg_inherits i JOIN pg_index x ON x.indexrelid = i.inhrelid
        WHERE x.indrelid = $1::regclass ORDER BY 1`,
      [`sales_c${id}`],
    );
    expect(attached.rows.map((r) => r.parent)).toEqual(["sales_by_asset", "sales_by_feed", "sales_by_marketplace", "sales_by_time", "sales_natural_key"]);
    // The bound used while the table was built is gone.
    expect((await pool.query("SELECT conname FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'c' AND conname LIKE '%bound'", [`sales_c${id}`])).rows).toEqual([]);
    expect(await hourRowDrift(pool)).toBe(0);
  });

  it("a file naming a collection with sales merges row by row, creating new collections' partitions empty first", async () => {
    const rows = [sale("a", 1, { price: "7" }), sale("a", 5000), sale("b", 1), sale("b", 2)];
    expect(await importSales(rows)).toMatchObject({ inserted: 3, updated: 1, unchanged: 0 });
    expect(await partitions()).toEqual([`sales_c${await idOf("a")}`, `sales_c${await idOf("b")}`].sort());
    const b = await pool.query("SELECT count(*)::int AS n FROM sales WHERE collection_id = $1", [await idOf("b")]);
    expect(b.rows[0].n).toBe(2);
    expect(await hourRowDrift(pool)).toBe(0);
  });

  it("readers of other collections never wait on a partition being built, nor see it before its commit", async () => {
    const a = await idOf("a");
    const before = (await pool.query("SELECT count(*)::int AS n FROM sales WHERE collection_id = $1", [a])).rows[0].n;
    const writer = await pool.connect();
    try {
      await writer.query("BEGIN");
      const stage = await openStage(writer, BULK_KINDS.sales);
      for (let i = 0; i < 2000; i++) await stage.write(sale("c", i));
      await stage.finish();
      expect(await BULK_KINDS.sales.whole!(writer)).toBe(2000);
      // The writer holds its locks until COMMIT: a reader waiting on them would hit its lock timeout.
      const reader = await pool.connect();
      try {
        await reader.query("SET lock_timeout = '1s'");
        expect((await reader.query("SELECT count(*)::int AS n FROM sales WHERE collection_id = $1", [a])).rows[0].n).toBe(before);
        expect((await reader.query("SELECT count(*)::int AS n FROM sales")).rows[0].n).toBe(before + 2);
        expect((await reader.query("SELECT count(*)::int AS n FROM sales_hourly WHERE collection_id = $1", [a])).rows[0].n).toBeGreaterThan(0);
      } finally {
        reader.release();
      }
      await writer.query("COMMIT");
    } finally {
      writer.release();
    }
    expect((await pool.query("SELECT count(*)::int AS n FROM sales WHERE collection_id = $1", [await idOf("c")])).rows[0].n).toBe(2000);
    expect(await hourRowDrift(pool)).toBe(0);
  });
});
