import { standardIs } from "../shared/token-standard.js";
// Holders by each collection's token standard (migration 42), as SQLite's
// (sqlite/holders.ts; decisions.md, "Holders" and "ERC-1155"): an ERC-721
// collection's from its tokens' owners (migration 6's trigger function, now
// for ERC-721 collections only), an ERC-1155 collection's from the balances
// (balances.ts), into the same tables; a standard changed counts them again
// from the other side.

/** A collection's holders found again from its standard's side (`cid`, `standard`: of the collection, as plpgsql variables). */
const HOLDERS_FOUND = `
    DELETE FROM token_owners WHERE collection_id = cid;
    DELETE FROM collection_holdings WHERE collection_id = cid;
    IF standard = 'ERC1155' THEN
      INSERT INTO token_owners SELECT cid, owner, sum(balance) FROM token_balances WHERE collection_id = cid AND balance > 0 GROUP BY owner;
      INSERT INTO collection_holdings SELECT cid, sum(balance), count(DISTINCT owner) FROM token_balances
        WHERE collection_id = cid AND balance > 0 HAVING count(*) > 0;
    ELSE
      INSERT INTO token_owners SELECT cid, current_owner, count(*) FROM tokens WHERE collection_id = cid AND current_owner <> '' GROUP BY current_owner;
      INSERT INTO collection_holdings SELECT cid, count(*), count(DISTINCT nullif(current_owner, '')) FROM tokens
        WHERE collection_id = cid HAVING count(*) > 0;
    END IF;`;

/** Migration 6's trigger function keeping holders from tokens' owners; `erc721Only`: for ERC-721 collections only (42). */
export function tokenOwnersKept(erc721Only: boolean): string {
  return `
  CREATE OR REPLACE FUNCTION token_owners_kept() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE left_count bigint;
  DECLARE gained_count bigint;
  BEGIN
${erc721Only ? ERC721_ONLY : ""}    IF TG_OP = 'INSERT' THEN
      INSERT INTO collection_holdings VALUES (NEW.collection_id, 1, 0)
        ON CONFLICT (collection_id) DO UPDATE SET tokens = collection_holdings.tokens + 1;
    ELSIF TG_OP = 'DELETE' THEN
      UPDATE collection_holdings SET tokens = tokens - 1 WHERE collection_id = OLD.collection_id;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.current_owner <> '' THEN
      UPDATE token_owners SET tokens = tokens - 1 WHERE collection_id = OLD.collection_id AND owner = OLD.current_owner
        RETURNING tokens INTO left_count;
      IF left_count = 0 THEN
        DELETE FROM token_owners WHERE collection_id = OLD.collection_id AND owner = OLD.current_owner;
        UPDATE collection_holdings SET holders = holders - 1 WHERE collection_id = OLD.collection_id;
      END IF;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.current_owner <> '' THEN
      INSERT INTO token_owners VALUES (NEW.collection_id, NEW.current_owner, 1)
        ON CONFLICT (collection_id, owner) DO UPDATE SET tokens = token_owners.tokens + 1
        RETURNING tokens INTO gained_count;
      IF gained_count = 1 THEN
        UPDATE collection_holdings SET holders = holders + 1 WHERE collection_id = NEW.collection_id;
      END IF;
    END IF;
    RETURN NULL;
  END $$;`;
}

/** The start of a trigger function on tokens that leaves ERC-1155 collections to the balances. */
const ERC721_ONLY = `    IF NOT ${standardIs("coalesce(NEW.collection_id, OLD.collection_id)", "ERC721")} THEN
      RETURN NULL;
    END IF;
`;

/** Migration 42 (after balances.ts's): the standard, migration 6's holders for ERC-721 collections only, the ERC-1155 holders' triggers. */
export const HOLDERS_BY_STANDARD_MIGRATION = `
  ALTER TABLE collections ADD COLUMN token_standard text NOT NULL DEFAULT 'ERC721';

  -- Migration 6's holders, kept from tokens: now for ERC-721 collections only.
  ${tokenOwnersKept(true)}

  -- An ERC-1155 collection's holders, kept from the balances: each holder's units held.
  CREATE FUNCTION token_balances_held() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE cid integer := coalesce(NEW.collection_id, OLD.collection_id);
  DECLARE holder text := coalesce(NEW.owner, OLD.owner);
  DECLARE delta bigint := greatest(coalesce(NEW.balance, 0), 0) - greatest(coalesce(OLD.balance, 0), 0);
  DECLARE now_held bigint;
  BEGIN
    IF delta = 0 OR NOT ${standardIs("cid", "ERC1155")} THEN
      RETURN NULL;
    END IF;
    INSERT INTO collection_holdings VALUES (cid, 0, 0) ON CONFLICT (collection_id) DO NOTHING;
    INSERT INTO token_owners VALUES (cid, holder, delta)
      ON CONFLICT (collection_id, owner) DO UPDATE SET tokens = token_owners.tokens + excluded.tokens
      RETURNING tokens INTO now_held;
    UPDATE collection_holdings SET tokens = tokens + delta,
      holders = holders + (now_held > 0)::int - (now_held - delta > 0)::int WHERE collection_id = cid;
    IF now_held = 0 THEN
      DELETE FROM token_owners WHERE collection_id = cid AND owner = holder;
    END IF;
    RETURN NULL;
  END $$;
  CREATE TRIGGER token_balances_held AFTER INSERT OR DELETE OR UPDATE OF balance ON token_balances
    FOR EACH ROW EXECUTE FUNCTION token_balances_held();

  CREATE FUNCTION collections_standard_changed() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE cid integer := NEW.id;
  DECLARE standard text := NEW.token_standard;
  BEGIN
    ${HOLDERS_FOUND}
    RETURN NULL;
  END $$;
  CREATE TRIGGER collections_standard_changed AFTER UPDATE OF token_standard ON collections
    FOR EACH ROW WHEN (OLD.token_standard IS DISTINCT FROM NEW.token_standard) EXECUTE FUNCTION collections_standard_changed();
`;
