import { ownerOf } from "./ownership.js";

// Balances of tokens by owner (migration 42; decisions.md, "ERC-1155"):
// each (token, owner)'s balance is the sum of the amounts transferred to it
// less those transferred from it, kept in token_balances by triggers on
// transfers as deltas (a sum, so arrival order does not matter; a transfer
// sent again with another amount, sender or recipient takes its old units
// back first). A balance that reaches 0 leaves the table; one below 0 (the
// transfer that brought the units not known yet) stays, and is not
// answered. Kept for every collection: its token standard only says whether
// its holders count these (holders.ts).

/** `row`'s units (sign 1: moved, -1: taken back) out of its sender and into its recipient, the zero address (a mint's sender, a burn's recipient) holding none. */
const unitsMoved = (row: string, sign: 1 | -1) => `
    INSERT INTO token_balances SELECT ${row}.collection_id, ${row}.asset_key, ${ownerOf(`${row}.recipient`)}, ${sign} * ${row}.amount
      WHERE ${row}.recipient <> zeroblob(20)
      ON CONFLICT (collection_id, asset_key, owner) DO UPDATE SET balance = balance + excluded.balance;
    INSERT INTO token_balances SELECT ${row}.collection_id, ${row}.asset_key, ${ownerOf(`${row}.sender`)}, ${-sign} * ${row}.amount
      WHERE ${row}.sender <> zeroblob(20)
      ON CONFLICT (collection_id, asset_key, owner) DO UPDATE SET balance = balance + excluded.balance;
    DELETE FROM token_balances WHERE collection_id = ${row}.collection_id AND asset_key = ${row}.asset_key
      AND owner IN (${ownerOf(`${row}.sender`)}, ${ownerOf(`${row}.recipient`)}) AND balance = 0;`;

/**
 * Every balance of the transfers `where` selects (at most one parameter,
 * named once), summed from them: each transfer read twice, as its
 * recipient's units in and its sender's out (a bulk import's recompute,
 * the migration's backfill).
 */
const balancesFound = (where: string) => `
  INSERT INTO token_balances SELECT collection_id, asset_key, ${ownerOf("holder")}, sum(units) FROM (
    SELECT t.collection_id, t.asset_key, iif(side = 1, t.recipient, t.sender) AS holder, side * t.amount AS units
    FROM transfers t CROSS JOIN (SELECT 1 AS side UNION ALL SELECT -1) WHERE ${where})
  WHERE holder <> zeroblob(20)
  GROUP BY collection_id, asset_key, holder HAVING sum(units) <> 0`;

/** The triggers that keep token_balances: dropped by a bulk import of transfers (market-triggers.ts), which finds them again (BALANCES_RECOMPUTED). */
export const BALANCE_TRIGGERS = ["transfers_balance_added", "transfers_balance_changed", "transfers_balance_removed"] as const;

export const BALANCES_SCHEMA = `
  ALTER TABLE transfers ADD COLUMN amount INTEGER NOT NULL DEFAULT 1;
  ALTER TABLE transfer_removals ADD COLUMN amount INTEGER NOT NULL DEFAULT 1;

  -- One row per (token, owner) whose balance is not 0; a token's owners by
  -- balance are one range of token_balances_by_balance.
  CREATE TABLE token_balances (
    collection_id INTEGER NOT NULL,
    asset_key TEXT NOT NULL,
    owner TEXT NOT NULL,
    balance INTEGER NOT NULL,
    PRIMARY KEY (collection_id, asset_key, owner)
  ) WITHOUT ROWID;
  CREATE INDEX token_balances_by_balance ON token_balances (collection_id, asset_key, balance DESC, owner);
  ${balancesFound("true")};

  CREATE TRIGGER transfers_balance_added AFTER INSERT ON transfers BEGIN
    ${unitsMoved("NEW", 1)}
  END;
  CREATE TRIGGER transfers_balance_changed AFTER UPDATE OF sender, recipient, amount ON transfers
    WHEN OLD.sender IS NOT NEW.sender OR OLD.recipient IS NOT NEW.recipient OR OLD.amount IS NOT NEW.amount BEGIN
    ${unitsMoved("OLD", -1)}
    ${unitsMoved("NEW", 1)}
  END;
  CREATE TRIGGER transfers_balance_removed AFTER DELETE ON transfers BEGIN
    ${unitsMoved("OLD", -1)}
  END;
`;

/** A bulk import's recompute of one collection's balances (market-triggers.ts), `?` its id (the holders' triggers follow). */
export const BALANCES_RECOMPUTED = ["DELETE FROM token_balances WHERE collection_id = ?", balancesFound("collection_id = ?")];
