import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { marketplaceCheck } from "../../src/service/marketplaces.js";
import { openReadRepositories } from "../../src/store/open.js";
import { openWritable } from "../../src/store/sqlite/database.js";
import { importRecords } from "../support/engine.js";
import { sqliteAtVersion } from "../support/old-stores.js";
import { storeEngines } from "../support/store-engines.js";
import { numberedSale } from "../support/sales.js";

// The marketplaces a store knows (issue 49, item 20), on both engines: every
// write of a sale, listing or offer adds its marketplace, so a filter naming
// a marketplace whose first record was just committed is taken at once, and
// one no record names is refused with the names there are; SQLite's
// migration 18 fills the table from the rows already in a store.

const C = `0x${"ab".repeat(20)}`;


const engines = storeEngines("marketplaces");

const code = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => (e instanceof ConnectError ? [e.code, e.rawMessage] : e));

describe.each(engines)("known marketplaces on %s", (_, open, skip) => {
  it.skipIf(skip)("grow with every write, and a filter naming none of them is refused", async () => {
    const { target, drop } = await open();
    try {
      await importRecords(target, "sales", [{ ...numberedSale(1, C), marketplace: "OPENSEA" }]);
      const repos = await openReadRepositories(target);
      try {
        const check = marketplaceCheck(repos.collections);
        expect(await repos.collections.knownMarketplaces()).toEqual(["OPENSEA"]);
        await check("OPENSEA");
        expect(await code(check("BLUR"))).toEqual([Code.InvalidArgument, 'marketplace "BLUR" is not one this store has records of; known: OPENSEA']);
        // The first listing from BLUR, committed: known at once.
        await importRecords(target, "listings", [{ marketplace: "BLUR", marketplaceId: "1", contractAddress: C, assetId: "1", createdAt: 1_700_000_000, lastUpdatedAt: 1_700_000_000, price: "5", currency: "ETH", status: "CREATED" }]);
        await check("BLUR");
        expect(await repos.collections.knownMarketplaces()).toEqual(["BLUR", "OPENSEA"]);
      } finally {
        await repos.close();
      }
    } finally {
      await drop();
    }
  });
});

describe("SQLite's migration 18", () => {
  it("knows the marketplaces of the rows already in a store", async () => {
    const dir = mkdtempSync(join(tmpdir(), "marketdata-marketplaces-old-"));
    const path = join(dir, "old.sqlite");
    const old = sqliteAtVersion(path, 17);
    old.prepare("INSERT INTO collections (address) VALUES (?)").run(C);
    old.prepare(
      "INSERT INTO sales (collection_id, asset_key, hash, seller, buyer, timestamp, block, price, amount_received, marketplace) VALUES (1, '001', ?, ?, ?, 1, 1, '1', '1', 'LOOKSRARE')",
    ).run(Buffer.alloc(32, 1), Buffer.alloc(20, 1), Buffer.alloc(20, 2));
    old.close();
    openWritable(path).close();
    const repos = await openReadRepositories(path);
    try {
      expect(await repos.collections.knownMarketplaces()).toEqual(["LOOKSRARE"]);
    } finally {
      await repos.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
