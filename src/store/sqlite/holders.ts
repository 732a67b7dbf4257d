import { standardIs } from "../shared/token-standard.js";
// Holders (decisions.md, "Holders" and "ERC-1155"): token_owners holds each
// holder's count and collection_holdings each collection's token and holder
// counts, whatever the collection's token standard (its record's
// tokenStandard), so every read of them answers either without knowing
// which. An ERC-721 collection's follow each token's one owner (triggers on
// tokens, migration 7, kept for ERC-721 collections only since 42); an
// ERC-1155 collection's follow the balances (balances.ts), each holder's
// count being the units it holds and the collection's token count the units
// held. A collection whose standard changes has them found again from the
// other side.

/** A token's new owner (NEW) gains it; a first token makes them a holder. */
const OWNER_GAINS = `
    INSERT INTO token_owners SELECT NEW.collection_id, NEW.current_owner, 1 WHERE NEW.current_owner <> ''
      ON CONFLICT (collection_id, owner) DO UPDATE SET tokens = tokens + 1;
    UPDATE collection_holdings SET holders = holders + 1 WHERE collection_id = NEW.collection_id AND NEW.current_owner <> ''
      AND (SELECT tokens FROM token_owners WHERE collection_id = NEW.collection_id AND owner = NEW.current_owner) = 1;`;

/** A token's old owner (OLD) loses it; their last one makes them no longer a holder. */
const OWNER_LOSES = `
    UPDATE collection_holdings SET holders = holders - 1 WHERE collection_id = OLD.collection_id AND OLD.current_owner <> ''
      AND (SELECT tokens FROM token_owners WHERE collection_id = OLD.collection_id AND owner = OLD.current_owner) = 1;
    UPDATE token_owners SET tokens = tokens - 1 WHERE collection_id = OLD.collection_id AND owner = OLD.current_owner;
    DELETE FROM token_owners WHERE collection_id = OLD.collection_id AND owner = OLD.current_owner AND tokens = 0;`;

/** The standard of the collection `id` names is `standard`. */

/** The holders' triggers on tokens (tokenHolderTriggers). */
export const TOKEN_HOLDER_TRIGGERS = ["tokens_owner_added", "tokens_owner_left", "tokens_owner_changed"] as const;

/** Migration 7's holders' triggers on tokens; `erc721Only`: for ERC-721 collections only (42). */
export function tokenHolderTriggers(erc721Only: boolean): string {
  const only = (row: string) => (erc721Only ? `WHEN ${standardIs(`${row}.collection_id`, "ERC721")}` : "");
  return `
  CREATE TRIGGER tokens_owner_added AFTER INSERT ON tokens ${only("NEW")} BEGIN
    INSERT INTO collection_holdings VALUES (NEW.collection_id, 1, 0)
      ON CONFLICT (collection_id) DO UPDATE SET tokens = tokens + 1;
    ${OWNER_GAINS}
  END;
  CREATE TRIGGER tokens_owner_left AFTER DELETE ON tokens ${only("OLD")} BEGIN
    UPDATE collection_holdings SET tokens = tokens - 1 WHERE collection_id = OLD.collection_id;
    ${OWNER_LOSES}
  END;
  CREATE TRIGGER tokens_owner_changed AFTER UPDATE OF current_owner ON tokens
    WHEN OLD.current_owner IS NOT NEW.current_owner${erc721Only ? ` AND ${standardIs("NEW.collection_id", "ERC721")}` : ""} BEGIN
    ${OWNER_LOSES}
    ${OWNER_GAINS}
  END;`;
}

/** Units a balance holds: none below 0. */
const held = (balance: string) => `max(${balance}, 0)`;

/** The units `row`'s owner holds changed by `delta`: its count, and whether it is a holder. */
const unitsHeld = (row: string, delta: string) => `
    INSERT INTO collection_holdings VALUES (${row}.collection_id, 0, 0) ON CONFLICT (collection_id) DO NOTHING;
    INSERT INTO token_owners VALUES (${row}.collection_id, ${row}.owner, ${delta})
      ON CONFLICT (collection_id, owner) DO UPDATE SET tokens = tokens + excluded.tokens;
    UPDATE collection_holdings SET tokens = tokens + ${delta},
      holders = holders + (SELECT (tokens > 0) - (tokens - (${delta}) > 0) FROM token_owners WHERE collection_id = ${row}.collection_id AND owner = ${row}.owner)
      WHERE collection_id = ${row}.collection_id;
    DELETE FROM token_owners WHERE collection_id = ${row}.collection_id AND owner = ${row}.owner AND tokens = 0;`;

/** A collection's holders found again from its standard's side (`id`: the collection). */
const holdersFound = (id: string, standard: string) => `
    DELETE FROM token_owners WHERE collection_id = ${id};
    DELETE FROM collection_holdings WHERE collection_id = ${id};
    INSERT INTO token_owners SELECT collection_id, current_owner, count(*) FROM tokens
      WHERE collection_id = ${id} AND current_owner <> '' AND ${standard} = 'ERC721' GROUP BY current_owner;
    INSERT INTO collection_holdings SELECT ${id}, count(*), count(DISTINCT nullif(current_owner, '')) FROM tokens
      WHERE collection_id = ${id} AND ${standard} = 'ERC721' HAVING count(*) > 0;
    INSERT INTO token_owners SELECT collection_id, owner, sum(balance) FROM token_balances
      WHERE collection_id = ${id} AND balance > 0 AND ${standard} = 'ERC1155' GROUP BY owner;
    INSERT INTO collection_holdings SELECT ${id}, sum(balance), count(DISTINCT owner) FROM token_balances
      WHERE collection_id = ${id} AND balance > 0 AND ${standard} = 'ERC1155' HAVING count(*) > 0;`;

/** Migration 42 (after balances.ts's schema): the standard, the ERC-1155 holders' triggers, migration 7's for ERC-721 only. */
export const HOLDERS_BY_STANDARD_SCHEMA = `
  ALTER TABLE collections ADD COLUMN token_standard TEXT NOT NULL DEFAULT 'ERC721';
  ${TOKEN_HOLDER_TRIGGERS.map((t) => `DROP TRIGGER ${t};`).join("\n  ")}
  ${tokenHolderTriggers(true)}

  CREATE TRIGGER token_balances_held AFTER INSERT ON token_balances
    WHEN NEW.balance > 0 AND ${standardIs("NEW.collection_id", "ERC1155")} BEGIN
    ${unitsHeld("NEW", "NEW.balance")}
  END;
  CREATE TRIGGER token_balances_held_changed AFTER UPDATE OF balance ON token_balances
    WHEN ${held("OLD.balance")} <> ${held("NEW.balance")} AND ${standardIs("NEW.collection_id", "ERC1155")} BEGIN
    ${unitsHeld("NEW", `${held("NEW.balance")} - ${held("OLD.balance")}`)}
  END;
  CREATE TRIGGER token_balances_held_left AFTER DELETE ON token_balances
    WHEN OLD.balance > 0 AND ${standardIs("OLD.collection_id", "ERC1155")} BEGIN
    ${unitsHeld("OLD", "-OLD.balance")}
  END;

  CREATE TRIGGER collections_standard_changed AFTER UPDATE OF token_standard ON collections
    WHEN OLD.token_standard IS NOT NEW.token_standard BEGIN
    ${holdersFound("NEW.id", "NEW.token_standard")}
  END;
`;
