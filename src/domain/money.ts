import { PAYMENT_TOKENS } from "./currencies.js";

// A sale's amount in US dollars (docs/money.md): price, in its token's
// smallest unit, times the token's USD price point in force, exact in
// integers and rounded half up to the cent.

/** A token's decimals by symbol (a symbol has the same decimals on every chain that has it). */
const DECIMALS = new Map(Object.values(PAYMENT_TOKENS).flatMap((tokens) => tokens.map((t) => [t.symbol, t.decimals] as const)));

/** The symbol whose price points price a token: ETH's for a token whose amounts are wei of ETH (WETH, Blur's pool ETH), else its own. */
export const PRICED_AS: ReadonlyMap<string, string> = new Map(
  Object.values(PAYMENT_TOKENS).flatMap((tokens) => tokens.map((t) => [t.symbol, t.ethUnit ? "ETH" : t.symbol] as const)),
);

/** Fractional digits a price point's usd carries at most (fields.ts usdPrice). */
const USD_SCALE = 12;

/**
 * `amount` of token `symbol` (its smallest unit) at `usd` dollars per whole
 * token, to the cent ("3421.57"); "" when there is no point (usd null).
 */
export function usdValue(amount: string, symbol: string, usd: string | null | undefined): string {
  if (usd === null || usd === undefined || usd === "") return "";
  const decimals = DECIMALS.get(symbol) ?? 18;
  const [whole, fraction = ""] = usd.split(".");
  const perToken = BigInt(`${whole}${fraction.padEnd(USD_SCALE, "0")}`);
  const divisor = 10n ** BigInt(decimals + USD_SCALE - 2);
  const cents = (BigInt(amount) * perToken + divisor / 2n) / divisor;
  const s = cents.toString().padStart(3, "0");
  return `${s.slice(0, -2)}.${s.slice(-2)}`;
}
