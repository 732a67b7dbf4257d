// Balances of tokens by owner (migration 42), as SQLite's
// (sqlite/balances.ts; decisions.md, "ERC-1155"). Here the merges of
// transfers and reorganisations find the balances of the tokens they
// staged again, set-based, from each token's transfers (as ownership.ts
// finds owners): every balance is a sum, so arrival order does not matter,
// and only the balances that changed are written, so the triggers on
// token_balances (holders.ts) move an ERC-1155 collection's holders by what
// changed.

const ZERO = `'\\x${"00".repeat(20)}'::bytea`;

/** The balances of the tokens `assets` names (collection_id, asset_id), or of every token (`assets` undefined), from their transfers. */
const summed = (assets?: string) => {
  const from = assets === undefined ? "transfers t" : `(${assets}) a JOIN transfers t ON t.collection_id = a.collection_id AND t.asset_id = a.asset_id`;
  return `SELECT collection_id, asset_id, owner, sum(units)::bigint AS balance FROM (
      SELECT t.collection_id, t.asset_id, '0x' || encode(t.recipient, 'hex') AS owner, t.amount AS units FROM ${from} WHERE t.recipient <> ${ZERO}
      UNION ALL
      SELECT t.collection_id, t.asset_id, '0x' || encode(t.sender, 'hex'), -t.amount FROM ${from} WHERE t.sender <> ${ZERO}) m
    GROUP BY collection_id, asset_id, owner HAVING sum(units) <> 0`;
};

/** The balances of the tokens `assets` selects (collection_id, asset_id) found again: those gone deleted, those changed written. */
export function balancesFound(assets: string): string {
  return `WITH fresh AS (${summed(assets)}),
    gone AS (DELETE FROM token_balances b USING (${assets}) a WHERE b.collection_id = a.collection_id AND b.asset_id = a.asset_id
      AND NOT EXISTS (SELECT 1 FROM fresh f WHERE f.collection_id = b.collection_id AND f.asset_id = b.asset_id AND f.owner = b.owner))
    INSERT INTO token_balances SELECT collection_id, asset_id, owner, balance FROM fresh
    ON CONFLICT (collection_id, asset_id, owner) DO UPDATE SET balance = excluded.balance WHERE token_balances.balance <> excluded.balance`;
}

export const BALANCES_MIGRATION = `
  ALTER TABLE transfers ADD COLUMN amount bigint NOT NULL DEFAULT 1;
  ALTER TABLE transfer_removals ADD COLUMN amount bigint NOT NULL DEFAULT 1;
  CREATE TABLE token_balances (
    collection_id integer NOT NULL,
    asset_id numeric(78,0) NOT NULL,
    owner text NOT NULL,
    balance bigint NOT NULL,
    PRIMARY KEY (collection_id, asset_id, owner)
  );
  CREATE INDEX token_balances_by_balance ON token_balances (collection_id, asset_id, balance DESC, owner COLLATE "C");
  INSERT INTO token_balances ${summed()};
`;
