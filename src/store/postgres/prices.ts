// Migration 32 (docs/money.md): price points, as SQLite's (its usd kept as
// the decimal text it was sent, so both engines answer the same cents).
export const PRICE_POINTS_SCHEMA = `
  CREATE TABLE price_points (
    currency text NOT NULL,
    minute bigint NOT NULL,
    usd text NOT NULL,
    PRIMARY KEY (currency, minute)
  );`;
