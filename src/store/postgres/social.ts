import type { InfluencerRow, TweetRow } from "../../domain/records.js";
import type { SocialRepository } from "../ports.js";
import { toInfluencer, toTweet } from "../shared/rows.js";
import type { PgQueries } from "./queries.js";

/** The user columns of influencers and tweets, named as shared/rows.ts reads them. */
const USER_COLUMNS = `u.id AS "userId", u.screen_name, u.profile_image_url, u.description, u.name AS "userName",
  u.location, u.followers_count, u.verified, u.statuses_count, u.favourites_count, u.protected`;

const INFLUENCERS_SQL = `SELECT i.score, ${USER_COLUMNS}
  FROM influencers i JOIN social_users u ON u.id = i.user_id
  WHERE i.collection_id = $1 ORDER BY i.score DESC, i.user_id LIMIT $2`;

const TWEETS_SQL = `SELECT t.*, ${USER_COLUMNS}
  FROM tweets t JOIN social_users u ON u.id = t.user_id
  WHERE t.collection_id = $1 ORDER BY t.interaction DESC, t.id LIMIT $2`;

export class PgSocial implements SocialRepository {
  constructor(private readonly q: PgQueries) {}

  async topInfluencers(collectionId: number, limit: number): Promise<InfluencerRow[]> {
    return (await this.q.rows(INFLUENCERS_SQL, [collectionId, limit])).map(toInfluencer);
  }

  async topTweets(collectionId: number, limit: number): Promise<TweetRow[]> {
    return (await this.q.rows(TWEETS_SQL, [collectionId, limit])).map(toTweet);
  }
}
