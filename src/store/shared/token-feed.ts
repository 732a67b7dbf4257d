// Migration 39: a token's record written (inserted, or changed: its
// metadata refreshed) is a live-feed event (docs/endpoints.md, "Live
// feeds"; webhooks' "token" events). The record's upsert gives the row the
// next feed position and the second it was written (fed_at); rows the
// ownership triggers make for a token no record named keep position 0 and
// are in no feed. Tokens recorded before keep 0 too: their records were
// written before the feed carried them.

/** The second a token's record was last written: set by the record's upsert, never compared (a record written again unchanged is no event). */
export const FED_AT = "fed_at";

export const TOKEN_FEED_MIGRATION = (int: "INTEGER" | "bigint") => `
  ALTER TABLE tokens ADD COLUMN feed_seq ${int} NOT NULL DEFAULT 0;
  ALTER TABLE tokens ADD COLUMN ${FED_AT} ${int} NOT NULL DEFAULT 0;
  CREATE INDEX tokens_by_feed ON tokens (collection_id, feed_seq);
`;

/**
 * The value columns an upsert compares to tell a changed row from an
 * unchanged one: a row's ready answers (wire_*, made from the others) and
 * the time a token's record was written are written, never compared.
 */
export function comparedColumns(values: readonly string[]): readonly string[] {
  return values.filter((v) => !v.startsWith("wire_") && v !== FED_AT);
}
