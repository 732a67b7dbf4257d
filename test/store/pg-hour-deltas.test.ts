import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Random } from "../../src/demo/random.js";
import { importLines } from "../../src/ingest/importer.js";
import { migratePg, openPool } from "../../src/store/postgres/database.js";
import { PgRecordImport } from "../../src/store/postgres/importer.js";
import { openIngestWriter, openWritableStore } from "../../src/store/open.js";
import { WRITE_LOCK } from "../../src/store/postgres/record-writes.js";
import { VALID } from "../ingest/records.js";
import { createTestDatabase, hourRowDrift, skipPg } from "../support/pg.js";

// The hour rows on PostgreSQL are kept by deltas (postgres/sales-stats.ts): each
// merge adds what it changed from the changed hour on, instead of summing
// the raw sales again. Random histories of inserts, retries, reprices,
// moves between hours and marketplaces (emptying hours), and repeats within
// a batch, through imports and grouped ingest batches, must leave exactly
// the rows the raw sales imply after every write.

const MARKETPLACES = ["OPENSEA", "BLUR", "X2Y2"];
const COLLECTIONS = [`0x${"d1".repeat(20)}`, `0x${"d2".repeat(20)}`];

describe.skipIf(skipPg)("PostgreSQL hour rows by deltas", () => {
  let db: { url: string; drop(): Promise<void> };
  let pool: pg.Pool;
  beforeAll(async () => {
    db = await createTestDatabase();
    pool = openPool(db.url, 2);
    await migratePg(pool);
  });
  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });


  function history(seed: number) {
    const rnd = new Random(seed);
    // Few keys, few hours: writes keep landing on sales and hours that exist.
    return () => {
      const i = rnd.int(0, 59);
      return {
        ...VALID.sales,
        contractAddress: COLLECTIONS[i % 2],
        hash: `0x${i.toString(16).padStart(64, "0")}`,
        assetId: String(i % 7),
        timestamp: 1_700_000_000 + rnd.int(0, 11) * 3600 + rnd.int(0, 3599),
        block: 18_000_000 + i,
        price: String(BigInt(rnd.int(1, 5)) * 10n ** BigInt(rnd.int(0, 30))),
        amountReceived: "1",
        marketplace: rnd.pick(MARKETPLACES),
      };
    };
  }

  it("imports: after each of 40 random files, the hour rows are exactly the raw sales'", async () => {
    const next = history(7);
    const rnd = new Random(8);
    for (let round = 0; round < 40; round++) {
      const rows = Array.from({ length: rnd.int(1, 12) }, next);
      await importLines(new PgRecordImport(pool), (async function* () {
        for (const r of rows) yield JSON.stringify(r);
      })(), { kind: "sales", skipInvalid: false });
      expect(await hourRowDrift(pool), `after file ${round}`).toBe(0);
    }
    // The histories did move sales out of hours and back.
    expect((await pool.query("SELECT count(*)::int AS n FROM sales")).rows[0].n).toBeGreaterThan(30);
  });

  it("stats rebuild waits for a writer of sales holding the write lock (it would otherwise replace rows a merge adds to)", async () => {
    const holder = await pool.connect();
    const store = await openWritableStore(db.url);
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT pg_advisory_xact_lock($1)", [WRITE_LOCK]);
      let done = false;
      const rebuild = store.rebuildStats(undefined, false).then(() => {
        done = true;
      });
      await new Promise((r) => setTimeout(r, 300));
      expect(done).toBe(false);
      await holder.query("COMMIT");
      await rebuild;
      expect(done).toBe(true);
    } finally {
      holder.release();
      await store.close();
    }
  });

  it("grouped ingest batches: the same, 20 batches at a time", async () => {
    const next = history(9);
    const writer = openIngestWriter(db.url);
    try {
      for (let round = 0; round < 5; round++) {
        await Promise.all(Array.from({ length: 20 }, () => writer.write("sales", Array.from({ length: 3 }, next))));
        expect(await hourRowDrift(pool), `after round ${round}`).toBe(0);
      }
    } finally {
      await writer.close();
    }
  });
});
