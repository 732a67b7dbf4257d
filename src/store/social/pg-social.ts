import type { InfluencerRow, TweetRow } from "../../domain/records.js";
import type { PgQueries } from "../pg/queries.js";
import type { SocialRepository } from "../repositories.js";
import { INFLUENCERS_SQL, toInfluencer, toTweet, TWEETS_SQL } from "./sqlite-social.js";

const placeholder = (n: number) => `$${n}`;

export class PgSocial implements SocialRepository {
  constructor(private readonly q: PgQueries) {}

  async topInfluencers(collectionId: number, limit: number): Promise<InfluencerRow[]> {
    return (await this.q.rows(INFLUENCERS_SQL(placeholder), [collectionId, limit])).map(toInfluencer);
  }

  async topTweets(collectionId: number, limit: number): Promise<TweetRow[]> {
    return (await this.q.rows(TWEETS_SQL(placeholder), [collectionId, limit])).map(toTweet);
  }
}
