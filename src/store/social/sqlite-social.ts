import type { InfluencerRow, SocialUserRow, TweetRow } from "../../domain/records.js";
import type { SocialRepository } from "../repositories.js";
import type { Row, SqliteStatements } from "../sqlite/statements.js";

/** The user columns of influencers and tweets; the same SQL on both engines. */
export const USER_COLUMNS = `u.id AS "userId", u.screen_name, u.profile_image_url, u.description, u.name AS "userName",
  u.location, u.followers_count, u.verified, u.statuses_count, u.favourites_count, u.protected`;

export const INFLUENCERS_SQL = (p: (n: number) => string) => `SELECT i.score, ${USER_COLUMNS}
  FROM influencers i JOIN social_users u ON u.id = i.user_id
  WHERE i.collection_id = ${p(1)} ORDER BY i.score DESC, i.user_id LIMIT ${p(2)}`;

export const TWEETS_SQL = (p: (n: number) => string) => `SELECT t.*, ${USER_COLUMNS}
  FROM tweets t JOIN social_users u ON u.id = t.user_id
  WHERE t.collection_id = ${p(1)} ORDER BY t.interaction DESC, t.id LIMIT ${p(2)}`;

export class SqliteSocial implements SocialRepository {
  constructor(private readonly s: SqliteStatements) {}

  topInfluencers(collectionId: number, limit: number): InfluencerRow[] {
    return (this.s.prepare(INFLUENCERS_SQL(() => "?")).all(collectionId, limit) as Row[]).map(toInfluencer);
  }

  topTweets(collectionId: number, limit: number): TweetRow[] {
    return (this.s.prepare(TWEETS_SQL(() => "?")).all(collectionId, limit) as Row[]).map(toTweet);
  }
}

/** SQLite's 0/1 and PostgreSQL's booleans alike. */
const bool = (v: unknown) => v === 1 || v === true;

export function toInfluencer(r: Row): InfluencerRow {
  return { user: toUser(r), score: r.score as number };
}

/** A retweeted post: SQLite keeps its JSON text, PostgreSQL its jsonb (parsed by the driver). */
function jsonText(v: unknown): string | null {
  return v === null || v === undefined ? null : typeof v === "string" ? v : JSON.stringify(v);
}

export function toTweet(r: Row): TweetRow {
  return {
    id: r.id as string,
    user: toUser(r),
    source: r.source as string,
    text: r.text as string,
    retweetCount: r.retweet_count as number,
    favoriteCount: r.favorite_count as number,
    possiblySensitive: bool(r.possibly_sensitive),
    lang: r.lang as string,
    retweetedStatusJson: jsonText(r.retweeted_status),
    createdAt: r.created_at as string,
    date: r.date as string,
    originalId: r.original_id as string,
    originalText: r.original_text as string,
    originalTweet: bool(r.original_tweet),
    interaction: r.interaction as number,
  };
}

function toUser(r: Row): SocialUserRow {
  return {
    id: r.userId as string,
    screenName: r.screen_name as string,
    profileImageUrl: r.profile_image_url as string,
    description: r.description as string,
    name: r.userName as string,
    location: r.location as string,
    followersCount: r.followers_count as number,
    verified: bool(r.verified),
    statusesCount: r.statuses_count as number,
    favouritesCount: r.favourites_count as number,
    protected: bool(r.protected),
  };
}
