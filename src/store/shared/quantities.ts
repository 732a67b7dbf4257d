import { ORDER_LOGS } from "./order-log.js";
import { REMOVAL_TABLES } from "./removals.js";

// Migration 44: ERC-1155 sales and listings (decisions.md, "ERC-1155"), the
// part both engines share. A sale's and a listing's record carry their
// quantity, the units sold or offered (1, and every record's before it, for
// an ERC-721 token), in their tables, their removal tables and the
// listings' log, as every other record column.
//
// - A sale's price stays what was paid for all its units, so volumes,
//   series and candles sum and count sales as they did. Its kept JSON
//   (saleJson) leaves the quantity out, as its USD price: the read puts
//   both in last, so no sale's stored answer is written again.
// - A listing's price is each unit's, so the floor is the cheapest unit.
//   Its quantity sits inside its ready answer's fragments (before its
//   status), which the migration writes again for every listing, as 40 did.

/** The migration's columns on either engine (`int`: its integer type). */
export const QUANTITY_COLUMNS = (int: string): string =>
  ["sales", REMOVAL_TABLES.sales, "listings", ORDER_LOGS.listings, REMOVAL_TABLES.listings]
    .map((t) => `ALTER TABLE ${t} ADD COLUMN quantity ${int} NOT NULL DEFAULT 1;`).join("\n  ");
