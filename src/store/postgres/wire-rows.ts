import type pg from "pg";
import { influencerFragments, listingFragments, saleJson, socialUserFragments, tweetFragments } from "../../domain/wire/fragments.js";
import { type Row, toListing, toSale, toTweet, toUser, USER_COLUMNS } from "../shared/rows.js";
import { hexSql } from "./hex.js";

// Migration 13, as SQLite's 15 (sqlite/wire-rows.ts): each row of sales,
// listings, social users, tweets and influencers keeps its ready answer
// (domain/wire/fragments.ts), written by the merges (record-writes.ts) from
// then on; the rows already here get theirs now, a batch at a time in key
// order, each batch one UPDATE from arrays.

export const PG_WIRE_ROWS_SCHEMA = `
  ALTER TABLE sales ADD COLUMN wire_json text, ADD COLUMN wire_pb bytea;
  ALTER TABLE listings ADD COLUMN wire_json_head text, ADD COLUMN wire_json_middle text, ADD COLUMN wire_pb bytea;
  ALTER TABLE social_users ADD COLUMN wire_json text, ADD COLUMN wire_pb bytea;
  ALTER TABLE tweets ADD COLUMN wire_json_head text, ADD COLUMN wire_json_tail text, ADD COLUMN wire_pb bytea;
  ALTER TABLE influencers ADD COLUMN wire_json_head text, ADD COLUMN wire_json_tail text, ADD COLUMN wire_pb bytea;
`;

const BATCH = 5_000;

interface Backfill {
  table: string;
  /** The table's key (alias x): the batches' order and the update's match, with its type for the arrays. */
  key: readonly (readonly [string, string])[];
  /** The columns values() reads, from x and its joins. */
  columns: string;
  from: string;
  /** The columns written, with their types. */
  wire: readonly (readonly [string, string])[];
  values(r: Row): unknown[];
}

const BACKFILLS: Backfill[] = [
  {
    table: "sales",
    key: [["collection_id", "integer"], ["hash", "bytea"], ["asset_id", "numeric"]],
    columns: `c.address, ${hexSql("x.hash", "hash")}, ${hexSql("x.seller", "seller")}, ${hexSql("x.buyer", "buyer")},
      x.asset_id::text AS asset_id, x.timestamp, x.block, x.price::text AS price, x.amount_received::text AS amount_received, x.marketplace`,
    from: "FROM sales x JOIN collections c ON c.id = x.collection_id",
    // JSON only: migration 19 drops wire_pb again (a binary page is encoded from the columns).
    wire: [["wire_json", "text"]],
    values: (r) => [saleJson(toSale({ ...r, timestamp: Number(r.timestamp), block: Number(r.block) }))],
  },
  {
    table: "listings",
    key: [["id", "bigint"]],
    columns: "c.address, x.marketplace_id, x.marketplace, x.asset_id::text AS asset_id, x.created_at, x.price::text AS price",
    from: "FROM listings x JOIN collections c ON c.id = x.collection_id",
    wire: [["wire_json_head", "text"], ["wire_json_middle", "text"], ["wire_pb", "bytea"]],
    values: (r) => {
      const f = listingFragments(toListing(r));
      return [f.jsonHead, f.jsonMiddle, f.binary];
    },
  },
  {
    table: "social_users",
    key: [["id", "text"]],
    columns: USER_COLUMNS,
    from: "FROM social_users x JOIN social_users u ON u.id = x.id",
    wire: [["wire_json", "text"], ["wire_pb", "bytea"]],
    values: (r) => {
      const u = pgUser(r);
      const f = socialUserFragments(u);
      return [f.json, f.binary];
    },
  },
  {
    table: "tweets",
    key: [["collection_id", "integer"], ["id", "text"]],
    columns: `x.id, x.source, x.text, x.retweet_count, x.favorite_count, x.possibly_sensitive, x.lang,
      x.retweeted_status, x.created_at, x.date, x.original_id, x.original_text, x.original_tweet, x.interaction, ${USER_COLUMNS}`,
    from: "FROM tweets x JOIN social_users u ON u.id = x.user_id",
    wire: [["wire_json_head", "text"], ["wire_json_tail", "text"], ["wire_pb", "bytea"]],
    values: (r) => {
      const t = toTweet(r);
      const f = tweetFragments({
        ...t,
        user: pgUser(r),
        retweetCount: Number(t.retweetCount),
        favoriteCount: Number(t.favoriteCount),
        interaction: Number(t.interaction),
      });
      return [f.jsonHead, f.jsonTail, f.binary];
    },
  },
  {
    table: "influencers",
    key: [["collection_id", "integer"], ["user_id", "text"]],
    columns: "x.score",
    from: "FROM influencers x",
    wire: [["wire_json_head", "text"], ["wire_json_tail", "text"], ["wire_pb", "bytea"]],
    values: (r) => {
      const f = influencerFragments({ score: Number(r.score) });
      return [f.jsonHead, f.jsonTail, f.binary];
    },
  },
];

/** A user from PostgreSQL's columns (bigint counts come as text). */
function pgUser(r: Row) {
  const u = toUser(r);
  return { ...u, followersCount: Number(u.followersCount), statusesCount: Number(u.statusesCount), favouritesCount: Number(u.favouritesCount) };
}

/** Migration 40, as SQLite's 40: every listing's ready answer written again, with its maker, expiry and currency; and 44's, with its quantity (1 then). */
const LISTINGS_AGAIN: Backfill = {
  ...BACKFILLS[1]!,
  columns: "c.address, x.marketplace_id, x.marketplace, x.asset_id::text AS asset_id, x.created_at, x.price::text AS price, x.currency, x.maker, x.expires_at",
};

/** Writes every row's ready answer (inside the migration's transaction): every kept kind's (migration 13), or the listings' alone (migration 40). */
export async function backfillPgWireRows(client: pg.PoolClient, listingsOnly = false): Promise<void> {
  for (const b of listingsOnly ? [LISTINGS_AGAIN] : BACKFILLS) {
    const keyCols = b.key.map(([k], i) => `x.${k} AS k${i}`).join(", ");
    const keyList = b.key.map(([k]) => `x.${k}`).join(", ");
    const keyTuple = `(${keyList})`;
    const select = (after: boolean) =>
      `SELECT ${keyCols}, ${b.columns} ${b.from} ${after ? `WHERE ${keyTuple} > (${b.key.map((_, i) => `$${i + 1}`).join(", ")})` : ""}
       ORDER BY ${keyList} LIMIT ${BATCH}`;
    const all = [...b.key, ...b.wire];
    const update = `UPDATE ${b.table} x SET ${b.wire.map(([c]) => `${c} = v.${c}`).join(", ")}
      FROM unnest(${all.map(([, type], i) => `$${i + 1}::${type}[]`).join(", ")}) AS v(${all.map(([c]) => c).join(", ")})
      WHERE ${b.key.map(([k]) => `x.${k} = v.${k}`).join(" AND ")}`;
    let rows = (await client.query<Row>(select(false))).rows;
    for (;;) {
      if (rows.length > 0) {
        const columns: unknown[][] = all.map(() => []);
        for (const r of rows) {
          const values = [...b.key.map((_, i) => r[`k${i}`]), ...b.values(r)];
          values.forEach((v, i) => columns[i]!.push(v instanceof Uint8Array ? Buffer.from(v) : v));
        }
        await client.query(update, columns);
      }
      if (rows.length < BATCH) break;
      const last = rows[rows.length - 1]!;
      rows = (await client.query<Row>(select(true), b.key.map((_, i) => last[`k${i}`]))).rows;
    }
  }
}
