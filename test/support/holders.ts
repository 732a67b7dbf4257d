import type { Harness } from "./property-store.js";

// The holders answer as the property tests of ownership and of balances
// check it: the service's answer, and the one expected from each wallet's
// count (tokens, or an ERC-1155 collection's units held).

const byAddress = (a: { address: string }, b: { address: string }) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0);

/** A collection's holders as the service answers them (its first 50, by address). */
export async function holdersOf(h: Harness, address: string) {
  const res = await h.client.listCollectionHolders({ contractAddress: address, limit: 50 });
  return {
    tokens: Number(res.data!.totalTokens),
    numHolders: Number(res.data!.numHolders),
    holders: res.data!.holders.map((x) => ({ address: x.address, n: Number(x.tokenCount) })).sort(byAddress),
    distribution: res.data!.distribution.map((b) => [Number(b.minTokens), Number(b.maxTokens), Number(b.wallets), Number(b.tokens)]),
  };
}

/** Holders from each wallet's count (none of 0); `tokens`: the collection's token count. */
export function holdersFrom(counts: ReadonlyMap<string, number>, tokens: number) {
  return {
    tokens,
    numHolders: counts.size,
    holders: [...counts].map(([address, n]) => ({ address, n })).sort(byAddress),
    // Wallets holding 1, 2-5, 6-20 and 21+ (max 0: no bound), and their tokens.
    distribution: [[1, 1], [2, 5], [6, 20], [21, 0]].map(([min, max]) => {
      const inside = [...counts.values()].filter((n) => n >= min! && (max === 0 || n <= max!));
      return [min, max, inside.length, inside.reduce((a, b) => a + b, 0)];
    }),
  };
}
