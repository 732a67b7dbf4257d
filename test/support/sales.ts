/** Sale number `n` of `collection`, as an import line's record: a hash of its own, every other field derived from n. */
export function numberedSale(n: number, collection: string): Record<string, unknown> {
  return {
    hash: `0x${n.toString(16).padStart(64, "0")}`,
    from: `0x${"1".repeat(40)}`,
    to: `0x${"2".repeat(40)}`,
    contractAddress: collection,
    assetId: String(n % 97),
    timestamp: 1_700_000_000 + n * 37,
    block: 18_000_000 + n,
    // Within a factor of two of each other: no price a wash rule would flag (docs/wash-trades.md).
    price: String(10n ** 15n * BigInt(50 + (n % 50))),
    amountReceived: String(10n ** 15n),
    currency: "ETH",
    marketplace: ["OPENSEA", "BLUR"][n % 2],
  };
}
