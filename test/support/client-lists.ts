import { expect } from "vitest";
import { PAGED_LISTS } from "./rpc-names.js";

// What the clients' tests hold their programs' lists and feeds to (test/client/):
// the same checks for @marketdata/client and the Python helpers.

/** Each list as a client program read it: by its `pages` helper, and by the RPC's own pages followed by hand. */
export type ListReads = Record<string, { paged: string[]; direct: string[] }>;

/**
 * Every list that pages was read, with more than one page (the programs page
 * by a third of a list; the fixture holds the records, and the programs make 3 webhooks),
 * each record once, and the helper's records are the RPC's own, in order.
 */
export function expectEveryListPaged(lists: ListReads): void {
  expect(Object.keys(lists).sort()).toEqual(PAGED_LISTS);
  for (const [method, { paged, direct }] of Object.entries(lists)) {
    expect(direct.length, method).toBeGreaterThan(1);
    expect(new Set(direct).size, method).toBe(direct.length);
    expect(paged, method).toEqual(direct);
  }
}

/** An offer of `collection` made now, as an indexer sends it, its marketplace id `id`. */
export function offerNow(id: number, collection: string): Record<string, unknown> {
  const at = Math.floor(Date.now() / 1000);
  return {
    marketplaceId: String(id), marketplace: "BLUR", contractAddress: collection, maker: `0x${"5".repeat(40)}`, price: "4", currency: "ETH",
    createdAt: at, lastUpdatedAt: at, expiresAt: at + 86_400 * 30, status: "CREATED",
  };
}
