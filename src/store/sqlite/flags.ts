// Spam collections and flagged tokens on SQLite (docs/data.md, "Spam and
// flags"; postgres/flags.ts is the same there): one row per record of the
// spam and flags kinds, marked or cleared. The floors, the trait floors and
// the collections list ask them while they walk their own indexes: a few
// flagged tokens cost a primary-key seek per listing walked.

export const FLAGS_SCHEMA = `
  CREATE TABLE collection_flags (
    collection_id INTEGER PRIMARY KEY REFERENCES collections(id),
    is_spam INTEGER NOT NULL,
    reason TEXT NOT NULL
  );
  CREATE TABLE token_flags (
    collection_id INTEGER NOT NULL REFERENCES collections(id),
    asset_key TEXT NOT NULL,
    is_flagged INTEGER NOT NULL,
    reason TEXT NOT NULL,
    PRIMARY KEY (collection_id, asset_key)
  ) WITHOUT ROWID;`;

/** The table specs the spam and flags kinds write (record-writes.ts TABLES). */
export const FLAG_TABLES = {
  spam: { table: "collection_flags", key: ["collection_id"], values: ["is_spam", "reason"] },
  flags: { table: "token_flags", key: ["collection_id", "asset_key"], values: ["is_flagged", "reason"] },
} as const;

/** The listing (or token) row `alias` (collection_id, asset_key) is not of a flagged token. */
export const notFlagged = (alias: string): string =>
  `NOT EXISTS (SELECT 1 FROM token_flags x WHERE x.collection_id = ${alias}.collection_id AND x.asset_key = ${alias}.asset_key AND x.is_flagged = 1)`;

/** The summaries row `alias` (its collection_id) is not of a collection marked spam. */
export const notSpam = (alias: string): string =>
  `NOT EXISTS (SELECT 1 FROM collection_flags x WHERE x.collection_id = ${alias}.collection_id AND x.is_spam = 1)`;

/** A token row's (as `t`) flag columns, read with a LEFT JOIN of token_flags as `tf`. */
export const TOKEN_FLAG_COLUMNS = "coalesce(tf.is_flagged, 0) AS is_flagged, coalesce(tf.reason, '') AS flag_reason";
export const TOKEN_FLAG_JOIN = "LEFT JOIN token_flags tf ON tf.collection_id = t.collection_id AND tf.asset_key = t.asset_key";

/** A collection's (its id as `s.collection_id`) spam columns, read with a LEFT JOIN of collection_flags as `cf`. */
export const SPAM_COLUMNS = "coalesce(cf.is_spam, 0) AS is_spam, coalesce(cf.reason, '') AS spam_reason";
export const SPAM_JOIN = "LEFT JOIN collection_flags cf ON cf.collection_id = s.collection_id";
