import type { TweetRecord } from "../../../gen/marketdata/v1/ingest_service_pb.js";
import { declareKind } from "./declaration.js";
import * as f from "./fields.js";
import { interactionRule, retweet, tweetFields, tweetOf } from "./parts.js";

/** A record's fields and their checks. */
const shape = f.collectionRecord({ contractAddress: f.address, ...tweetFields, retweetedStatus: retweet });

/** A tweet about a collection (a retweet's original nested in it). */
export const tweets = declareKind({
  name: "tweets",
  shape,
  rules: (r, problems) => interactionRule(r, problems),
  /** A TweetRecord without its tweet is refused by the checker, field by field (every field missing). */
  fromMessage: (r: TweetRecord) => ({ contractAddress: r.contractAddress, ...(r.tweet === undefined ? {} : tweetOf(r.tweet)) }),
  naturalKey: ["contractAddress", "id"],
  moves: ["social-users"],
});
