import type { InfluencerRow, TweetRow } from "../../domain/rows.js";
import {
  type Fragment,
  influencerFragment,
  INFLUENCER_USER_TAG,
  TWEET_USER_TAG,
  tweetFragment,
  type WireForm,
} from "../../domain/wire/fragments.js";
import type { SocialRepository } from "../ports/reads.js";
import { readyList, socialWireColumns } from "../shared/wire-rows.js";
import { toInfluencer, toTweet, USER_COLUMNS } from "../shared/rows.js";
import type { SqliteStatements } from "./statements.js";

const INFLUENCERS = `SELECT i.score, ${USER_COLUMNS}
  FROM influencers i JOIN social_users u ON u.id = i.user_id
  WHERE i.collection_id = ? ORDER BY i.score DESC, i.user_id LIMIT ?`;

// The tweet's own columns by name, not t.*: its key and user id are not
// part of the answer, and every column read costs a string (or number) made.
const TWEETS = `SELECT t.id, t.source, t.text, t.retweet_count, t.favorite_count, t.possibly_sensitive, t.lang,
  t.retweeted_status, t.created_at, t.date, t.original_id, t.original_text, t.original_tweet, t.interaction, ${USER_COLUMNS}
  FROM tweets t JOIN social_users u ON u.id = t.user_id
  WHERE t.collection_id = ? ORDER BY t.interaction DESC, t.id LIMIT ?`;

// The same lists as ready answers (domain/wire/fragments.ts): the row's
// parts around its user's, as the user is now.
const wireOf = (form: WireForm, tagByte: string) => socialWireColumns(form, tagByte, (sql) => `CAST(${sql} AS BLOB)`);
const bothForms = (sql: (form: WireForm) => string): Record<WireForm, string> => ({ json: sql("json"), binary: sql("binary") });
const INFLUENCERS_WIRE = bothForms((form) => `SELECT ${wireOf(form, `x'${INFLUENCER_USER_TAG.toString(16).padStart(2, "0")}'`)}
  FROM influencers x JOIN social_users u ON u.id = x.user_id
  WHERE x.collection_id = ? ORDER BY x.score DESC, x.user_id LIMIT ?`);
const TWEETS_WIRE = bothForms((form) => `SELECT ${wireOf(form, `x'${TWEET_USER_TAG.toString(16).padStart(2, "0")}'`)}
  FROM tweets x JOIN social_users u ON u.id = x.user_id
  WHERE x.collection_id = ? ORDER BY x.interaction DESC, x.id LIMIT ?`);

export class SqliteSocial implements SocialRepository {
  constructor(private readonly s: SqliteStatements) {}

  /** The list as rows, or, given a form, as each row's ready answer in it (domain/wire/fragments.ts). */
  topInfluencers(collectionId: number, limit: number, form?: undefined): InfluencerRow[];
  topInfluencers(collectionId: number, limit: number, form: WireForm): Fragment[];
  topInfluencers(collectionId: number, limit: number, form?: WireForm): InfluencerRow[] | Fragment[];
  topInfluencers(collectionId: number, limit: number, form?: WireForm): InfluencerRow[] | Fragment[] {
    return form === undefined ? this.#topInfluencersRows(collectionId, limit) : this.#topInfluencersReady(collectionId, limit, form);
  }

  #topInfluencersRows(collectionId: number, limit: number): InfluencerRow[] {
    return this.s.rows(INFLUENCERS, [collectionId, limit]).map(toInfluencer);
  }

  /** The list as rows, or, given a form, as each row's ready answer in it (domain/wire/fragments.ts). */
  topTweets(collectionId: number, limit: number, form?: undefined): TweetRow[];
  topTweets(collectionId: number, limit: number, form: WireForm): Fragment[];
  topTweets(collectionId: number, limit: number, form?: WireForm): TweetRow[] | Fragment[];
  topTweets(collectionId: number, limit: number, form?: WireForm): TweetRow[] | Fragment[] {
    return form === undefined ? this.#topTweetsRows(collectionId, limit) : this.#topTweetsReady(collectionId, limit, form);
  }

  #topTweetsRows(collectionId: number, limit: number): TweetRow[] {
    return this.s.rows(TWEETS, [collectionId, limit]).map(toTweet);
  }

  #topInfluencersReady(collectionId: number, limit: number, form: WireForm): Fragment[] {
    return (
      readyList(this.s.values(INFLUENCERS_WIRE[form], [collectionId, limit])) ??
      this.#topInfluencersRows(collectionId, limit).map((r) => influencerFragment(r, form))
    );
  }

  #topTweetsReady(collectionId: number, limit: number, form: WireForm): Fragment[] {
    return readyList(this.s.values(TWEETS_WIRE[form], [collectionId, limit])) ?? this.#topTweetsRows(collectionId, limit).map((r) => tweetFragment(r, form));
  }
}

