import { expect } from "vitest";
import { listingFragment } from "../../src/domain/wire/fragments.js";
import { answersOracle, floorOracle, type ListingTruth } from "./listing-model.js";
import type { Harness } from "./property-store.js";

/**
 * What the fillable-listings property tests check of a collection after a
 * history (`taken`, named in failures): its listings' answers, their ready
 * answers, the status filter and the floor now and at each of `instants`,
 * all against the oracle over the raw records (`truth`).
 */
export async function expectListingAnswers(h: Harness, address: string, truth: ListingTruth, taken: readonly unknown[], instants: readonly number[]): Promise<void> {
  const id = (await h.read.collections.collectionId(address))!;
  const page = await h.read.listings.listingsPage(id, {}, { limit: 100, after: null });
  const answers = page.rows.map((r) => ({ marketplaceId: r.marketplaceId, status: r.status, lastUpdatedAt: r.lastUpdatedAt }))
    .sort((a, b) => (a.marketplaceId < b.marketplaceId ? -1 : 1));
  const want = answersOracle(truth);
  expect(answers, JSON.stringify(taken)).toEqual(want);
  // The ready answers (domain/wire/fragments.ts) moved with them: the page read as them is the page encoded whole.
  const ready = await h.read.listings.listingsPage(id, {}, { limit: 100, after: null }, "json");
  expect(ready.rows, JSON.stringify(taken)).toEqual(page.rows.map((r) => listingFragment(r, "json")));
  const created = await h.read.listings.listingsPage(id, { status: "CREATED" }, { limit: 100, after: null });
  expect(created.rows.map((r) => r.marketplaceId).sort()).toEqual(want.filter((a) => a.status === "CREATED").map((a) => a.marketplaceId));
  for (const at of [undefined, ...instants]) {
    const res = await h.client.getCollectionFloor({ contractAddress: address, at: at === undefined ? undefined : BigInt(at) });
    const got = res.data!.groups.map((g) => ({ marketplace: g.marketplace, marketplaceId: g.marketplaceId, price: g.price }));
    expect(got, `at ${at}: ${JSON.stringify(taken)}`).toEqual(floorOracle(truth, at));
  }
}
