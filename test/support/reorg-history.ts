import fc from "fast-check";
import type { Kind } from "../../src/domain/kinds/index.js";

// A random chain history for the reorganisation property tests
// (test/store/reorgs.property.test.ts, test/service/reorgs-live.property.test.ts):
// sales and transfers on two chains (the same address on each), records
// taken back ("removed": true), blocks taken back (the reorgs kind, by first
// block, with or without the blocks' hashes) and records sent again after
// their removal, with what survives of it (the oracle).

export const T = 1_700_000_000;
export const CHAINS = ["ethereum", "base"] as const;
export type Chain = (typeof CHAINS)[number];

export const wallet = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;
const hashOf = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;

interface SaleWrite { kind: "sales"; chain: Chain; hash: number; asset: number; to: number; block: number; price: number }
interface TransferWrite { kind: "transfers"; chain: Chain; hash: number; log: number; asset: number; to: number; block: number }
interface Removal { kind: "removal"; of: number }
interface Reorg { kind: "reorgs"; chain: Chain; fromBlock: number; named: "none" | "current" | "stale" }
export type Write = SaleWrite | TransferWrite | Removal | Reorg;

const chain = fc.constantFrom(...CHAINS);
const asset = fc.integer({ min: 0, max: 2 });
const to = fc.integer({ min: 1, max: 4 });
const block = fc.integer({ min: 1, max: 6 });
export const writeArb: fc.Arbitrary<Write> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("sales" as const), chain, hash: fc.integer({ min: 1, max: 6 }), asset, to, block, price: fc.integer({ min: 1, max: 9 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("transfers" as const), chain, hash: fc.integer({ min: 1, max: 6 }), log: fc.integer({ min: 0, max: 1 }), asset, to, block }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("removal" as const), of: fc.nat() }) },
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

/** A history's lines in arrival order, and what survives it by natural key (keyOf). */
export interface History {
  lines: { kind: Kind; record: object }[];
  held: Map<string, { kind: "sales" | "transfers"; record: Record<string, unknown> }>;
}

export function historyOf(address: string, writes: readonly Write[]): History {
  const forks = new Forks();
  // What the store holds, by natural key, as the history goes (the oracle).
  const held = new Map<string, { kind: "sales" | "transfers"; record: Record<string, unknown> }>();
  const sent: { kind: "sales" | "transfers"; record: Record<string, unknown> }[] = [];
  const lines: { kind: Kind; record: object }[] = [];
  for (const w of writes) {
    if (w.kind === "sales" || w.kind === "transfers") {
      const record = eventRecord(address, w, forks.hash(w.chain, w.block));
      held.set(keyOf(record, w.kind), { kind: w.kind, record });
      sent.push({ kind: w.kind, record });
      lines.push({ kind: w.kind, record });
    } else if (w.kind === "removal") {
      if (sent.length === 0) continue;
      const { kind, record } = sent[w.of % sent.length]!;
      held.delete(keyOf(record, kind));
      lines.push({ kind, record: { ...record, removed: true } });
    } else {
      const blocks = [1, 2, 3, 4, 5, 6].filter((b) => b >= w.fromBlock);
      const names = w.named === "none" ? [] : blocks.map((b) => (w.named === "current" ? forks.hash(w.chain, b) : forks.stale(w.chain, b)));
      for (const [k, v] of held) {
        const r = v.record;
        if (r.chain === w.chain && Number(r.block) >= w.fromBlock && (names.length === 0 || names.includes(String(r.blockHash)))) held.delete(k);
      }
      // A stale list names no block of this chain: nothing is taken back, and no fork follows.
      if (w.named !== "stale") forks.reorg(w.chain, w.fromBlock);
      lines.push({ kind: "reorgs", record: { chain: w.chain, fromBlock: w.fromBlock, blockHashes: names } });
    }
  }
  return { lines, held };
}
