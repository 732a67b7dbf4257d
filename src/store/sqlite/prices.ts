// Migration 32 (docs/money.md): price points, a token's USD price by
// minute, read by shared/prices.ts usdPointSql (the key is its seek).
export const PRICE_POINTS_SCHEMA = `
  CREATE TABLE price_points (
    currency TEXT NOT NULL,
    minute INTEGER NOT NULL,
    usd TEXT NOT NULL,
    PRIMARY KEY (currency, minute)
  ) WITHOUT ROWID;`;
