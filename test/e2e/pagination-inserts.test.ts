import { expect, it } from "vitest";
import { buildFixture, COLLECTION } from "../support/fixture.js";
import { bySaleOrder } from "../support/oracle.js";
import { restGet, useFixtureServer } from "../support/server.js";
import { importRecords } from "../support/engine.js";

// Keyset pages stay correct when rows arrive between calls: nothing already
// ordered before the token's position is repeated or skipped.

const t = useFixtureServer(buildFixture);

it("rows inserted between pages neither duplicate nor skip rows", async () => {
  const get = (cursor?: string) =>
    restGet(t.server.baseUrl, "/v1/asset/sales", { contractAddress: COLLECTION, limit: 10, cursor }, t.f.key);
  const first = await get();
  const seen = (first.body.data as { hash: string; assetId: string }[]).map((s) => `${s.hash}/${s.assetId}`);

  const template = t.f.sales[0]!;
  const newest = { ...template, hash: `0x${"e".repeat(64)}`, timestamp: 1_780_000_000 };
  const oldest = { ...template, hash: `0x${"d".repeat(64)}`, timestamp: 1_600_000_000 };
  await importRecords(t.f.dbPath, "sales", [newest, oldest].map((s) => ({ ...s, currency: "ETH" })));

  let cursor = first.body.cursor as string;
  while (cursor !== "") {
    const page = await get(cursor);
    seen.push(...(page.body.data as { hash: string; assetId: string }[]).map((s) => `${s.hash}/${s.assetId}`));
    cursor = page.body.cursor as string;
  }
  // Every original row exactly once, plus the row that sorts after the first
  // page; the one that sorts before it belongs to a fresh walk.
  const expected = bySaleOrder([...t.f.sales, oldest]).map((s) => `${s.hash}/${s.assetId}`);
  expect(seen).toEqual(expected);
  expect(new Set(seen).size).toBe(seen.length);
});
