import Database from "better-sqlite3";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { migrateStore, openReadRepositories } from "../../src/store/open.js";
import { listingJsonSqlBefore26 } from "../../src/store/shared/wire-rows.js";
import { dropWashFlags, emptyStore, type Engine, importRecords, setSchemaVersion } from "../support/engine.js";
import { skipPg } from "../support/pg.js";

// Migration 26 on both engines (docs/chains.md, "Listings and offers"):
// a store written before a listing and an offer had a block answers every
// order it holds as an off-chain one (block 0, blockHash ""), exactly as a
// store of this build that was sent the same records. The store is made by
// this build, then taken back to what an older one left (the columns
// dropped, each listing's whole kept JSON without the two fields, made by
// the expression of the migrations before) and opened.

const C = `0x${"cd".repeat(20)}`;
const NOW = Math.floor(Date.now() / 1000) - 3600;
const listing = (id: string, price: string, status = "CREATED") => ({
  marketplaceId: id, marketplace: "OPENSEA", contractAddress: C, assetId: id, createdAt: NOW, lastUpdatedAt: NOW + 1, price, currency: "ETH", status,
});
const offer = { marketplaceId: "9", marketplace: "OPENSEA", contractAddress: C, maker: C, price: "3", currency: "ETH", createdAt: NOW, lastUpdatedAt: NOW, status: "CREATED" };

/** The listings as each form answers them, and the offers, read afresh. */
async function answers(target: string): Promise<unknown> {
  const repos = await openReadRepositories(target);
  try {
    const id = (await repos.collections.collectionId(C))!;
    const page = { limit: 10, after: null };
    return {
      json: (await repos.listings.listingsPage(id, {}, page, "json")).rows,
      binary: (await repos.listings.listingsPage(id, {}, page, "binary")).rows.map((b) => Buffer.from(b as Uint8Array).toString("hex")),
      rows: (await repos.listings.listingsPage(id, {}, page)).rows,
      offers: (await repos.offers.offersPage(id, {}, page, NOW)).rows,
    };
  } finally {
    await repos.close();
  }
}

/** Takes the store back to schema 25: no block columns, and each listing's whole JSON as migration 17 (SQLite) or 15 (PostgreSQL) made it. */
async function asBeforeMigration26(engine: Engine, target: string): Promise<void> {
  // The later migrations' first, last first: 29's on (the sales' wash flags, ..., 33's orders' payment token).
  await dropWashFlags(target);
  const dropColumns = [
    ...["listings", "offers"].flatMap((t) => [`ALTER TABLE ${t} DROP COLUMN block`, `ALTER TABLE ${t} DROP COLUMN block_hash`]),
    // And migration 28's tables (the orders' logs), which follow.
    ...["listing_log", "listing_log_versions", "offer_log", "listing_removals", "offer_removals"].map((t) => `DROP TABLE ${t}`),
  ];
  if (engine === "sqlite") {
    const db = new Database(target);
    try {
      db.exec("DROP TRIGGER listings_wire_changed");
      for (const sql of dropColumns) db.exec(sql);
      db.exec(`CREATE TRIGGER listings_wire_changed AFTER UPDATE OF status, last_updated_at, wire_json_head, wire_json_middle ON listings BEGIN
        UPDATE listings SET wire_json = ${listingJsonSqlBefore26("NEW.")} WHERE id = NEW.id;
      END;
      UPDATE listings SET wire_json = ${listingJsonSqlBefore26("")};`);
      expect(db.prepare("SELECT count(*) FROM listings WHERE wire_json LIKE '%blockHash%'").pluck().get()).toBe(0);
    } finally {
      db.close();
    }
  } else {
    const client = new pg.Client({ connectionString: target });
    await client.connect();
    try {
      await client.query("ALTER TABLE listings DROP COLUMN wire_json");
      for (const sql of dropColumns) await client.query(sql);
      await client.query(`ALTER TABLE listings ADD COLUMN wire_json text GENERATED ALWAYS AS (${listingJsonSqlBefore26("")}) STORED`);
      // And PostgreSQL's migration 27 (a webhook's finality), which follows.
      await client.query("ALTER TABLE webhooks DROP COLUMN final_only");
      expect((await client.query("SELECT count(*)::int AS n FROM listings WHERE wire_json LIKE '%blockHash%'")).rows[0].n).toBe(0);
    } finally {
      await client.end();
    }
  }
  await setSchemaVersion(target, 25);
}

describe.each([
  { engine: "sqlite" as const, skip: false },
  { engine: "postgres" as const, skip: skipPg },
])("migration 26 ($engine)", ({ engine, skip }) => {
  it.skipIf(skip)("answers the listings and offers already stored as made off-chain, as this build answers the same records", async () => {
    const store = await emptyStore(engine);
    try {
      await importRecords(store.target, "listings", [listing("1", "5"), listing("2", "7", "CANCELLED")]);
      await importRecords(store.target, "offers", [offer]);
      const fresh = await answers(store.target);
      expect(JSON.parse((fresh as { json: string[] }).json[0]!)).toMatchObject({ block: 0, blockHash: "" });
      await asBeforeMigration26(engine, store.target);
      expect(await migrateStore(store.target)).toMatchObject({ from: 25 });
      expect(await answers(store.target)).toEqual(fresh);
      // A listing sent again after it is written as this build writes it.
      await importRecords(store.target, "listings", [listing("1", "5")]);
      expect(await answers(store.target)).toEqual(fresh);
    } finally {
      await store.cleanup();
    }
  });
});
