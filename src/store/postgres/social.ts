import type { InfluencerRow, TweetRow } from "../../domain/rows.js";
import type { SocialRepository } from "../ports/reads.js";
import {
  type Fragment,
  influencerFragment,
  INFLUENCER_USER_TAG,
  TWEET_USER_TAG,
  tweetFragment,
  type WireForm,
} from "../../domain/wire/fragments.js";
import { readyList, socialWireColumns } from "../shared/wire-rows.js";
import { toInfluencer, toTweet, USER_COLUMNS } from "../shared/rows.js";
import type { PgQueries } from "./statements.js";

const INFLUENCERS_SQL = `SELECT i.score, ${USER_COLUMNS}
  FROM influencers i JOIN social_users u ON u.id = i.user_id
  WHERE i.collection_id = $1 ORDER BY i.score DESC, i.user_id LIMIT $2`;

const TWEETS_SQL = `SELECT t.*, ${USER_COLUMNS}
  FROM tweets t JOIN social_users u ON u.id = t.user_id
  WHERE t.collection_id = $1 ORDER BY t.interaction DESC, t.id LIMIT $2`;

// The same lists as ready answers (domain/wire/fragments.ts): the row's
// parts around its user's, as the user is now.
const tagByte = (tag: number) => `'\\x${tag.toString(16).padStart(2, "0")}'::bytea`;
const bothForms = (sql: (form: WireForm) => string): Record<WireForm, string> => ({ json: sql("json"), binary: sql("binary") });
const INFLUENCERS_WIRE = bothForms((form) => `SELECT ${socialWireColumns(form, tagByte(INFLUENCER_USER_TAG), (sql) => sql)} AS wire
  FROM influencers x JOIN social_users u ON u.id = x.user_id
  WHERE x.collection_id = $1 ORDER BY x.score DESC, x.user_id LIMIT $2`);
const TWEETS_WIRE = bothForms((form) => `SELECT ${socialWireColumns(form, tagByte(TWEET_USER_TAG), (sql) => sql)} AS wire
  FROM tweets x JOIN social_users u ON u.id = x.user_id
  WHERE x.collection_id = $1 ORDER BY x.interaction DESC, x.id LIMIT $2`);

export class PgSocial implements SocialRepository {
  constructor(private readonly q: PgQueries) {}

  /** The list as rows, or, given a form, as each row's ready answer in it (domain/wire/fragments.ts). */
  topInfluencers(collectionId: number, limit: number, form?: undefined): Promise<InfluencerRow[]>;
  topInfluencers(collectionId: number, limit: number, form: WireForm): Promise<Fragment[]>;
  topInfluencers(collectionId: number, limit: number, form?: WireForm): Promise<InfluencerRow[] | Fragment[]>;
  topInfluencers(collectionId: number, limit: number, form?: WireForm): Promise<InfluencerRow[] | Fragment[]> {
    return form === undefined ? this.#topInfluencersRows(collectionId, limit) : this.#topInfluencersReady(collectionId, limit, form);
  }

  async #topInfluencersRows(collectionId: number, limit: number): Promise<InfluencerRow[]> {
    return (await this.q.rows(INFLUENCERS_SQL, [collectionId, limit])).map(toInfluencer);
  }

  /** The list as rows, or, given a form, as each row's ready answer in it (domain/wire/fragments.ts). */
  topTweets(collectionId: number, limit: number, form?: undefined): Promise<TweetRow[]>;
  topTweets(collectionId: number, limit: number, form: WireForm): Promise<Fragment[]>;
  topTweets(collectionId: number, limit: number, form?: WireForm): Promise<TweetRow[] | Fragment[]>;
  topTweets(collectionId: number, limit: number, form?: WireForm): Promise<TweetRow[] | Fragment[]> {
    return form === undefined ? this.#topTweetsRows(collectionId, limit) : this.#topTweetsReady(collectionId, limit, form);
  }

  async #topTweetsRows(collectionId: number, limit: number): Promise<TweetRow[]> {
    return (await this.q.rows(TWEETS_SQL, [collectionId, limit])).map(toTweet);
  }

  async #topInfluencersReady(collectionId: number, limit: number, form: WireForm): Promise<Fragment[]> {
    const ready = readyList((await this.q.rows(INFLUENCERS_WIRE[form], [collectionId, limit], true)) as unknown[][]);
    return ready ?? (await this.#topInfluencersRows(collectionId, limit)).map((r) => influencerFragment(r, form));
  }

  async #topTweetsReady(collectionId: number, limit: number, form: WireForm): Promise<Fragment[]> {
    const ready = readyList((await this.q.rows(TWEETS_WIRE[form], [collectionId, limit], true)) as unknown[][]);
    return ready ?? (await this.#topTweetsRows(collectionId, limit)).map((r) => tweetFragment(r, form));
  }
}
