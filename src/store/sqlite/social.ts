import type { InfluencerRow, SocialUserRow, TweetRow } from "../../domain/records.js";
import type { SocialRepository } from "../ports.js";
import { toInfluencer, toTweet } from "../shared/rows.js";
import type { SqliteStatements } from "./statements.js";

/** The user columns of influencers and tweets, named as shared/rows.ts reads them. */
const USER_COLUMNS = `u.id AS "userId", u.screen_name, u.profile_image_url, u.description, u.name AS "userName",
  u.location, u.followers_count, u.verified, u.statuses_count, u.favourites_count, u.protected`;

const INFLUENCERS = `SELECT i.score, ${USER_COLUMNS}
  FROM influencers i JOIN social_users u ON u.id = i.user_id
  WHERE i.collection_id = ? ORDER BY i.score DESC, i.user_id LIMIT ?`;

// The tweet's own columns by name, not t.*: its key and user id are not
// part of the answer, and every column read costs a string (or number) made.
const TWEETS = `SELECT t.id, t.source, t.text, t.retweet_count, t.favorite_count, t.possibly_sensitive, t.lang,
  t.retweeted_status, t.created_at, t.date, t.original_id, t.original_text, t.original_tweet, t.interaction, ${USER_COLUMNS}
  FROM tweets t JOIN social_users u ON u.id = t.user_id
  WHERE t.collection_id = ? ORDER BY t.interaction DESC, t.id LIMIT ?`;

export class SqliteSocial implements SocialRepository {
  constructor(private readonly s: SqliteStatements) {}

  topInfluencers(collectionId: number, limit: number): InfluencerRow[] {
    return this.s.rows(INFLUENCERS, [collectionId, limit]).map(toInfluencer);
  }

  topTweets(collectionId: number, limit: number): TweetRow[] {
    return this.s.rows(TWEETS, [collectionId, limit]).map(toTweet);
  }
}

