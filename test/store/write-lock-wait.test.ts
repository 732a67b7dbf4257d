import Database from "better-sqlite3";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { handlerFor } from "../../src/domain/kinds/index.js";
import { migrateStore, openIngestWriter } from "../../src/store/open.js";
import { StoreUnavailableError } from "../../src/store/ports/errors.js";
import { WRITE_LOCK } from "../../src/store/postgres/record-writes.js";
import { COLLECTION } from "../support/fixture.js";
import { storeEngines } from "../support/store-engines.js";

// Bound and isolate (issue 50, item 4): an ingest batch that cannot take the
// store's write lock in time (another writer holds it: an import, a stats
// rebuild) fails as unavailable, saying to retry, never as internal;
// publicError (test/unit/store-unavailable.test.ts) answers that 503 with
// Retry-After on every protocol. The lock released, the next batch commits.
// Both engines.

const engines = storeEngines("write-lock-wait");

const sale = (i: number) =>
  handlerFor("sales", { latestTime: Number.MAX_SAFE_INTEGER }).check(
    {
      hash: `0x${i.toString(16).padStart(64, "0")}`,
      from: `0x${"1".repeat(40)}`,
      to: `0x${"2".repeat(40)}`,
      contractAddress: COLLECTION,
      assetId: String(i),
      timestamp: 1_700_000_000 + i,
      block: 18_000_000 + i,
      price: "100",
      amountReceived: "90",
      currency: "ETH",
      marketplace: "OPENSEA",
    },
    [],
  ) as Record<string, unknown>;

/** Holds the store's write lock as another writer would, until the returned release. */
async function holdWriteLock(target: string): Promise<() => Promise<void>> {
  if (target.startsWith("postgres")) {
    const client = new pg.Client({ connectionString: target });
    await client.connect();
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock($1)", [WRITE_LOCK]);
    return async () => {
      await client.query("COMMIT");
      await client.end();
    };
  }
  const db = new Database(target);
  db.exec("BEGIN IMMEDIATE");
  return async () => {
    db.exec("ROLLBACK");
    db.close();
  };
}

describe.each(engines)("a write lock held past the wait (%s)", (_name, open, skip) => {
  it.skipIf(skip)("fails the batch as unavailable, saying to retry, and the next batch after the release commits", async () => {
    const store = await open();
    await migrateStore(store.target);
    const writer = openIngestWriter(store.target, { lockWaitMs: 300 });
    try {
      expect((await writer.write("sales", [sale(1)])).inserted).toBe(1);
      const release = await holdWriteLock(store.target);
      let err: unknown;
      const started = performance.now();
      try {
        await writer.write("sales", [sale(2)]);
      } catch (e) {
        err = e;
      } finally {
        await release();
      }
      expect(err).toBeInstanceOf(StoreUnavailableError);
      expect((err as Error).message).toMatch(/held the store's write lock .*retry/);
      // It waited for the lock, and not much past its bound.
      expect(performance.now() - started).toBeGreaterThanOrEqual(250);
      expect((await writer.write("sales", [sale(2)])).inserted).toBe(1);
    } finally {
      await writer.close();
      await store.drop();
    }
  });
});
