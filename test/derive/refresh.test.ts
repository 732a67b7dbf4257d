import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DerivedRefresher, LATE_SECONDS } from "../../src/derive/refresh.js";
import { openReadRepositories, openWritableStore } from "../../src/store/open.js";
import type { WritableStore } from "../../src/store/ports/writes.js";
import { emptyStore, importRecords } from "../support/engine.js";
import { numberedSale } from "../support/sales.js";

// The background derive's refresher on the test engine, in process: which
// writes it feeds to the kept model (incremental) and which it fits again
// in full. test/e2e/derive-refresh.test.ts checks through a server that the
// rows it writes are those of a full derive.

const A = "0x" + "d".repeat(40);
const s = {} as { target: string; cleanup(): Promise<void>; store: WritableStore; refresher: DerivedRefresher };

/** Sale n's time in numberedSale: 1_700_000_000 + 37 n. */
const timeOf = (n: number) => 1_700_000_000 + n * 37;

beforeAll(async () => {
  Object.assign(s, await emptyStore());
  await importRecords(s.target, "sales", Array.from({ length: 200 }, (_, n) => numberedSale(n, A)));
  s.store = await openWritableStore(s.target);
  s.refresher = new DerivedRefresher(s.store.derive);
});

afterAll(async () => {
  await s.store?.close();
  await s.cleanup?.();
});

describe("derive's background refresh", () => {
  it("fits in full first, then feeds only the sales written since", async () => {
    expect(await s.refresher.refresh(A)).toMatchObject({ mode: "full", sales: 200, fed: 200 });
    expect(await s.refresher.refresh(A)).toMatchObject({ mode: "incremental", sales: 200, fed: 0 });
    await importRecords(s.target, "sales", [200, 201, 202].map((n) => numberedSale(n, A)));
    expect(await s.refresher.refresh(A)).toMatchObject({ mode: "incremental", sales: 203, fed: 3 });
  });

  it(`feeds a sale up to ${LATE_SECONDS} s late to the kept model, and tells it from the sales already fed`, async () => {
    // Alike in every field the model reads but the hash: a second sale, not one already fed.
    const twin = { ...numberedSale(202, A), hash: `0x${"e".repeat(64)}` };
    const late = { ...numberedSale(203, A), timestamp: timeOf(202) - LATE_SECONDS + 10 };
    await importRecords(s.target, "sales", [twin, late]);
    expect(await s.refresher.refresh(A)).toMatchObject({ mode: "incremental", sales: 205, fed: 2 });
  });

  it("fits again in full after a sale older than that, or when told to", async () => {
    await importRecords(s.target, "sales", [{ ...numberedSale(204, A), timestamp: timeOf(202) - LATE_SECONDS - 10 }]);
    expect(await s.refresher.refresh(A)).toMatchObject({ mode: "full", sales: 206 });
    expect(await s.refresher.refresh(A, true)).toMatchObject({ mode: "full", sales: 206 });
    expect(await s.refresher.refresh(A)).toMatchObject({ mode: "incremental", fed: 0 });
  });

  it("leaves out a sale stored far past the clock (before such times were refused): later sales are still fed incrementally", async () => {
    const C = "0x" + "c".repeat(40);
    await importRecords(s.target, "sales", Array.from({ length: 50 }, (_, n) => numberedSale(n, C)));
    // Year 5138, as a build that took any time below 10^11 would have stored it.
    await importRecords(s.target, "sales", [{ ...numberedSale(50, C), timestamp: 99_999_999_999 }], { maxClockSkewSeconds: 100_000_000_000 });
    expect(await s.refresher.refresh(C)).toMatchObject({ mode: "full", sales: 50 });
    await importRecords(s.target, "sales", [51, 52].map((n) => numberedSale(n, C)));
    expect(await s.refresher.refresh(C)).toMatchObject({ mode: "incremental", sales: 52, fed: 2 });
  });

  it("a rewrite of derived rows leaves exactly the rows given, and every imported row", async () => {
    const B = "0x" + "f".repeat(40);
    await importRecords(s.target, "appraisals", [{ contractAddress: B, assetId: "3", fairMarketValue: "7", confidence: "0.5", currency: "ETH" }]);
    const id = (await s.store.derive.collectionId(B))!;
    const row = (assetId: string, fairMarketValue: string) => ({ contractAddress: B, assetId, fairMarketValue, confidence: "0.9" });
    const values = async () => {
      const r = await fetchAppraisals(B);
      return Object.fromEntries(r.map((a) => [a.assetId, a.fairMarketValue]));
    };
    await s.store.derive.replaceDerived(id, { appraisals: [row("1", "10"), row("2", "20"), row("3", "30")] });
    expect(await values()).toEqual({ "1": "10", "2": "20", "3": "7" });
    const writes = await s.store.derive.replaceDerived(id, { appraisals: [row("1", "11"), row("3", "31")] });
    expect(await values()).toEqual({ "1": "11", "3": "7" });
    expect(writes.appraisals).toMatchObject({ written: 1, keptImported: 1, imported: 1 });
  });
});

/** A collection's appraisals as a server reads them. */
async function fetchAppraisals(address: string): Promise<{ assetId: string; fairMarketValue: string }[]> {
  const store = await openReadRepositories(s.target);
  try {
    const id = (await store.collections.collectionId(address))!;
    const page = await store.assetMetrics.appraisalsPage(id, { limit: 50, after: null });
    return page.rows as { assetId: string; fairMarketValue: string }[];
  } finally {
    await store.close();
  }
}
