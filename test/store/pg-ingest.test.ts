import { Code, ConnectError, createClient } from "@connectrpc/connect";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IngestService } from "../../gen/marketdata/v1/ingest_service_pb.js";
import { saleLines } from "../../bench/sales-file.js";
import { handlerFor } from "../../src/domain/kinds/index.js";
import { migrateStore, openIngestWriter, openWritableStore } from "../../src/store/open.js";
import { withKeys } from "../support/engine.js";
import { COLLECTION } from "../support/fixture.js";
import { createTestDatabase, skipPg } from "../support/pg.js";
import { startTestServer, type TestServer, transportFor } from "../support/server.js";

// Ingest on PostgreSQL: concurrent writers keep the stats aggregates true
// (their merges take turns: record-writes.ts WRITE_LOCK); and a server whose
// PostgreSQL cannot take writes (a hot standby; here a database whose
// transactions are read-only by default, which refuses writes with the same
// SQLSTATE 25006) answers ingest with failed_precondition, saying where
// writes go, and keeps serving reads.

/** `stats rebuild --check`: the aggregates are exactly the raw sales'. */
async function expectStatsExact(url: string): Promise<void> {
  const store = await openWritableStore(url);
  try {
    expect((await store.rebuildStats(undefined, true)).changed).toBe(0);
  } finally {
    await store.close();
  }
}

describe.skipIf(skipPg)("concurrent ingest batches on PostgreSQL", () => {
  it("16 batches at once into one collection: every one committed, the aggregates exactly the raw sales'", async () => {
    const db = await createTestDatabase();
    const writer = openIngestWriter(db.url);
    try {
      await migrateStore(db.url);
      const check = handlerFor("sales", { latestTime: Number.MAX_SAFE_INTEGER });
      const now = Math.floor(Date.now() / 1000);
      const records = [...saleLines(8000, 4, COLLECTION, { start: now - 3600, span: 3600 })].map((l) => check.check(JSON.parse(l), []) as Record<string, unknown>);
      const results = await Promise.all(Array.from({ length: 16 }, (_, i) => writer.write("sales", records.slice(i * 500, i * 500 + 500))));
      expect(results.reduce((n, c) => n + c.inserted, 0)).toBe(8000);
      await expectStatsExact(db.url);
    } finally {
      await writer.close();
      await db.drop();
    }
  });
});

describe.skipIf(skipPg)("group commit of queued batches on PostgreSQL", () => {
  const sale = (c: string, i: number, price = "100") =>
    handlerFor("sales", { latestTime: Number.MAX_SAFE_INTEGER }).check(
      {
        hash: `0x${i.toString(16).padStart(64, "0")}`,
        from: `0x${"1".repeat(40)}`,
        to: `0x${"2".repeat(40)}`,
        contractAddress: `0x${c.repeat(40)}`,
        assetId: String(i),
        timestamp: 1_700_000_000 + i,
        block: 18_000_000 + i,
        price,
        amountReceived: "1",
        currency: "ETH",
        marketplace: "OPENSEA",
      },
      [],
    ) as Record<string, unknown>;

  it("batches that queue share one transaction, each counted as if written alone after the ones before it", async () => {
    const db = await createTestDatabase();
    const writer = openIngestWriter(db.url);
    const client = new pg.Client({ connectionString: db.url });
    try {
      await migrateStore(db.url);
      await client.connect();
      const version = async () => Number((await client.query("SELECT data_version FROM store_state")).rows[0].data_version);
      const v0 = await version();
      // Written at once: the first goes alone, the others queue behind it and share the next transaction.
      const results = await Promise.all([
        writer.write("sales", [sale("a", 1), sale("a", 2)]),
        // A retry of sale 1, and a new sale.
        writer.write("sales", [sale("a", 1), sale("a", 3)]),
        // Sale 2 changed twice within one batch: its last line counts.
        writer.write("sales", [sale("a", 2, "200"), sale("a", 2, "300")]),
        // Sale 2 as the batch before left it; then changed back.
        writer.write("sales", [sale("a", 2, "300")]),
        writer.write("sales", [sale("a", 2, "100"), sale("b", 1)]),
        // Another kind waits for its own transaction.
        writer.write("collections", [{ contractAddress: `0x${"a".repeat(40)}`, name: "A" }]),
      ]);
      expect(results).toEqual([
        { inserted: 2, updated: 0, unchanged: 0 },
        { inserted: 1, updated: 0, unchanged: 1 },
        { inserted: 0, updated: 1, unchanged: 1 },
        { inserted: 0, updated: 0, unchanged: 1 },
        { inserted: 1, updated: 1, unchanged: 0 },
        { inserted: 0, updated: 1, unchanged: 0 },
      ]);
      // Three commits for six batches: the first alone, four sales batches together, the collections one.
      expect((await version()) - v0).toBe(3);
      const rows = await client.query("SELECT block, price::text AS price FROM sales ORDER BY collection_id, block");
      expect(rows.rows).toEqual([
        { block: "18000001", price: "100" },
        { block: "18000002", price: "100" },
        { block: "18000003", price: "100" },
        { block: "18000001", price: "100" },
      ]);
      // New collections only, inside a group: the counts the same.
      const fresh = await Promise.all([
        writer.write("sales", [sale("c", 1)]),
        writer.write("sales", [sale("d", 1), sale("d", 2)]),
        writer.write("sales", [sale("d", 1), sale("d", 2, "5"), sale("e", 9)]),
      ]);
      expect(fresh).toEqual([
        { inserted: 1, updated: 0, unchanged: 0 },
        { inserted: 2, updated: 0, unchanged: 0 },
        { inserted: 1, updated: 1, unchanged: 1 },
      ]);
      // A batch the store refuses (a hash no checker let through) fails alone: its group is retried batch by batch.
      const [alone, bad, after] = await Promise.allSettled([
        writer.write("sales", [sale("f", 1)]),
        writer.write("sales", [{ ...sale("f", 2), hash: `0x${"z".repeat(64)}` }]),
        writer.write("sales", [sale("f", 3)]),
      ]);
      expect(alone).toMatchObject({ status: "fulfilled", value: { inserted: 1 } });
      expect(bad).toMatchObject({ status: "rejected", reason: { message: expect.stringMatching(/hexadecimal/) } });
      expect(after).toMatchObject({ status: "fulfilled", value: { inserted: 1 } });
      await expectStatsExact(db.url);
    } finally {
      await client.end();
      await writer.close();
      await db.drop();
    }
  });
});

describe.skipIf(skipPg)("ingest on a PostgreSQL server that cannot write", () => {
  let db: { url: string; drop(): Promise<void> };
  let server: TestServer;
  let key: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    await migrateStore(db.url);
    key = await withKeys(db.url, async (admin) => (await admin.create("indexer", { scope: "ingest" })).key);
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    await admin.query(`ALTER DATABASE ${new URL(db.url).pathname.slice(1)} SET default_transaction_read_only = on`);
    await admin.end();
    server = await startTestServer(db.url);
  });

  afterAll(async () => {
    await server?.close();
    await db?.drop();
  });

  const score = { name: "X", contractAddress: COLLECTION, hype: 1, gains: 1, community: 1, total: 1 };

  it("REST: 400 failed_precondition (Connect's status for it), naming the primary", async () => {
    const r = await fetch(`${server.baseUrl}/v1/ingest/scores`, {
      method: "POST",
      headers: { "content-type": "application/x-ndjson", "x-api-key": key },
      body: JSON.stringify(score),
    });
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({ code: "failed_precondition", message: expect.stringMatching(/takes no writes.*send ingest to a server on the primary/) });
  });

  it.each(["connect", "grpc"] as const)("%s: failed_precondition; reads still served", async (protocol) => {
    const c = createClient(IngestService, transportFor(protocol, server.baseUrl));
    const err = await c.ingestScores({ records: [score] }, { headers: { "x-api-key": key } }).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(err?.code).toBe(Code.FailedPrecondition);
    const read = await fetch(`${server.baseUrl}/v1/collection/scores?contractAddress=${COLLECTION}`, { headers: { "x-api-key": key } });
    expect(read.status).toBe(404);
  });
});
