import fc from "fast-check";
import { type ListingWrite, listingTruths, listingWriteArb, ts } from "./listing-model.js";

// The ERC-1155 listings model of test/store/erc1155-fillable.property.test.ts
// (decisions.md, "ERC-1155"): listing records of some units by a maker, and
// transfers of units between the makers and the zero address over few
// tokens and times; an oracle of when each listing stops being fillable:
// its creation when its maker's balance of the token after the last known
// transfer at or before it is below its quantity, else the first later
// transfer that takes the balance below it; never for a maker none of
// whose transfers is known yet at its creation, until one takes it below.

export interface UnitTransfer {
  kind: "transfers";
  hash: number;
  asset: number;
  at: number;
  /** 0: the zero address (a mint from it, a burn to it); else the address of that digit. */
  from: number;
  to: number;
  amount: number;
}
export interface UnitSale {
  kind: "sales";
  hash: number;
  asset: number;
  at: number;
}
export type UnitWrite = ListingWrite | UnitTransfer | UnitSale;

// Mostly one token and two makers, so that most transfers touch a listing's maker: the cases worth checking come often.
const asset = fc.constantFrom(0, 0, 0, 1);
const time = fc.integer({ min: 0, max: 12 });
const party = fc.constantFrom(0, 1, 1, 2, 2, 3);
export const unitWriteArb: fc.Arbitrary<UnitWrite> = fc.oneof(
  { weight: 3, arbitrary: listingWriteArb({ asset, maker: fc.constantFrom(0, 1, 1, 2, 2), quantity: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("transfers" as const), hash: fc.integer({ min: 1, max: 6 }), asset, at: time, from: party, to: party,
    amount: fc.integer({ min: 1, max: 3 }) }).filter((t) => t.from !== t.to) },
  // A sale moves no units (its transfer does): it ends no ERC-1155 listing.
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("sales" as const), hash: fc.integer({ min: 1, max: 6 }), asset, at: time }) },
);

export const partyAddress = (n: number) => `0x${String(n).repeat(40)}`;

export function unitTransferRecord(address: string, w: UnitTransfer): object {
  return {
    hash: `0x${w.hash.toString(16).padStart(64, "0")}`, logIndex: 0, from: partyAddress(w.from), to: partyAddress(w.to), contractAddress: address,
    assetId: String(w.asset), amount: String(w.amount), timestamp: ts(w.at), block: 100 + w.at,
  };
}

/** What the store holds of the records it took, and when each listing stops being fillable. */
export function unitTruthOf(taken: readonly UnitWrite[]) {
  const transfers = new Map<string, UnitTransfer>();
  for (const w of taken) if (w.kind === "transfers") transfers.set(`${w.hash}/${w.asset}`, w);
  const moved = (l: ListingWrite): number | undefined => {
    if (l.maker === 0) return undefined;
    // Chain order: block (100 + at), log index (0), hash.
    const mine = [...transfers.values()].filter((t) => t.asset === l.asset && (t.from === l.maker || t.to === l.maker))
      .sort((a, b) => a.at - b.at || a.hash - b.hash);
    const quantity = l.quantity ?? 1;
    let units = 0;
    const after = mine.map((t) => ({ at: ts(t.at), units: (units += (t.to === l.maker ? t.amount : 0) - (t.from === l.maker ? t.amount : 0)) }));
    const created = ts(l.created);
    const atCreation = after.filter((e) => e.at <= created).pop();
    if (atCreation !== undefined && atCreation.units < quantity) return created;
    return after.find((e) => e.at > created && e.units < quantity)?.at;
  };
  return { listings: listingTruths(taken), moved };
}
