import type { InfluencerRow, SocialUserRow, TweetRow } from "../../domain/records.js";
import type { SocialRepository } from "../ports.js";
import { type Row, toInfluencer, toTweet } from "../shared/rows.js";
import type { SqliteStatements } from "./statements.js";

/** The user columns of influencers and tweets, named as shared/rows.ts reads them. */
const USER_COLUMNS = `u.id AS "userId", u.screen_name, u.profile_image_url, u.description, u.name AS "userName",
  u.location, u.followers_count, u.verified, u.statuses_count, u.favourites_count, u.protected`;

const INFLUENCERS_SQL = (p: (n: number) => string) => `SELECT i.score, ${USER_COLUMNS}
  FROM influencers i JOIN social_users u ON u.id = i.user_id
  WHERE i.collection_id = ${p(1)} ORDER BY i.score DESC, i.user_id LIMIT ${p(2)}`;

const TWEETS_SQL = (p: (n: number) => string) => `SELECT t.*, ${USER_COLUMNS}
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

