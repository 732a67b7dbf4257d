import fc from "fast-check";
import type { Kind } from "../../src/domain/kinds/index.js";

// A random chain history for the reorganisation property tests
// (test/store/reorgs.property.test.ts, test/service/reorgs-live.property.test.ts):
// sales, transfers and orders' records (listings and offers, on-chain or
// off-chain) on two chains (the same address on each), records taken back
// ("removed": true), blocks taken back (the reorgs kind, by first block,
// with or without the blocks' hashes) and records sent again after their
// removal, with what survives of it (the oracle).

export const T = 1_700_000_000;
export const CHAINS = ["ethereum", "base"] as const;
export type Chain = (typeof CHAINS)[number];

export const wallet = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;
const hashOf = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;

interface SaleWrite { kind: "sales"; chain: Chain; hash: number; asset: number; to: number; block: number; price: number }
interface TransferWrite { kind: "transfers"; chain: Chain; hash: number; log: number; asset: number; to: number; block: number }
/** An order's record: on-chain (block 1-6) or off-chain (block 0); its order's latest record is its state. */
interface OrderWrite { kind: "listings" | "offers"; chain: Chain; order: number; block: number; price: number; status: "CREATED" | "CANCELLED"; updated: number; created: number }
interface Removal { kind: "removal"; of: number }
interface Reorg { kind: "reorgs"; chain: Chain; fromBlock: number; named: "none" | "current" | "stale" }
export type Write = SaleWrite | TransferWrite | OrderWrite | Removal | Reorg;

const chain = fc.constantFrom(...CHAINS);
const asset = fc.integer({ min: 0, max: 2 });
const to = fc.integer({ min: 1, max: 4 });
const block = fc.integer({ min: 1, max: 6 });
export const writeArb: fc.Arbitrary<Write> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("sales" as const), chain, hash: fc.integer({ min: 1, max: 6 }), asset, to, block, price: fc.integer({ min: 1, max: 9 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("transfers" as const), chain, hash: fc.integer({ min: 1, max: 6 }), log: fc.integer({ min: 0, max: 1 }), asset, to, block }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constantFrom("listings" as const, "offers" as const), chain, order: fc.integer({ min: 0, max: 1 }), block: fc.integer({ min: 0, max: 6 }),
      price: fc.integer({ min: 1, max: 9 }), status: fc.constantFrom("CREATED" as const, "CREATED" as const, "CANCELLED" as const),
      updated: fc.integer({ min: 0, max: 3 }), created: fc.integer({ min: 0, max: 1 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("removal" as const), of: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("reorgs" as const), chain, fromBlock: block, named: fc.constantFrom("none" as const, "current" as const, "stale" as const) }) },
);

/** The fork each (chain, block) is on: a block taken back is made again on the next one, with another hash. */
class Forks {
  readonly #fork = new Map<string, number>();
  hash(c: Chain, b: number, fork = this.#fork.get(`${c}/${b}`) ?? 0): string {
    return hashOf(0xb10c0000 + (CHAINS.indexOf(c) << 12) + (b << 4) + fork);
  }
  reorg(c: Chain, from: number): void {
    for (let b = from; b <= 6; b++) this.#fork.set(`${c}/${b}`, (this.#fork.get(`${c}/${b}`) ?? 0) + 1);
  }
  stale(c: Chain, b: number): string {
    return this.hash(c, b, (this.#fork.get(`${c}/${b}`) ?? 0) + 7);
  }
}

function eventRecord(address: string, w: SaleWrite | TransferWrite, blockHash: string): Record<string, unknown> {
  const base = { chain: w.chain, hash: hashOf(w.hash), contractAddress: address, assetId: String(w.asset), timestamp: T + w.block * 60, block: w.block, blockHash };
  return w.kind === "sales"
    ? { ...base, from: wallet(9), to: wallet(w.to), price: String(w.price), amountReceived: String(w.price), currency: "ETH", marketplace: "OPENSEA" }
    : { ...base, logIndex: w.log, from: wallet(9), to: wallet(w.to) };
}

export const keyOf = (r: Record<string, unknown>, kind: string) => `${kind}/${String(r.chain)}/${String(r.hash)}/${String(r.logIndex ?? "")}/${String(r.assetId)}`;

/**
 * An order's record: its order one of two per kind and chain (a listing of
 * token 0 or 1, an offer for it), created at T + 30 s or later (so that
 * the history's sales and transfers may end a listing), updated at one of
 * four times, at its block (0: off-chain, no hash).
 */
function orderRecord(address: string, w: OrderWrite, blockHash: string): Record<string, unknown> {
  const createdAt = T + 30 + w.created * 60;
  const base = {
    chain: w.chain, marketplaceId: String(BigInt(address) * 1000n + BigInt((w.kind === "listings" ? 700 : 800) + CHAINS.indexOf(w.chain) * 10 + w.order)), marketplace: "SEAPORT", contractAddress: address,
    assetId: String(w.order), createdAt, lastUpdatedAt: createdAt + w.updated * 120, price: String(w.price * 10), currency: "ETH", status: w.status,
    block: w.block, blockHash: w.block === 0 ? "" : blockHash,
  };
  return w.kind === "listings" ? base : { ...base, maker: wallet(5), expiresAt: 0 };
}

/** An order's natural key. */
const orderKey = (r: Record<string, unknown>, kind: string) => `${kind}/${String(r.marketplace)}/${String(r.marketplaceId)}`;

/** Tokens and listings, never taken back: listings before every event, so that a sale or transfer ends them. */
export function fixedRecords(address: string): { tokens: object[]; listings: object[] } {
  const tokens: object[] = [];
  const listings: object[] = [];
  for (const c of CHAINS) {
    for (let a = 0; a <= 2; a++) {
      tokens.push({ chain: c, contractAddress: address, assetId: String(a), currentOwner: wallet(7), attributes: [{ trait_type: "t", value: String(a % 2) }] });
      listings.push({
        chain: c, marketplaceId: String(BigInt(address) * 100n + BigInt(CHAINS.indexOf(c) * 10 + a)), marketplace: "BLUR", contractAddress: address, assetId: String(a),
        createdAt: T, lastUpdatedAt: T, price: String(100 + a), currency: "ETH", status: "CREATED",
      });
    }
  }
  return { tokens, listings };
}

/** A history's lines in arrival order, and what survives it: sales and transfers by natural key (keyOf), orders' records in arrival order. */
export interface History {
  lines: { kind: Kind; record: object }[];
  held: Map<string, { kind: "sales" | "transfers"; record: Record<string, unknown> }>;
  orders: { kind: "listings" | "offers"; record: Record<string, unknown> }[];
}

type Sent = { kind: "sales" | "transfers" | "listings" | "offers"; record: Record<string, unknown> };

export function historyOf(address: string, writes: readonly Write[]): History {
  const forks = new Forks();
  // What the store holds, by natural key, as the history goes (the oracle).
  const held = new Map<string, { kind: "sales" | "transfers"; record: Record<string, unknown> }>();
  // Every order record that survives, in arrival order: an order is its last one.
  let orders: { kind: "listings" | "offers"; record: Record<string, unknown> }[] = [];
  const sent: Sent[] = [];
  const lines: { kind: Kind; record: object }[] = [];
  for (const w of writes) {
    if (w.kind === "sales" || w.kind === "transfers") {
      const record = eventRecord(address, w, forks.hash(w.chain, w.block));
      held.set(keyOf(record, w.kind), { kind: w.kind, record });
      sent.push({ kind: w.kind, record });
      lines.push({ kind: w.kind, record });
    } else if (w.kind === "listings" || w.kind === "offers") {
      const record = orderRecord(address, w, forks.hash(w.chain, w.block));
      orders.push({ kind: w.kind, record });
      if (w.block > 0) sent.push({ kind: w.kind, record });
      lines.push({ kind: w.kind, record });
    } else if (w.kind === "removal") {
      if (sent.length === 0) continue;
      const { kind, record } = sent[w.of % sent.length]!;
      if (kind === "sales" || kind === "transfers") held.delete(keyOf(record, kind));
      else {
        // An order's records of that block with that hash.
        orders = orders.filter((o) => !(o.kind === kind && orderKey(o.record, kind) === orderKey(record, kind) && o.record.block === record.block
          && o.record.blockHash === record.blockHash));
      }
      lines.push({ kind, record: { ...record, removed: true } });
    } else if (w.kind === "reorgs") {
      const blocks = [1, 2, 3, 4, 5, 6].filter((b) => b >= w.fromBlock);
      const names = w.named === "none" ? [] : blocks.map((b) => (w.named === "current" ? forks.hash(w.chain, b) : forks.stale(w.chain, b)));
      const taken = (r: Record<string, unknown>) =>
        r.chain === w.chain && Number(r.block) > 0 && Number(r.block) >= w.fromBlock && (names.length === 0 || names.includes(String(r.blockHash)));
      for (const [k, v] of held) if (taken(v.record)) held.delete(k);
      orders = orders.filter((o) => !taken(o.record));
      // A stale list names no block of this chain: nothing is taken back, and no fork follows.
      if (w.named !== "stale") forks.reorg(w.chain, w.fromBlock);
      lines.push({ kind: "reorgs", record: { chain: w.chain, fromBlock: w.fromBlock, blockHashes: names } });
    }
  }
  return { lines, held, orders };
}
