// Exact sums of wei amounts inside SQLite, whose integers are 64-bit.
//
// Each amount is stored as text (the exact value) plus two integer limbs,
// hi = amount >> 32 and lo = amount & (2^32 - 1), so that SUM(hi) and SUM(lo)
// stay exact for any realistic collection (lo overflows only past 2^31 rows,
// hi only for amounts past 2^95 wei). Amounts too large for hi store NULL
// limbs, and a sum that SQLite cannot do exactly is redone in BigInt.

const LIMB_BITS = 32n;
const LO_MASK = (1n << LIMB_BITS) - 1n;
const MAX_HI = (1n << 63n) - 1n;

export interface WeiLimbs {
  hi: bigint | null;
  lo: bigint | null;
}

export function splitWei(amount: string | bigint): WeiLimbs {
  const v = BigInt(amount);
  const hi = v >> LIMB_BITS;
  if (hi > MAX_HI) return { hi: null, lo: null };
  return { hi, lo: v & LO_MASK };
}

export function limbsToWei(hiSum: bigint | number | null, loSum: bigint | number | null): bigint {
  return (BigInt(hiSum ?? 0) << LIMB_BITS) + BigInt(loSum ?? 0);
}

export function sumWei(amounts: Iterable<string>): bigint {
  let total = 0n;
  for (const a of amounts) total += BigInt(a);
  return total;
}
