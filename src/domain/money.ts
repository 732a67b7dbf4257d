import { PAYMENT_TOKENS } from "./currencies.js";
import type { ListingRow, OfferRow, SaleRow } from "./rows.js";

// A sale's amount in US dollars (docs/money.md): price, in its token's
// smallest unit, times the token's USD price point in force, exact in
// integers and rounded half up to the cent.

/** A token's decimals by symbol (a symbol has the same decimals on every chain that has it). */
const DECIMALS = new Map(Object.values(PAYMENT_TOKENS).flatMap((tokens) => tokens.map((t) => [t.symbol, t.decimals] as const)));

/** The symbol whose price points price a token: ETH's for a token whose amounts are wei of ETH (WETH, Blur's pool ETH), else its own. */
export const PRICED_AS: ReadonlyMap<string, string> = new Map(
  Object.values(PAYMENT_TOKENS).flatMap((tokens) => tokens.map((t) => [t.symbol, t.ethUnit ? "ETH" : t.symbol] as const)),
);

/** The tokens whose sales `symbol`'s points price (its own, and WETH's and Blur's pool ETH's for ETH). */
export function tokensPricedAs(symbol: string): string[] {
  return [...new Set([symbol, ...[...PRICED_AS].filter(([, as]) => as === symbol).map(([token]) => token)])];
}

/** The units a read answers amounts in: the record's own token (the default, api.md's), or US dollars (`currency=usd`). */
export const AMOUNT_UNITS = ["eth", "usd"] as const;
export type AmountUnit = (typeof AMOUNT_UNITS)[number];

/** The currency an answer in US dollars names. */
export const USD = "USD";

/** The token a record is paid in, named (absent: ETH, as every record stored before tokens were told apart). */
const tokenOf = (currency: string | undefined) => currency ?? "ETH";

/** The symbol whose points price a record in `currency` (absent: ETH). */
export const pricedAs = (currency: string | undefined): string => {
  const symbol = tokenOf(currency);
  return PRICED_AS.get(symbol) ?? symbol;
};

/**
 * A sale with its amounts in US dollars (docs/money.md, "Amounts in USD"):
 * price, amountReceived and the fees each times the point in force at its
 * time (the one its priceUsd is read at), each rounded to the cent; "" for
 * every amount when no point is in force, and for a fee its indexer did
 * not tell.
 */
export function saleInUsd(r: SaleRow): SaleRow {
  const symbol = tokenOf(r.currency);
  const usd = (amount: string | undefined) => (amount === undefined || amount === "" ? "" : usdValue(amount, symbol, r.usdPoint));
  return {
    ...r,
    price: usd(r.price),
    amountReceived: usd(r.amountReceived),
    marketplaceFee: usd(r.marketplaceFee),
    royaltyFee: usd(r.royaltyFee),
    currency: USD,
  };
}

/**
 * A listing or an offer with its price in US dollars at `usd`, the point
 * in force when it is read (an order is a price asked or bid now); "" with
 * none (docs/money.md, "Amounts in USD").
 */
export function orderInUsd<T extends ListingRow | OfferRow>(r: T, usdBySymbol: ReadonlyMap<string, string | null>): T {
  return { ...r, price: usdValue(r.price, tokenOf(r.currency), usdBySymbol.get(pricedAs(r.currency))), currency: USD };
}

/** Fractional digits a price point's usd carries at most (fields.ts usdPrice). */
const USD_SCALE = 12;

/**
 * `amount` of token `symbol` (its smallest unit) at `usd` dollars per whole
 * token, to the cent ("3421.57"); "" when there is no point (usd null).
 */
export function usdValue(amount: string, symbol: string, usd: string | null | undefined): string {
  if (usd === null || usd === undefined || usd === "") return "";
  return dollars(toCents(BigInt(amount) * scaledPoint(usd), decimalsOf(symbol)));
}

const decimalsOf = (symbol: string): number => DECIMALS.get(symbol) ?? 18;

/** The last points scaled: a page of sales shares a few, and in a profile of the cold sales list parsing each sale's point again was half of its USD arithmetic's time. */
const SCALED = new Map<string, bigint>();
const SCALED_KEPT = 1024;

/** A non-negative decimal text ("3421.57", "12", "0.000001"), times 10^USD_SCALE, exact (more fractional digits are cut: a point has at most USD_SCALE). */
function scaled(decimal: string): bigint {
  const [whole, fraction = ""] = decimal.split(".");
  return BigInt(`${whole}${fraction.slice(0, USD_SCALE).padEnd(USD_SCALE, "0")}`);
}

/** A point's usd scaled, kept: points repeat across sales, sums (PostgreSQL's, UsdVolumes.add) do not and are scaled without it. */
function scaledPoint(usd: string): bigint {
  let v = SCALED.get(usd);
  if (v !== undefined) return v;
  v = scaled(usd);
  if (SCALED.size >= SCALED_KEPT) SCALED.clear();
  SCALED.set(usd, v);
  return v;
}

/**
 * Kept USD sums (the series' and the summaries' volumeUsd) are of one scale
 * whatever the token: amounts as if of 18 decimals (USD_SUM_DECIMALS) times
 * dollars times 10^USD_SCALE, exact.
 */
const USD_SUM_DECIMALS = 18;

/** Per token, what its amount times a point's usd is multiplied by to be at the kept sums' scale (10^(USD_SCALE + 18 - decimals)): PostgreSQL's sums (shared/prices.ts exactUsdSql). */
export const USD_SUM_FACTORS: ReadonlyMap<string, bigint> = new Map([...DECIMALS].map(([symbol, decimals]) => [symbol, 10n ** BigInt(USD_SCALE + USD_SUM_DECIMALS - decimals)]));

/** `amount` of token `symbol` at `usd` dollars per whole token, exact at the kept sums' scale; null without a point. */
export function exactUsd(amount: bigint, symbol: string, usd: string | null | undefined): bigint | null {
  if (usd === null || usd === undefined || usd === "") return null;
  const decimals = decimalsOf(symbol);
  const product = amount * scaledPoint(usd);
  // A power of ten per sale was a writer's cost (a profile of an import): 18 decimals, the usual case, needs none.
  return decimals === USD_SUM_DECIMALS ? product : product * 10n ** BigInt(USD_SUM_DECIMALS - decimals);
}

/** A kept exact USD sum (exactUsd's scale) as dollars to the cent, half up. */
export function dollarsOfExact(exact: bigint): string {
  return dollars(toCents(exact, USD_SUM_DECIMALS));
}

/** Per token decimals, the divisor from a product to cents and its half, made once rather than a BigInt power per sale. */
const DIVISORS = new Map<number, [bigint, bigint]>();

/** Cents, half up, of `product` (amounts in a token of `decimals` decimals times dollars per whole token, times 10^USD_SCALE). */
function toCents(product: bigint, decimals: number): bigint {
  let d = DIVISORS.get(decimals);
  if (d === undefined) {
    const divisor = 10n ** BigInt(decimals + USD_SCALE - 2);
    d = [divisor, divisor / 2n];
    DIVISORS.set(decimals, d);
  }
  return (product + d[1]) / d[0];
}

/** Cents as dollars to the cent ("3421.57"). */
function dollars(cents: bigint): string {
  const s = cents.toString().padStart(3, "0");
  return `${s.slice(0, -2)}.${s.slice(-2)}`;
}

/**
 * The most raw sales one stats answer in USD reads (docs/money.md, "Stats in
 * USD"): a collection's window's edges (its whole days and hours are read
 * from the series' dollars), its flagged sales with includeWash, or one
 * asset's sales. Each costs a point's seek (about 3 µs, bench:stats --parts
 * usd), so 50,000 hold a call to about 150 ms; more is refused, to be
 * narrowed with since/until.
 */
export const USD_STATS_MAX_SALES = 50_000;

/** A window's USD volume of one marketplace, or of all: sales counted, dollars to the cent, and how many of the sales had no point in force. */
export interface UsdTotals {
  totalNumSales: number;
  totalVolume: string;
  unpricedNumSales: number;
}

export interface UsdSummary extends UsdTotals {
  /** By volume descending, then marketplace, as the summary in wei (rows.ts summarize). */
  groups: (UsdTotals & { marketplace: string })[];
}

/**
 * A window's sales summed in US dollars (docs/money.md, "Stats in USD"):
 * each sale's price times its point in force, exact; each marketplace's
 * sum rounded to the cent once, and the total the sum of its groups, as
 * the wei total is. A sale with no point in force is counted, and told as
 * unpriced, but adds nothing.
 */
export class UsdVolumes {
  readonly #by = new Map<string, { n: number; unpriced: number; cents: Map<number, bigint> }>();

  /** One sale: `amount` of token `symbol` at `usd` dollars per whole token (null: no point in force). */
  sale(marketplace: string, amount: string, symbol: string, usd: string | null | undefined): void {
    const priced = usd !== null && usd !== undefined && usd !== "";
    this.add(marketplace, symbol, 1, priced ? 0 : 1, priced ? BigInt(amount) * scaledPoint(usd) : 0n);
  }

  /**
   * `n` sales of token `symbol`, `unpriced` of them without a point, the
   * others' amounts times their points summed: `sum` as decimal text (an
   * engine's exact product, PostgreSQL's numeric) or a BigInt already
   * times 10^USD_SCALE.
   */
  add(marketplace: string, symbol: string, n: number, unpriced: number, sum: bigint | string | null): void {
    const m = this.#by.get(marketplace) ?? { n: 0, unpriced: 0, cents: new Map<number, bigint>() };
    m.n += n;
    m.unpriced += unpriced;
    // Summed by decimals, each rounded once (a token's decimals set its scale).
    const decimals = decimalsOf(symbol);
    const exact = sum === null ? 0n : typeof sum === "bigint" ? sum : scaled(sum);
    m.cents.set(decimals, (m.cents.get(decimals) ?? 0n) + exact);
    this.#by.set(marketplace, m);
  }

  summary(): UsdSummary {
    const groups = [...this.#by].map(([marketplace, m]) => {
      let cents = 0n;
      for (const [decimals, exact] of m.cents) cents += toCents(exact, decimals);
      return { marketplace, n: m.n, unpriced: m.unpriced, cents };
    });
    groups.sort((a, b) => (a.cents === b.cents ? (a.marketplace < b.marketplace ? -1 : 1) : a.cents > b.cents ? -1 : 1));
    const total = { n: 0, unpriced: 0, cents: 0n };
    for (const g of groups) {
      total.n += g.n;
      total.unpriced += g.unpriced;
      total.cents += g.cents;
    }
    const totals = (t: { n: number; unpriced: number; cents: bigint }): UsdTotals => ({ totalNumSales: t.n, totalVolume: dollars(t.cents), unpricedNumSales: t.unpriced });
    return { ...totals(total), groups: groups.map((g) => ({ marketplace: g.marketplace, ...totals(g) })) };
  }
}
