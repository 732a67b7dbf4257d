import { describe, expect, it } from "vitest";
import { migrateStore, openReadRepositories } from "../../src/store/open.js";
import { BOTH_ENGINES, dropBalances, emptyStore, importRecords, setSchemaVersion } from "../support/engine.js";

// Migration 42 (decisions.md, "ERC-1155") on both engines: a store holding
// transfers from before it (each of one unit) gains their balances; its
// collections are ERC-721, their holders as they were; a collection record
// saying ERC1155 afterwards counts its holders by the balances, the same as
// a store that kept them from its first write.

const C = `0x${"e2".repeat(20)}`;
const wallet = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;
const transfer = (n: number, asset: string, from: number, to: number) => ({
  hash: `0x${n.toString(16).padStart(64, "0")}`, logIndex: 0, from: wallet(from), to: wallet(to), contractAddress: C, assetId: asset,
  timestamp: 1_700_000_000 + n, block: n,
});
// Token 1: minted to 1 twice, one passed to 2; token 2: minted to 2, burned.
const TRANSFERS = [transfer(1, "1", 0, 1), transfer(2, "1", 0, 1), transfer(3, "1", 1, 2), transfer(4, "2", 0, 2), transfer(5, "2", 2, 0)];
const ERC1155 = [{ contractAddress: C, name: "Editions", tokenStandard: "ERC1155" }];

async function answersOf(target: string) {
  const repos = await openReadRepositories(target);
  try {
    const id = (await repos.collections.collectionId(C))!;
    const page = { after: null, limit: 10 };
    const holders = await repos.analytics.holders(id, page);
    return { holders, owners: [await repos.tokens.ownersPage(id, "1", page), await repos.tokens.ownersPage(id, "2", page)] };
  } finally {
    await repos.close();
  }
}

describe.each(BOTH_ENGINES)("migration 42 ($engine)", ({ engine, skip }) => {
  it.skipIf(skip)("finds the balances of the transfers the store holds; its collections ERC-721 until their records say otherwise", async () => {
    const migrated = await emptyStore(engine);
    const kept = await emptyStore(engine);
    try {
      await importRecords(migrated.target, "transfers", TRANSFERS);
      const before = await answersOf(migrated.target);
      await dropBalances(migrated.target);
      await setSchemaVersion(migrated.target, 41);
      expect(await migrateStore(migrated.target)).toMatchObject({ from: 41 });
      // ERC-721: each token's latest recipient, its holders as before.
      expect(await answersOf(migrated.target)).toEqual(before);
      expect(before.owners.map((p) => p.rows)).toEqual([[{ address: wallet(2), balance: 1 }], []]);

      await importRecords(migrated.target, "collections", ERC1155);
      await importRecords(kept.target, "collections", ERC1155);
      await importRecords(kept.target, "transfers", TRANSFERS);
      const found = await answersOf(migrated.target);
      expect(found).toEqual(await answersOf(kept.target));
      // Token 1: a unit each; token 2 burned: none. Two holders of a unit each, two units held.
      expect(found.owners.map((p) => p.rows)).toEqual([[{ address: wallet(1), balance: 1 }, { address: wallet(2), balance: 1 }], []]);
      expect(found.holders).toMatchObject({ totalTokens: 2, numHolders: 2 });
    } finally {
      await migrated.cleanup();
      await kept.cleanup();
    }
  });
});
