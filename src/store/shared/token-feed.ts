// Migration 39: a token's record written (inserted, or changed: its
// metadata refreshed) is a live-feed event (docs/endpoints.md, "Live
// feeds"; webhooks' "token" events). The record's upsert gives the row the
// next feed position and the second it was written (fed_at); rows the
// ownership triggers make for a token no record named keep position 0 and
// are in no feed. Tokens recorded before keep 0 too: their records were
// written before the feed carried them.
//
// Its index holds the positions taken only (feed_seq > 0, which every feed
// read states): a whole-table index led by collection_id is smaller than the
// primary key, and PostgreSQL's planner took it for the ownership and ask
// triggers' seeks of one token (collection_id and asset_id bound) when a new
// collection's statistics made both look like one row, scanning the
// collection's tokens for each token written (a 10,000-token batch: 90 s).

/** The second a token's record was last written: set by the record's upsert, never compared (a record written again unchanged is no event). */
export const FED_AT = "fed_at";

/** What every read of a feed states beside its position, so that a partial feed index (tokens_by_feed) serves it. */
export const TAKEN = (alias: string) => `${alias}.feed_seq > 0`;

export const TOKEN_FEED_MIGRATION = (int: "INTEGER" | "bigint") => `
  ALTER TABLE tokens ADD COLUMN feed_seq ${int} NOT NULL DEFAULT 0;
  ALTER TABLE tokens ADD COLUMN ${FED_AT} ${int} NOT NULL DEFAULT 0;
  CREATE INDEX tokens_by_feed ON tokens (collection_id, feed_seq) WHERE feed_seq > 0;
`;

/**
 * The value columns an upsert compares to tell a changed row from an
 * unchanged one: a row's ready answers (wire_*, made from the others) and
 * the time a token's record was written are written, never compared.
 */
export function comparedColumns(values: readonly string[]): readonly string[] {
  return values.filter((v) => !v.startsWith("wire_") && v !== FED_AT);
}
