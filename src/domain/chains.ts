// The chains a store holds collections of (docs/chains.md). A collection is
// (chain, contract address): the same address on two chains is two
// collections. Short lower-case names, as indexers and the APIs users
// compare with name them; a record or a request that names none means
// Ethereum, so callers and files written before chains existed are unchanged.

/** The documented chain names, in the order docs/chains.md lists them. */
export const CHAINS = [
  "ethereum",
  "base",
  "polygon",
  "arbitrum",
  "optimism",
  "zora",
  "blast",
  "linea",
  "scroll",
  "avalanche",
  "bsc",
  // Test networks, for indexers staging against them.
  "sepolia",
  "base-sepolia",
] as const;

export type Chain = (typeof CHAINS)[number];

/** The chain of a record or a request that names none ("" in a protobuf message). */
export const DEFAULT_CHAIN: Chain = "ethereum";

const KNOWN: ReadonlySet<string> = new Set(CHAINS);

export function isChain(s: string): s is Chain {
  return KNOWN.has(s);
}

/** What a caller is told when a chain name is not one of ours. */
export function unknownChain(s: string): string {
  return `must be one of ${CHAINS.join(", ")} (default ${DEFAULT_CHAIN}), got ${JSON.stringify(s.slice(0, 40))}`;
}

/**
 * A collection as the service names it inside (the store's lookups, the
 * derive, cursors' digests, the CLI's --collection): its lower-case address
 * on the default chain, "chain:address" on another. Callers of the API never
 * see it: they name the chain and the address apart.
 */
export function collectionRef(chain: string, address: string): string {
  return chain === DEFAULT_CHAIN || chain === "" ? address : `${chain}:${address}`;
}

/** The chain a record names (a written record without one, as from a test or an older caller of the writers: the default). */
export function chainOf(record: { chain?: unknown }): string {
  return typeof record.chain === "string" && record.chain !== "" ? record.chain : DEFAULT_CHAIN;
}

/** The collection a record names: its chain and its contract address. */
export function recordRef(record: { chain?: unknown; contractAddress?: unknown }): string {
  return collectionRef(chainOf(record), String(record.contractAddress).toLowerCase());
}

/** A collection reference's chain and address (the default chain when it names none). */
export function refParts(ref: string): { chain: string; address: string } {
  const colon = ref.indexOf(":");
  return colon < 0 ? { chain: DEFAULT_CHAIN, address: ref } : { chain: ref.slice(0, colon), address: ref.slice(colon + 1) };
}

/** A collection reference as a message names it: "0x… on base" (the address alone on the default chain). */
export function describeRef(ref: string): string {
  const { chain, address } = refParts(ref);
  return chain === DEFAULT_CHAIN ? address : `${address} on ${chain}`;
}
