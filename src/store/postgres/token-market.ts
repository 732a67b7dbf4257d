import { NO_ASK, UNRANKED } from "../shared/token-market.js";

// Tokens' asks and traits kept at write time, as in SQLite (migration 9;
// store/sqlite/token-market.ts says what each holds): by row triggers, so
// that every merge path (tokens, listings, and the listings a sale or
// transfer ends) keeps them. Orders of text are code-point order
// (COLLATE "C"), as SQLite's. A token's ask is one seek of
// listings_open_by_asset (BY_PRICE).


/**
 * The trigger functions' settings: each statement they run is a seek by key
 * (a token's listings, traits, rank), but a trigger plans its statements
 * once per session, from the statistics of the tables as they were, and a
 * merge into an empty table (an import's first) had every later call of
 * that session scan the table it was filling: minutes for 150,000 listings.
 */
const SEEKS_ONLY = "SET enable_seqscan = off";

/** A price's ask key: its two-digit length, then its digits. */
const askKeyOf = (price: string) => `lpad(length(${price}::text)::text, 2, '0') || ${price}::text`;

/** The ask of the token (collection, asset) found again where it changed. */
/** The rank of the token (collection, asset) set to `rank`. */
const rankSet = (collection: string, asset: string, rank: string) => `
    UPDATE tokens SET rarity_rank = ${rank} WHERE collection_id = ${collection} AND asset_id = ${asset} AND rarity_rank IS DISTINCT FROM ${rank};`;

const askFound = (collection: string, asset: string) => `
    UPDATE tokens t SET ask_key = a.ask_key FROM (SELECT coalesce((
        SELECT ${askKeyOf("l.price")} FROM listings l
        WHERE l.collection_id = ${collection} AND l.asset_id = ${asset} AND l.status = 'CREATED'
        ORDER BY l.price LIMIT 1), '${NO_ASK}') AS ask_key) a
    WHERE t.collection_id = ${collection} AND t.asset_id = ${asset} AND t.ask_key IS DISTINCT FROM a.ask_key;`;

/** The traits of the tokens `tokens` selects (collection_id, asset_id, attributes, ask_key, rarity_rank). */
const traitsOf = (tokens: string) => `
    INSERT INTO token_traits (collection_id, trait_type, value, asset_id, ask_key, rarity_rank)
    SELECT t.collection_id, e->>'trait_type', CASE jsonb_typeof(e->'value') WHEN 'string' THEN e->>'value' ELSE (e->'value')::text END,
      t.asset_id, t.ask_key, t.rarity_rank
    FROM (${tokens}) t CROSS JOIN LATERAL jsonb_array_elements(CASE jsonb_typeof(t.attributes) WHEN 'array' THEN t.attributes ELSE '[]' END) e
    WHERE jsonb_typeof(e) = 'object' AND jsonb_typeof(e->'trait_type') = 'string' AND jsonb_typeof(e->'value') IN ('string', 'number', 'boolean')
    ON CONFLICT DO NOTHING`;

export const TOKEN_MARKET_MIGRATION = `
  -- A token's open listings by price: its ask in one seek. (Without it, a
  -- trigger's plan made from an empty table's statistics, during an
  -- import's first merge, walked the collection's open listings by price
  -- for each row: minutes for 150,000 listings.)
  CREATE INDEX listings_open_by_asset ON listings (collection_id, asset_id, price, marketplace, marketplace_id COLLATE "C")
    WHERE status = 'CREATED';
  ALTER TABLE tokens ADD COLUMN ask_key text COLLATE "C" NOT NULL DEFAULT '${NO_ASK}',
    ADD COLUMN rarity_rank bigint NOT NULL DEFAULT ${UNRANKED};
  CREATE INDEX tokens_by_ask ON tokens (collection_id, ask_key, asset_id);
  CREATE INDEX tokens_by_rank ON tokens (collection_id, rarity_rank, asset_id);
  CREATE INDEX tokens_by_owner ON tokens (current_owner, collection_id, asset_id);
  CREATE INDEX tokens_by_move ON tokens (collection_id, (coalesce(owner_block, -1)), (coalesce(owner_log, -1)), asset_id);

  CREATE TABLE token_traits (
    collection_id integer NOT NULL,
    trait_type text COLLATE "C" NOT NULL,
    value text COLLATE "C" NOT NULL,
    asset_id numeric(78,0) NOT NULL,
    ask_key text COLLATE "C" NOT NULL,
    rarity_rank bigint NOT NULL,
    PRIMARY KEY (collection_id, trait_type, value, asset_id)
  );
  CREATE INDEX token_traits_by_ask ON token_traits (collection_id, trait_type, value, ask_key, asset_id);
  CREATE INDEX token_traits_by_rank ON token_traits (collection_id, trait_type, value, rarity_rank, asset_id);
  CREATE INDEX token_traits_by_token ON token_traits (collection_id, asset_id);
  CREATE TABLE trait_values (
    collection_id integer NOT NULL,
    trait_type text COLLATE "C" NOT NULL,
    value text COLLATE "C" NOT NULL,
    tokens bigint NOT NULL,
    PRIMARY KEY (collection_id, trait_type, value)
  );

  CREATE FUNCTION trait_values_kept() RETURNS trigger LANGUAGE plpgsql ${SEEKS_ONLY} AS $$
  BEGIN
    IF TG_OP = 'INSERT' THEN
      INSERT INTO trait_values VALUES (NEW.collection_id, NEW.trait_type, NEW.value, 1)
        ON CONFLICT (collection_id, trait_type, value) DO UPDATE SET tokens = trait_values.tokens + 1;
    ELSE
      DELETE FROM trait_values WHERE collection_id = OLD.collection_id AND trait_type = OLD.trait_type AND value = OLD.value AND tokens = 1;
      UPDATE trait_values SET tokens = tokens - 1 WHERE collection_id = OLD.collection_id AND trait_type = OLD.trait_type AND value = OLD.value;
    END IF;
    RETURN NULL;
  END $$;
  CREATE TRIGGER token_traits_counted AFTER INSERT OR DELETE ON token_traits FOR EACH ROW EXECUTE FUNCTION trait_values_kept();

  CREATE FUNCTION token_market_kept() RETURNS trigger LANGUAGE plpgsql ${SEEKS_ONLY} AS $$
  BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND (TG_OP = 'DELETE' OR OLD.attributes IS DISTINCT FROM NEW.attributes) THEN
      DELETE FROM token_traits WHERE collection_id = OLD.collection_id AND asset_id = OLD.asset_id;
    END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND OLD.attributes IS DISTINCT FROM NEW.attributes) THEN
      ${traitsOf("SELECT collection_id, asset_id, attributes, ask_key, rarity_rank FROM tokens WHERE collection_id = NEW.collection_id AND asset_id = NEW.asset_id")};
    END IF;
    IF TG_OP = 'INSERT' THEN
      ${rankSet("NEW.collection_id", "NEW.asset_id", `coalesce((SELECT r.rarity_rank FROM rarity r WHERE r.collection_id = NEW.collection_id AND r.asset_id = NEW.asset_id), ${UNRANKED})`)}
      ${askFound("NEW.collection_id", "NEW.asset_id")}
    END IF;
    IF TG_OP = 'UPDATE' AND (OLD.ask_key, OLD.rarity_rank) IS DISTINCT FROM (NEW.ask_key, NEW.rarity_rank) THEN
      UPDATE token_traits SET ask_key = NEW.ask_key, rarity_rank = NEW.rarity_rank
        WHERE collection_id = NEW.collection_id AND asset_id = NEW.asset_id;
    END IF;
    RETURN NULL;
  END $$;
  CREATE TRIGGER tokens_market_kept AFTER INSERT OR DELETE OR UPDATE OF attributes, ask_key, rarity_rank ON tokens
    FOR EACH ROW EXECUTE FUNCTION token_market_kept();

  CREATE FUNCTION listing_asks_kept() RETURNS trigger LANGUAGE plpgsql ${SEEKS_ONLY} AS $$
  BEGIN
    IF TG_OP = 'UPDATE' THEN
      ${askFound("OLD.collection_id", "OLD.asset_id")}
    END IF;
    ${askFound("NEW.collection_id", "NEW.asset_id")}
    RETURN NULL;
  END $$;
  CREATE TRIGGER listings_ask_added AFTER INSERT ON listings
    FOR EACH ROW WHEN (NEW.status = 'CREATED') EXECUTE FUNCTION listing_asks_kept();
  CREATE TRIGGER listings_ask_changed AFTER UPDATE OF status, price, collection_id, asset_id ON listings
    FOR EACH ROW WHEN ((OLD.status = 'CREATED' OR NEW.status = 'CREATED')
      AND (OLD.status, OLD.price, OLD.collection_id, OLD.asset_id) IS DISTINCT FROM (NEW.status, NEW.price, NEW.collection_id, NEW.asset_id))
    EXECUTE FUNCTION listing_asks_kept();

  CREATE FUNCTION token_ranks_kept() RETURNS trigger LANGUAGE plpgsql ${SEEKS_ONLY} AS $$
  BEGIN
    IF TG_OP = 'DELETE' THEN
      ${rankSet("OLD.collection_id", "OLD.asset_id", String(UNRANKED))}
    ELSE
      ${rankSet("NEW.collection_id", "NEW.asset_id", "NEW.rarity_rank")}
    END IF;
    RETURN NULL;
  END $$;
  CREATE TRIGGER rarity_ranked AFTER INSERT OR DELETE OR UPDATE OF rarity_rank ON rarity FOR EACH ROW EXECUTE FUNCTION token_ranks_kept();

  UPDATE tokens t SET rarity_rank = r.rarity_rank FROM rarity r WHERE r.collection_id = t.collection_id AND r.asset_id = t.asset_id;
  ${traitsOf("SELECT collection_id, asset_id, attributes, ask_key, rarity_rank FROM tokens")};
  UPDATE tokens t SET ask_key = a.ask_key FROM (
    SELECT DISTINCT ON (collection_id, asset_id) collection_id, asset_id, ${askKeyOf("price")} AS ask_key FROM listings
    WHERE status = 'CREATED' ORDER BY collection_id, asset_id, price) a
  WHERE t.collection_id = a.collection_id AND t.asset_id = a.asset_id;
`;
