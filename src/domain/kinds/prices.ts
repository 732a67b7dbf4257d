import { PRICED_AS } from "../money.js";
import { declareKind, notAhead } from "./declaration.js";
import * as f from "./fields.js";

/** The symbols a price point can name: every chain's payment tokens (domain/currencies.ts). */
const SYMBOLS: ReadonlySet<string> = new Set(PRICED_AS.keys());

/** A record's fields and their checks. */
const shape = f.object({
  currency: f.paymentCurrency,
  minute: f.epochSeconds,
  usd: f.usdPrice,
});

/**
 * A price point (docs/money.md): a payment token's USD price at a minute,
 * by symbol (a token's price is the same on every chain). A sale answers
 * its priceUsd by the point in force at its time; a later point of the
 * same minute replaces the earlier.
 */
export const prices = declareKind({
  name: "prices",
  shape,
  rules: (r, problems, ctx) => {
    const symbol = r.currency.toUpperCase();
    if (!SYMBOLS.has(symbol)) problems.push({ field: "currency", reason: `must be a payment token's symbol, one of ${[...SYMBOLS].join(", ")} (docs/money.md), got ${JSON.stringify(r.currency)}` });
    else r.currency = symbol;
    if (r.minute % 60 !== 0) problems.push({ field: "minute", reason: `must be a minute's first second (a multiple of 60), got ${r.minute}` });
    notAhead("minute", r.minute, ctx, problems);
  },
  naturalKey: ["currency", "minute"],
  moves: [],
});
