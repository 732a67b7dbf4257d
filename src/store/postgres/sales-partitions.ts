import type pg from "pg";
import { freshHourlySql } from "./sales-hourly.js";
import { freshSeriesSql } from "./sales-series.js";

// Sales are partitioned by collection (migration 4): each collection's
// sales are a table of their own, sales_c<id>, attached to `sales`. Reads go
// through `sales` and reach one partition (every query names its
// collection). Writes of a collection's first sales can then build its
// partition whole, as a bulk load should: rows into a table without indexes,
// the indexes built once (a sort each, in parallel workers), then attached.
// Nothing here blocks a reader: a table being built is not yet part of
// `sales`, and ATTACH PARTITION takes only a SHARE UPDATE EXCLUSIVE lock on it.

/** Creates, empty, the partition of every staged collection that has none (before a merge into sales). */
export const ENSURE_PARTITIONS = `DO $$
  DECLARE cid integer;
  BEGIN
    FOR cid IN SELECT c.id FROM collections c
               WHERE c.address IN (SELECT DISTINCT address FROM stage) AND to_regclass(format('sales_c%s', c.id)) IS NULL LOOP
      EXECUTE format('CREATE TABLE sales_c%1$s (LIKE sales INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', cid);
      EXECUTE format('ALTER TABLE sales ATTACH PARTITION sales_c%1$s FOR VALUES IN (%1$s)', cid);
    END LOOP;
  END $$`;

/** Memory for the index sorts of a partition built whole (the server default, 64 MB, spills 1M sales to disk). */
const BUILD_MEMORY = "256MB";

/** Fills a new partition from the stage: the INSERT of collection `collectionId`'s staged rows (the address is $1), one per natural key when `distinct`. */
export type PartitionFill = (table: string, collectionId: number, distinct: boolean) => string;

/**
 * When none of the staged collections has sales yet, builds each one's
 * partition whole: its staged rows into a new table, the indexes of `sales`
 * on it, ATTACH, then its hour rows from the table. Returns the rows
 * written, or undefined (having written nothing but the collections'
 * registration) when some staged collection already has sales: those are
 * merged row by row instead. `beforeFill` runs once the collections are
 * registered, before any row is written.
 */
export async function loadNewPartitions(
  client: pg.PoolClient,
  fill: PartitionFill,
  beforeFill?: () => Promise<void>,
): Promise<number | undefined> {
  // One query decides (a merge into a collection with sales, the usual
  // ingest, pays no more); the new collections are registered only then.
  const staged = await client.query<{ address: string; id: number | null; partitioned: boolean }>(
    `SELECT s.address, c.id, c.id IS NOT NULL AND to_regclass(format('sales_c%s', c.id)) IS NOT NULL AS partitioned
     FROM (SELECT DISTINCT address FROM stage) s LEFT JOIN collections c ON c.address = s.address`,
  );
  if (staged.rows.some((c) => c.partitioned)) return undefined;
  const unknown = staged.rows.filter((c) => c.id === null).map((c) => c.address);
  const registered: { id: number; address: string }[] = [];
  if (unknown.length > 0) {
    await client.query("INSERT INTO collections (address) SELECT unnest($1::text[]) ON CONFLICT (address) DO NOTHING", [unknown]);
    // Read back, not RETURNING: a writer of another kind may have registered one meanwhile.
    registered.push(...(await client.query<{ id: number; address: string }>("SELECT id, address FROM collections WHERE address = ANY($1)", [unknown])).rows);
  }
  const collections = [...staged.rows.filter((c) => c.id !== null), ...registered] as { id: number; address: string }[];
  await beforeFill?.();
  await client.query(`SET LOCAL maintenance_work_mem = '${BUILD_MEMORY}'`);
  const indexes = await partitionIndexes(client);
  let rows = 0;
  for (const { id, address } of collections) {
    const table = `sales_c${Number(id)}`;
    // The bound as a constraint while the table is filled: ATTACH then knows
    // every row fits without scanning them.
    await client.query(`CREATE TABLE ${table} (LIKE sales INCLUDING DEFAULTS INCLUDING CONSTRAINTS, CONSTRAINT ${table}_bound CHECK (collection_id = ${Number(id)}))`);
    rows += await fillOnce(client, table, indexes[0]!, (distinct) => client.query(fill(table, id, distinct), [address]));
    for (const index of indexes.slice(1)) await client.query(index(table));
    await client.query(`ALTER TABLE sales ATTACH PARTITION ${table} FOR VALUES IN (${Number(id)})`);
    await client.query(`ALTER TABLE ${table} DROP CONSTRAINT ${table}_bound`);
    // Its hour rows summed from the table itself (a sequential scan: the
    // indexes of a table this new have no visibility map for index-only scans).
    await client.query(`DELETE FROM sales_hourly WHERE collection_id = ${Number(id)}`);
    await client.query(`INSERT INTO sales_hourly (collection_id, marketplace, hour, cum_num_sales, cum_volume) ${freshHourlySql("true", table)}`);
    await client.query(`DELETE FROM sales_series WHERE collection_id = ${Number(id)}`);
    await client.query(`INSERT INTO sales_series ${freshSeriesSql("true", table)}`);
  }
  return rows;
}

const UNIQUE_VIOLATION = "23505";

/**
 * Fills `table` in the stage's order, then builds its unique index (the
 * first of `indexes`): a file rarely repeats a key, so the rows are not
 * sorted to find repeats first. When the index finds one, the table is
 * filled again one row per key.
 */
async function fillOnce(
  client: pg.PoolClient,
  table: string,
  unique: (table: string) => string,
  fill: (distinct: boolean) => Promise<pg.QueryResult>,
): Promise<number> {
  await client.query("SAVEPOINT fill");
  const rows = (await fill(false)).rowCount ?? 0;
  try {
    await client.query(unique(table));
    await client.query("RELEASE SAVEPOINT fill");
    return rows;
  } catch (err) {
    if ((err as { code?: string }).code !== UNIQUE_VIOLATION) throw err;
    await client.query("ROLLBACK TO SAVEPOINT fill");
  }
  const distinct = (await fill(true)).rowCount ?? 0;
  await client.query(unique(table));
  return distinct;
}

/**
 * The indexes of `sales` as statements for one partition, read from the
 * catalog so they never drift from the schema. Unnamed: PostgreSQL names them
 * as it names those ATTACH creates on an empty partition, and ATTACH adopts
 * them as the partitions of the parent's indexes. The unique one first.
 */
async function partitionIndexes(client: pg.PoolClient): Promise<((table: string) => string)[]> {
  // The unique index first (fillOnce).
  const r = await client.query<{ def: string }>(
    "SELECT pg_get_indexdef(indexrelid) AS def FROM pg_index WHERE indrelid = 'sales'::regclass ORDER BY indisunique DESC, indexrelid",
  );
  return r.rows.map(({ def }) => {
    const m = /^CREATE (UNIQUE )?INDEX \S+ ON ONLY \S+ (USING .*)$/.exec(def);
    if (m === null) throw new Error(`unexpected index definition on sales: ${def}`);
    return (table: string) => `CREATE ${m[1] ?? ""}INDEX ON ${table} ${m[2]}`;
  });
}
