// Spam collections and flagged tokens on PostgreSQL (docs/data.md, "Spam
// and flags"), as sqlite/flags.ts keeps them: one row per record of the
// spam and flags kinds, marked or cleared.

export const FLAGS_SCHEMA = `
  CREATE TABLE collection_flags (
    collection_id integer PRIMARY KEY REFERENCES collections(id),
    is_spam boolean NOT NULL,
    reason text NOT NULL
  );
  CREATE TABLE token_flags (
    collection_id integer NOT NULL REFERENCES collections(id),
    asset_id numeric(78,0) NOT NULL,
    is_flagged boolean NOT NULL,
    reason text NOT NULL,
    PRIMARY KEY (collection_id, asset_id)
  );`;

// Each mark is read by a scalar subquery of its key (a seek of the primary
// key per row): a join or an anti-join lets the planner scan and hash the
// whole table of marks for a page of rows (a spam list can hold most of a
// chain's collections).

/** The listing (or token) row `alias` (collection_id, asset_id) is not of a flagged token. */
export const notFlagged = (alias: string): string =>
  `NOT coalesce((SELECT x.is_flagged FROM token_flags x WHERE x.collection_id = ${alias}.collection_id AND x.asset_id = ${alias}.asset_id), false)`;

/** The summaries row `alias` (its collection_id) is not of a collection marked spam. */
export const notSpam = (alias: string): string =>
  `NOT coalesce((SELECT x.is_spam FROM collection_flags x WHERE x.collection_id = ${alias}.collection_id), false)`;

/** A token row's (as `t`) flag and its reason. */
export const TOKEN_FLAG_COLUMNS = `coalesce((SELECT x.is_flagged FROM token_flags x WHERE x.collection_id = t.collection_id AND x.asset_id = t.asset_id), false) AS is_flagged,
  coalesce((SELECT x.reason FROM token_flags x WHERE x.collection_id = t.collection_id AND x.asset_id = t.asset_id), '') AS flag_reason`;

/** A collection's (its id as `s.collection_id`) spam mark and its reason. */
export const SPAM_COLUMNS = `coalesce((SELECT x.is_spam FROM collection_flags x WHERE x.collection_id = s.collection_id), false) AS is_spam,
  coalesce((SELECT x.reason FROM collection_flags x WHERE x.collection_id = s.collection_id), '') AS spam_reason`;
