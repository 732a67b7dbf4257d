import { describe, expect, it } from "vitest";
import { PRICED_AS, usdValue } from "../../src/domain/money.js";
import { paymentToken, refusedCurrency } from "../../src/domain/currencies.js";

// Amounts in US dollars and payment tokens (docs/money.md): exact in
// integers, half up to the cent.

describe("usdValue", () => {
  it("is the amount in whole tokens times the point, to the cent, half up", () => {
    expect(usdValue("1000000000000000000", "ETH", "3421.57")).toBe("3421.57");
    expect(usdValue("1500000000000000000", "WETH", "2000")).toBe("3000.00");
    // 0.001 ETH at 1234.5 = 1.2345: half up to 1.23 (the third digit is 4), and 0.00125 ETH at 1000 = 1.25 exactly.
    expect(usdValue("1000000000000000", "ETH", "1234.5")).toBe("1.23");
    expect(usdValue("1005000000000000", "ETH", "1000")).toBe("1.01");
    // A wei at any price: 0.00; USDC has 6 decimals.
    expect(usdValue("1", "ETH", "99999")).toBe("0.00");
    expect(usdValue("2500000", "USDC", "0.999812")).toBe("2.50");
    // Past 2^64 wei, and a point with 12 fractional digits, exactly.
    expect(usdValue("123456789000000000000000", "ETH", "1.000000000001")).toBe("123456.79");
  });

  it("is \"\" without a point in force", () => {
    expect(usdValue("1000", "ETH", null)).toBe("");
    expect(usdValue("1000", "ETH", undefined)).toBe("");
  });
});

describe("payment tokens", () => {
  it("are named by symbol in any case or by contract in any hex case, and WETH and Blur's pool ETH are priced as ETH", () => {
    expect(paymentToken("ethereum", "weth")?.symbol).toBe("WETH");
    expect(paymentToken("ethereum", "0xC02AAA39B223FE8D0A0E5C4F27EAD9083C756CC2")?.symbol).toBe("WETH");
    expect(paymentToken("base", "0x4200000000000000000000000000000000000006")?.symbol).toBe("WETH");
    expect(paymentToken("base", "BLUR_POOL")).toBeUndefined();
    // A sale in USDC is taken (in no figure in wei); a listing or an offer in it is refused by name.
    expect(refusedCurrency("ethereum", "USDC")).toBeUndefined();
    expect(refusedCurrency("ethereum", "USDC", undefined, true)).toMatch(/USDC is not taken for a listing or an offer/);
    expect(refusedCurrency("polygon", "USDC")).toMatch(/must be one of polygon's payment tokens, ETH, WETH/);
    expect(refusedCurrency("ethereum", "ETH")).toBeUndefined();
    expect([PRICED_AS.get("WETH"), PRICED_AS.get("BLUR_POOL"), PRICED_AS.get("ETH"), PRICED_AS.get("USDC")]).toEqual(["ETH", "ETH", "ETH", "USDC"]);
  });
});
