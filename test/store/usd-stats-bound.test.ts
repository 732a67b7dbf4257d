import { describe, expect, it } from "vitest";
import { openReadRepositories } from "../../src/store/open.js";
import { BOTH_ENGINES, emptyStore, importRecords } from "../support/engine.js";
import { numberedSale } from "../support/sales.js";

// Stats in USD read a window's whole days and hours from the series'
// dollars and its edges' sales one by one (docs/money.md, "Stats in USD"),
// so a store reads at most the caller's bound of raw sales, on either
// engine: with more at the edges it answers nothing rather than a sum of
// some; at the bound, the whole window; the whole history of whole hours,
// whatever the bound.

const C = `0x${"ca".repeat(20)}`;

describe.each(BOTH_ENGINES)("stats in USD ($engine)", ({ engine, skip }) => {
  it.skipIf(skip)("read at most their bound of sales, and answer none past it", async () => {
    const store = await emptyStore(engine);
    try {
      await importRecords(store.target, "sales", [0, 1, 2].map((n) => numberedSale(n, C)));
      const repos = await openReadRepositories(store.target);
      try {
        const id = (await repos.collections.collectionId(C))!;
        // The three sales, 37 s apart, inside one hour: a window of less than a whole hour reads them raw.
        const edges = { since: 1_700_000_000, until: 1_700_000_100 };
        expect(await repos.sales.salesUsdSummary(id, edges, 2)).toBeUndefined();
        expect(await repos.sales.salesUsdSummary(id, edges, 3)).toMatchObject({ totalNumSales: 3, unpricedNumSales: 3, totalVolume: "0.00" });
        // The whole history is whole hours of the series: no raw sale read, whatever the bound.
        expect(await repos.sales.salesUsdSummary(id, {}, 0)).toMatchObject({ totalNumSales: 3, unpricedNumSales: 3, totalVolume: "0.00" });
        // The bound counts the window's sales only.
        const one = (await repos.sales.salesPage(id, {}, { limit: 1, after: null })).rows[0]!;
        expect(await repos.sales.salesUsdSummary(id, { since: one.timestamp, until: one.timestamp }, 1)).toMatchObject({ totalNumSales: 1 });
      } finally {
        await repos.close();
      }
    } finally {
      await store.cleanup();
    }
  });
});
