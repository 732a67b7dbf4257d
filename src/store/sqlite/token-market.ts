import { NO_ASK, UNRANKED } from "../shared/token-market.js";

// Tokens and traits kept at write time (migration 10), so that the tokens
// list sorted by price and the traits' floors are index reads, not counts or
// sorts per call:
// - tokens.ask_key: the token's cheapest active listing price in asset-key
//   form (its two-digit length, then the price: text order is numeric
//   order), or NO_ASK; kept by triggers on listings (a listing's status or
//   price changed, a sale or transfer ending it included) and on tokens (a
//   token row made after its listing).
// - tokens.rarity_rank: its rarity row's rank, or UNRANKED (after every
//   rank); kept by triggers on rarity.
// - token_traits: one row per trait (type, value) of each token, with the
//   token's ask_key and rarity_rank, so that a trait's tokens by price or
//   rarity, and its floor, are one index range; rebuilt from
//   tokens.attributes when they change.
// - trait_values: each trait value's token count.
// A trait value is the record's text, or the JSON text of a number or
// boolean; nulls and attributes without a type are not traits.
//
// A bulk import of listings drops their indexes (importer.ts), so the ask
// triggers go with them and the asks are found again per collection at the
// end (market-triggers.ts).

/** The cheapest active listing price of the token `at` names (NEW, OLD or tokens), in asset-key form; NO_ASK without one. */
const askOf = (at: string) => `coalesce((
    SELECT printf('%02d', length(price)) || price FROM listings INDEXED BY listings_open_by_asset
    WHERE collection_id = ${at}.collection_id AND asset_key = ${at}.asset_key AND status = 'CREATED'
    ORDER BY length(price), price LIMIT 1), '${NO_ASK}')`;

/** The ask of the token `at` names found again where it changed. */
export const askFound = (at: string, where = `collection_id = ${at}.collection_id AND asset_key = ${at}.asset_key`) => `
  UPDATE tokens SET ask_key = ${askOf(at)} WHERE ${where} AND ask_key IS NOT ${askOf(at)};`;

const TOKEN_OF_NEW = "collection_id = NEW.collection_id AND asset_key = NEW.asset_key";

/** The traits of the token NEW, from its attributes, at its current ask and rank. */
const TRAITS_OF_NEW = `
  INSERT INTO token_traits (collection_id, trait_type, value, asset_key, ask_key, rarity_rank)
  SELECT NEW.collection_id, j.value ->> '$.trait_type',
    CASE json_type(j.value, '$.value') WHEN 'text' THEN j.value ->> '$.value' ELSE j.value -> '$.value' END,
    NEW.asset_key, (SELECT ask_key FROM tokens WHERE ${TOKEN_OF_NEW}), (SELECT rarity_rank FROM tokens WHERE ${TOKEN_OF_NEW})
  FROM json_each(NEW.attributes) j
  WHERE json_type(j.value, '$.trait_type') = 'text' AND json_type(j.value, '$.value') IN ('text', 'integer', 'real', 'true', 'false')
  ON CONFLICT DO NOTHING;`;

/** The rank of the token `at` names set to `rank`. */
const rankSet = (at: string, rank: string) => `
  UPDATE tokens SET rarity_rank = ${rank} WHERE collection_id = ${at}.collection_id AND asset_key = ${at}.asset_key AND rarity_rank IS NOT ${rank};`;

const TRAITS_OF_OLD = "DELETE FROM token_traits WHERE collection_id = OLD.collection_id AND asset_key = OLD.asset_key;";

export const TOKEN_MARKET_SCHEMA = `
  ALTER TABLE tokens ADD COLUMN ask_key TEXT NOT NULL DEFAULT '${NO_ASK}';
  ALTER TABLE tokens ADD COLUMN rarity_rank INTEGER NOT NULL DEFAULT ${UNRANKED};
  CREATE INDEX listings_open_by_asset ON listings (collection_id, asset_key, length(price), price, marketplace, marketplace_id)
    WHERE status = 'CREATED';
  CREATE INDEX tokens_by_ask ON tokens (collection_id, ask_key, asset_key);
  CREATE INDEX tokens_by_rank ON tokens (collection_id, rarity_rank, asset_key);
  CREATE INDEX tokens_by_owner ON tokens (current_owner, collection_id, asset_key);
  CREATE INDEX tokens_by_move ON tokens (collection_id, coalesce(owner_block, -1), coalesce(owner_log, -1), asset_key);

  CREATE TABLE token_traits (
    collection_id INTEGER NOT NULL,
    trait_type TEXT NOT NULL,
    value TEXT NOT NULL,
    asset_key TEXT NOT NULL,
    ask_key TEXT NOT NULL,
    rarity_rank INTEGER NOT NULL,
    -- A token's rows first: the triggers rewrite them by token, and may not
    -- name an index (SQLite refuses INDEXED BY in a trigger's DELETE); led by
    -- the trait, the primary key drew the planner into every row of the
    -- collection on each token written (10,000 tokens: 0.2 s -> 12 s).
    PRIMARY KEY (collection_id, asset_key, trait_type, value)
  ) WITHOUT ROWID;
  CREATE INDEX token_traits_by_value ON token_traits (collection_id, trait_type, value, asset_key);
  CREATE INDEX token_traits_by_ask ON token_traits (collection_id, trait_type, value, ask_key, asset_key);
  CREATE INDEX token_traits_by_rank ON token_traits (collection_id, trait_type, value, rarity_rank, asset_key);
  CREATE TABLE trait_values (
    collection_id INTEGER NOT NULL,
    trait_type TEXT NOT NULL,
    value TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    PRIMARY KEY (collection_id, trait_type, value)
  ) WITHOUT ROWID;

  CREATE TRIGGER token_traits_counted AFTER INSERT ON token_traits BEGIN
    INSERT INTO trait_values VALUES (NEW.collection_id, NEW.trait_type, NEW.value, 1)
      ON CONFLICT (collection_id, trait_type, value) DO UPDATE SET tokens = tokens + 1;
  END;
  CREATE TRIGGER token_traits_uncounted AFTER DELETE ON token_traits BEGIN
    UPDATE trait_values SET tokens = tokens - 1
      WHERE collection_id = OLD.collection_id AND trait_type = OLD.trait_type AND value = OLD.value;
    DELETE FROM trait_values
      WHERE collection_id = OLD.collection_id AND trait_type = OLD.trait_type AND value = OLD.value AND tokens = 0;
  END;

  -- One trigger per event, so that the order of its steps is this one.
  CREATE TRIGGER tokens_market_added AFTER INSERT ON tokens BEGIN
    ${rankSet("NEW", `coalesce((SELECT rarity_rank FROM rarity WHERE collection_id = NEW.collection_id AND asset_key = NEW.asset_key), ${UNRANKED})`)}
    ${TRAITS_OF_NEW}
    ${askFound("NEW")}
  END;
  CREATE TRIGGER tokens_traits_changed AFTER UPDATE OF attributes ON tokens WHEN OLD.attributes IS NOT NEW.attributes BEGIN
    ${TRAITS_OF_OLD}
    ${TRAITS_OF_NEW}
  END;
  CREATE TRIGGER tokens_market_left AFTER DELETE ON tokens BEGIN
    ${TRAITS_OF_OLD}
  END;
  CREATE TRIGGER tokens_order_changed AFTER UPDATE OF ask_key, rarity_rank ON tokens
    WHEN (OLD.ask_key, OLD.rarity_rank) IS NOT (NEW.ask_key, NEW.rarity_rank) BEGIN
    UPDATE token_traits SET ask_key = NEW.ask_key, rarity_rank = NEW.rarity_rank
      WHERE collection_id = NEW.collection_id AND asset_key = NEW.asset_key;
  END;

  CREATE TRIGGER rarity_ranked AFTER INSERT ON rarity BEGIN
    ${rankSet("NEW", "NEW.rarity_rank")}
  END;
  CREATE TRIGGER rarity_reranked AFTER UPDATE OF rarity_rank ON rarity BEGIN
    ${rankSet("NEW", "NEW.rarity_rank")}
  END;
  CREATE TRIGGER rarity_unranked AFTER DELETE ON rarity BEGIN
    ${rankSet("OLD", String(UNRANKED))}
  END;

  CREATE TRIGGER listings_ask_added AFTER INSERT ON listings WHEN NEW.status = 'CREATED' BEGIN
    ${askFound("NEW")}
  END;
  CREATE TRIGGER listings_ask_changed AFTER UPDATE OF status, price, collection_id, asset_key ON listings
    WHEN (OLD.status = 'CREATED' OR NEW.status = 'CREATED')
      AND (OLD.status, OLD.price, OLD.collection_id, OLD.asset_key) IS NOT (NEW.status, NEW.price, NEW.collection_id, NEW.asset_key) BEGIN
    ${askFound("OLD")}
    ${askFound("NEW")}
  END;
`;

/** Migration 10's backfill: every token's rank, traits and ask from what the store holds. */
export const TOKEN_MARKET_BACKFILL = `
  UPDATE tokens SET rarity_rank = r.rarity_rank FROM rarity r WHERE r.collection_id = tokens.collection_id AND r.asset_key = tokens.asset_key;
  INSERT INTO token_traits (collection_id, trait_type, value, asset_key, ask_key, rarity_rank)
  SELECT t.collection_id, j.value ->> '$.trait_type',
    CASE json_type(j.value, '$.value') WHEN 'text' THEN j.value ->> '$.value' ELSE j.value -> '$.value' END, t.asset_key, '${NO_ASK}', t.rarity_rank
  FROM tokens t, json_each(t.attributes) j
  WHERE json_type(j.value, '$.trait_type') = 'text' AND json_type(j.value, '$.value') IN ('text', 'integer', 'real', 'true', 'false')
  ON CONFLICT DO NOTHING;
  ${askFound("tokens", "true")}
`;
