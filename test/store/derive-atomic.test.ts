import Database from "better-sqlite3";
import pg from "pg";
import { describe, expect, it } from "vitest";
import type { AppraisalRow, RarityRow } from "../../src/domain/rows.js";
import { openWritableStore } from "../../src/store/open.js";
import { importRecords } from "../support/engine.js";
import { COLLECTION } from "../support/fixture.js";
import { createTestDatabase, skipPg } from "../support/pg.js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// derive replaces a collection's rarity and appraisals in one transaction
// (the review read two in the code, while the README said one): readers see
// the old rows of both or the new rows of both. Shown by a write whose second
// half fails: the first half is rolled back with it. On both engines.

const rarity = (assetId: string, rank: number): RarityRow => ({
  contractAddress: COLLECTION,
  assetId,
  currentOwner: "",
  rarityScore: 1 / rank,
  statisticalRarity: -rank,
  rarityRank: rank,
});
const appraisal = (assetId: string): AppraisalRow => ({ contractAddress: COLLECTION, assetId, fairMarketValue: "1000", confidence: "0.5000" });

async function counts(target: string): Promise<{ rarity: number; appraisals: number }> {
  const sql = "SELECT (SELECT count(*) FROM rarity) AS rarity, (SELECT count(*) FROM appraisals) AS appraisals";
  if (target.startsWith("postgres")) {
    const c = new pg.Client({ connectionString: target });
    await c.connect();
    try {
      const r = (await c.query<{ rarity: string; appraisals: string }>(sql)).rows[0]!;
      return { rarity: Number(r.rarity), appraisals: Number(r.appraisals) };
    } finally {
      await c.end();
    }
  }
  const db = new Database(target, { readonly: true });
  try {
    return db.prepare(sql).get() as { rarity: number; appraisals: number };
  } finally {
    db.close();
  }
}

async function check(target: string): Promise<void> {
  await importRecords(target, "rarity", [rarity("1", 1)]);
  const store = await openWritableStore(target);
  try {
    const repo = store.derive;
    const id = (await repo.collectionId(COLLECTION))!;
    // The appraisals half fails (a value the schema refuses): the rarity half must not land either.
    await expect(
      Promise.resolve().then(() => repo.replaceDerived(id, { rarity: [rarity("2", 2), rarity("3", 3)], appraisals: [appraisal("2"), { ...appraisal("3"), assetId: null as unknown as string }] })),
    ).rejects.toThrow();
    expect(await counts(target)).toEqual({ rarity: 1, appraisals: 0 });
    const writes = await repo.replaceDerived(id, { rarity: [rarity("2", 2), rarity("3", 3)], appraisals: [appraisal("2")] });
    expect(writes.rarity?.written).toBe(2);
    expect(writes.appraisals?.written).toBe(1);
    expect(await counts(target)).toEqual({ rarity: 3, appraisals: 1 });
  } finally {
    await store.close();
  }
}

describe("derive's write is one transaction", () => {
  it("on SQLite", async () => {
    const dir = mkdtempSync(join(tmpdir(), "marketdata-derive-"));
    try {
      await check(join(dir, "store.sqlite"));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.skipIf(skipPg)("on PostgreSQL", async () => {
    const db = await createTestDatabase();
    try {
      await check(db.url);
    } finally {
      await db.drop();
    }
  });
});
