import type { Chain } from "./chains.js";

// The payment tokens a sale, a listing or an offer names as its `currency`
// (docs/money.md): by symbol, or by the token's contract on the record's
// chain, stored and answered by symbol. Every amount of a record is in its
// token's smallest unit. The tokens whose unit is ETH's wei, one for one
// (ETH itself, WETH, Blur's pool ETH), are the ones every ETH figure
// (volumes, floors, series, rankings, appraisals) adds up: a sale in WETH
// is a sale at that many wei of ETH, as marketplaces count it. A sale in a
// token of another unit (USDC, DAI, APE) is taken and answered in that unit,
// priced in dollars by its own points, and counted in no figure in wei
// (domain/wash.ts OTHER_UNIT); an order in one is refused by name: a floor,
// an ask or a bid in wei cannot hold its price.

/** The address a record names for a chain's own coin (no contract). */
export const NATIVE = "0x0000000000000000000000000000000000000000";

export interface PaymentToken {
  /** What records name and answers carry: "ETH", "WETH". */
  readonly symbol: string;
  /** Its contract on the chain; NATIVE for the chain's own coin. */
  readonly contract: string;
  readonly decimals: number;
  /** Whether its amounts are wei of ETH one for one (what the ETH figures add up). */
  readonly ethUnit: boolean;
}

const eth: PaymentToken = { symbol: "ETH", contract: NATIVE, decimals: 18, ethUnit: true };
const weth = (contract: string): PaymentToken => ({ symbol: "WETH", contract, decimals: 18, ethUnit: true });
/** WETH's address on the OP Stack chains (a predeploy). */
const OP_WETH = "0x4200000000000000000000000000000000000006";

/**
 * Each chain's payment tokens, ETH first. "ETH" is taken on every chain, as
 * before tokens were told apart: an amount in wei of ETH (on Polygon,
 * Avalanche and BNB Chain, ETH bridged, not the chain's own coin).
 */
export const PAYMENT_TOKENS: Readonly<Record<Chain, readonly PaymentToken[]>> = {
  ethereum: [
    eth,
    weth("0xc02aaa39b223fe8d0a0e5c4f27ead9083c756cc2"),
    { symbol: "BLUR_POOL", contract: "0x0000000000a39bb272e79075ade125fd351887ac", decimals: 18, ethUnit: true },
    { symbol: "USDC", contract: "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48", decimals: 6, ethUnit: false },
    { symbol: "DAI", contract: "0x6b175474e89094c44da98b954eedeac495271d0f", decimals: 18, ethUnit: false },
    { symbol: "APE", contract: "0x4d224452801aced8b2f0aebe155379bb5d594381", decimals: 18, ethUnit: false },
  ],
  base: [eth, weth(OP_WETH), { symbol: "USDC", contract: "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913", decimals: 6, ethUnit: false }],
  polygon: [eth, weth("0x7ceb23fd6bc0add59e62ac25578270cff1b9f619")],
  arbitrum: [eth, weth("0x82af49447d8a07e3bd95bd0d56f35241523fbab1")],
  optimism: [eth, weth(OP_WETH)],
  zora: [eth, weth(OP_WETH)],
  blast: [eth, weth("0x4300000000000000000000000000000000000004")],
  linea: [eth, weth("0xe5d7c2a44ffddf6b295a15c148167daaaf5cf34f")],
  scroll: [eth, weth("0x5300000000000000000000000000000000000004")],
  avalanche: [eth, weth("0x49d5c2bdffac6ce2bfdb6640f4f80f226bc10bab")],
  bsc: [eth],
  sepolia: [eth, weth("0xfff9976782d46cc05630d1f6ebab18b2324d6b14")],
  "base-sepolia": [eth, weth(OP_WETH)],
};

/** The token a record's `currency` names on `chain` (a symbol in any case, or a contract in any hex case); undefined for none of its tokens. */
export function paymentToken(chain: Chain, currency: string): PaymentToken | undefined {
  const name = currency.toUpperCase();
  const address = currency.toLowerCase();
  return PAYMENT_TOKENS[chain].find((t) => t.symbol === name || t.contract === address);
}

/** The symbols of the tokens whose amounts are not wei of ETH, on any chain: a sale in one is counted in no figure in wei (domain/wash.ts OTHER_UNIT). */
export const OTHER_UNIT_SYMBOLS: ReadonlySet<string> = new Set(Object.values(PAYMENT_TOKENS).flatMap((tokens) => tokens.filter((t) => !t.ethUnit).map((t) => t.symbol)));

/**
 * Why `currency` cannot be a record's on `chain`, or undefined when it can:
 * unknown there, or, for an order (`ethUnitOnly`), a token whose amounts are
 * not wei of ETH. `token`: paymentToken's answer, when the caller has it
 * already.
 */
export function refusedCurrency(chain: Chain, currency: string, token = paymentToken(chain, currency), ethUnitOnly = false): string | undefined {
  if (token !== undefined && (token.ethUnit || !ethUnitOnly)) return undefined;
  const accepted = PAYMENT_TOKENS[chain].filter((t) => t.ethUnit || !ethUnitOnly).map((t) => t.symbol);
  if (token === undefined) {
    return `must be one of ${chain}'s payment tokens, ${accepted.join(", ")}, by symbol or contract (docs/money.md), got ${JSON.stringify(currency.slice(0, 42))}`;
  }
  return `${token.symbol} is not taken for a listing or an offer: its amounts are not wei of ETH, and a floor, an ask or a bid in wei cannot hold them (docs/money.md); accepted: ${accepted.join(", ")}`;
}
