import { DEFAULT_CHAIN } from "../../src/domain/chains.js";
import { COLLECTION_SORTS } from "../../src/store/ports/market.js";
import type { ReadRepositories } from "../../src/store/ports/reads.js";

/** Every read path of the analytics repository and filter combination, for the query-plan tests of both engines. */
export async function exerciseAnalytics(store: ReadRepositories, id: number): Promise<void> {
  for (const marketplace of [undefined, "BLUR"]) {
    for (const at of [undefined, 1_700_500_000]) {
      for (const includeFlagged of [undefined, true]) await store.analytics.floors(id, { marketplace, at, includeFlagged });
    }
  }
  await store.analytics.holders(id, { limit: 5, after: null });
  await store.analytics.holders(id, { limit: 5, after: [2, "0x00"] });
  for (const interval of ["minute", "hour", "day", "week"] as const) {
    for (const marketplace of [undefined, "BLUR"]) {
      for (const assetId of [undefined, "7"]) {
        await store.analytics.series(id, { interval, from: 1_699_833_600, to: 1_700_438_400, marketplace, assetId });
      }
    }
  }
  await store.analytics.salesExtent(id);
  // The candles' floor (decisions.md, "Floor history"): the floor before a page, its buckets, and the history's extent.
  for (const marketplace of ["", "BLUR"]) {
    for (const span of [60, 3600, 86400] as const) await store.analytics.floorHistory(id, marketplace, span, 1_699_833_600, 1_700_438_400);
    await store.analytics.floorExtent(id, marketplace);
  }
}

/** Every read path of the tokens repository (each order, with and without a trait or an owner, first pages and pages after a key), for the query-plan tests of both engines. */
export async function exerciseTokens(store: ReadRepositories, id: number): Promise<void> {
  const after = { id: [id, "40"], price: ["0510000", "40"], rarity: [3, "40"], recent: [18_000_000, 5, "40"] };
  for (const sort of ["id", "price", "rarity", "recent"] as const) {
    for (const trait of [undefined, { type: "Background", value: "Blue" }]) {
      for (const key of [null, after[sort]]) await store.tokens.tokensPage({ collectionId: id, trait, sort }, { limit: 5, after: key });
    }
    await store.tokens.tokensPage({ collectionId: id, owner: `0x${"7".repeat(40)}`, sort }, { limit: 5, after: null });
  }
  await store.tokens.tokensPage({ owner: `0x${"7".repeat(40)}`, sort: "id" }, { limit: 5, after: [id, "40"] });
  await store.tokens.tokensPage({ collectionId: id, assetId: "41", sort: "id" }, { limit: 5, after: null });
  await store.tokens.traits(id);
  await store.tokens.traits(id, true);
  // A token's owners (ERC-1155 balances, or an ERC-721 token's one), from the start and after a key.
  for (const key of [null, [2, `0x${"7".repeat(40)}`]]) await store.tokens.ownersPage(id, "41", { limit: 5, after: key });
}

/** Every read path of the collections list (each order, with and without a text, of clean sales and with wash, first pages and pages after a key; each row's top bid and floor then), for the query-plan tests of both engines. */
export async function exerciseCollectionList(store: ReadRepositories, id: number): Promise<void> {
  await store.offers.topBids([id, id + 1], 1_700_500_000);
  await store.analytics.lowestFloorsAt([id, id + 1], 1_700_500_000);
  for (const sort of COLLECTION_SORTS) {
    for (const query of [undefined, "other"]) {
      for (const includeWash of [undefined, true]) {
        for (const after of [null, ["50", `0x${"d".repeat(40)}`]]) await store.collectionList.collectionsPage({ chain: DEFAULT_CHAIN, sort, query, includeWash }, { limit: 5, after });
      }
    }
    // Spam collections listed too (docs/data.md, "Spam and flags"): the same range, no mark asked.
    await store.collectionList.collectionsPage({ chain: DEFAULT_CHAIN, sort, includeSpam: true }, { limit: 5, after: null });
  }
}
