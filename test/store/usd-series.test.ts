import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { migrate, openWritable, type Db } from "../../src/store/sqlite/database.js";
import { WriteStore } from "../../src/store/sqlite/record-writes.js";
import { SalesAggregates } from "../../src/store/sqlite/sales-stats.js";

// The US dollars kept with SQLite's series (sqlite/sales-series.ts) when a
// price point and the sales it prices share one transaction, as group
// commit makes them: a sale added before the point is repriced from its
// dollars when added; one a wash rule then flags leaves at its dollars now,
// whatever a point moved them by. What is kept equals a rebuild from the raw
// sales. (Each batch on its own transaction: test/store/analytics.property
// and test/e2e/price-points.property, on both engines.)

const T0 = 1_750_003_200; // an hour's start
const wallet = (c: string) => `0x${c.repeat(40)}`;
const C = `0x${"ab".repeat(20)}`;
const sale = (n: number, from: string, to: string, t: number, assetId = "1") => ({
  hash: `0x${n.toString(16).padStart(64, "0")}`, from: wallet(from), to: wallet(to), contractAddress: C, assetId,
  timestamp: t, block: 100 + n, price: "1000000000000000000", amountReceived: "0", currency: "ETH", marketplace: "BLUR",
});

describe("dollars kept with the series, a point and its sales in one transaction (SQLite)", () => {
  let dir: string | undefined;
  let db: Db | undefined;
  afterEach(() => {
    db?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  function open(): WriteStore {
    dir = mkdtempSync(join(tmpdir(), "marketdata-usd-"));
    db = openWritable(join(dir, "store.sqlite"));
    migrate(db);
    return new WriteStore(db);
  }

  /** The every-marketplace hour's count, dollars (exact) and unpriced sales, and what a rebuild would change. */
  function kept(): { hour: [number, string, number] | undefined; rebuildChanges: number } {
    const hour = db!.prepare("SELECT num_sales, volume_usd, unpriced FROM sales_series WHERE marketplace = '' AND span = 3600 AND bucket = ?").raw().get(T0) as
      [number, string, number] | undefined;
    db!.exec("BEGIN");
    try {
      return { hour, rebuildChanges: new SalesAggregates(db!).rebuild().changed };
    } finally {
      db!.exec("ROLLBACK");
    }
  }

  it("reprices a sale added before the point, and takes a flagged one out at its dollars now", () => {
    const ws = open();
    ws.transaction(() => {
      // Sold with no point in force, then a point that prices it, then its token sold back: both legs are flagged.
      ws.upsertSale(sale(1, "1", "2", T0 + 60));
      ws.upsertSale(sale(2, "3", "4", T0 + 120, "2"));
      ws.upsertPricePoint({ currency: "ETH", minute: T0, usd: "2000.5" });
      ws.upsertSale(sale(3, "2", "1", T0 + 180));
    });
    // Sale 2 alone is clean: 1 ETH at $2000.50, exact (wei × usd × 10^12).
    expect(kept()).toEqual({ hour: [1, String(2_000_500_000_000_000_000_000_000_000_000_000n), 0], rebuildChanges: 0 });
  });

  it("moves a sale added after a point written in the same transaction by the next point's difference", () => {
    const ws = open();
    ws.transaction(() => {
      ws.upsertPricePoint({ currency: "ETH", minute: T0, usd: "1000" });
      ws.upsertSale(sale(1, "1", "2", T0 + 600));
      ws.upsertPricePoint({ currency: "ETH", minute: T0 + 300, usd: "3000" });
      // A point of the same minute again: the latest wins.
      ws.upsertPricePoint({ currency: "ETH", minute: T0 + 300, usd: "2500" });
      ws.upsertSale(sale(2, "3", "4", T0 + 60, "2"));
    });
    // Sale 1 at $2500 (the minute's last point), sale 2 at $1000.
    expect(kept()).toEqual({ hour: [2, String(3_500n * 10n ** 30n), 0], rebuildChanges: 0 });
  });
});
