import type { SocialUser, Tweet } from "../../../gen/marketdata/v1/resources_pb.js";
import { ListingStatus } from "../../../gen/marketdata/v1/resources_pb.js";
import { int } from "./declaration.js";
import * as f from "./fields.js";
import type { Problem } from "./fields.js";
import { paymentToken, refusedCurrency } from "../currencies.js";
import type { Chain } from "../chains.js";

// The parts several kinds' declarations share: text limits, the social
// user and tweet shapes (influencers, tweets), a token's attribute, a
// listing's status, and their RPC forms.

/**
 * The longest text each field takes, in characters (UTF-16 code units):
 * generous for what the field holds (a tweet of a paying account runs to
 * 25,000), so that no record can make every read of it megabytes long
 * (docs/limits.md, "Ingest and import records").
 */
export const TEXT_LIMITS = {
  id: 64,
  handle: 64,
  name: 256,
  location: 256,
  description: 1024,
  /** A token's or a collection's description (OpenSea metadata: Markdown, often several paragraphs). */
  metadataDescription: 10_000,
  source: 1024,
  tweet: 25_000,
  lang: 16,
  traitType: 256,
  traitValue: 1024,
  displayType: 64,
} as const;

/**
 * A token's OpenSea metadata beyond its attributes (docs/data.md,
 * "Metadata"), each "" when untold: the standard's own field names.
 */
export const tokenMetadata = {
  name: f.text(TEXT_LIMITS.name),
  description: f.text(TEXT_LIMITS.metadataDescription),
  image: f.mediaUri,
  animation_url: f.mediaUri,
  external_url: f.optionalUrl,
};
export const NO_TOKEN_METADATA = { name: "", description: "", image: "", animation_url: "", external_url: "" };

/** Attributes of one token at most. */
export const MAX_ATTRIBUTES = 1000;

export const socialUser = f.object({
  id: f.nonEmpty(TEXT_LIMITS.id),
  screenName: f.text(TEXT_LIMITS.handle),
  profileImageUrl: f.url,
  description: f.text(TEXT_LIMITS.description),
  name: f.text(TEXT_LIMITS.name),
  location: f.text(TEXT_LIMITS.location),
  followersCount: f.count,
  verified: f.bool,
  statusesCount: f.count,
  favouritesCount: f.count,
  protected: f.bool,
});

export const tweetFields = {
  id: f.nonEmpty(TEXT_LIMITS.id),
  user: f.nested(socialUser),
  source: f.text(TEXT_LIMITS.source),
  text: f.text(TEXT_LIMITS.tweet),
  retweetCount: f.count,
  favoriteCount: f.count,
  possiblySensitive: f.bool,
  lang: f.text(TEXT_LIMITS.lang),
  createdAt: f.twitterTime,
  date: f.isoMillis,
  originalId: f.text(TEXT_LIMITS.id),
  originalText: f.text(TEXT_LIMITS.tweet),
  originalTweet: f.bool,
  interaction: f.count,
};

interface TweetShape {
  retweetCount: number;
  favoriteCount: number;
  interaction: number;
}

export function interactionRule(t: TweetShape, problems: Problem[], path = ""): void {
  if (t.interaction !== t.retweetCount + t.favoriteCount) {
    problems.push({
      field: `${path}interaction`,
      reason: `must equal retweetCount + favoriteCount (${t.retweetCount + t.favoriteCount}), got ${t.interaction}`,
    });
  }
}

// A retweeted post is a tweet record itself (without contractAddress); it is
// stored as its JSON text.
export const retweet: f.Check<string | null> = (v) => {
  if (v === null) return null;
  const problems: Problem[] = [];
  const parsed = retweetRecord(v, problems);
  if (parsed) interactionRule(parsed, problems);
  if (problems.length > 0 || !parsed) throw new f.NestedProblems(problems);
  return JSON.stringify(v);
};
const retweetRecord = f.object({ ...tweetFields, retweetedStatus: (v: unknown) => retweet(v) });

export const traitValue = f.text(TEXT_LIMITS.traitValue);

export const attribute = f.object(
  {
    trait_type: f.text(TEXT_LIMITS.traitType),
    value: (v: unknown) => {
      if (typeof v === "string") return traitValue(v);
      if ((typeof v === "number" && Number.isFinite(v)) || typeof v === "boolean") return v;
      throw new f.FieldError(`must be a string, number or boolean, got ${f.show(v)}`);
    },
    display_type: f.text(TEXT_LIMITS.displayType),
  },
  { display_type: "" },
);

/**
 * A listing's or an offer's on-chain event (docs/chains.md, "Listings and
 * offers"): its block and the block's hash, 0 and "" for an order made
 * off-chain. Optional, so every file and caller without them is unchanged.
 */
export const onChainEvent = { block: f.count, blockHash: f.blockHash, removed: f.bool };
export const OFF_CHAIN = { block: 0, blockHash: "", removed: false };

/** A block hash names a block: one sent with block 0 is refused. */
export function hashNamesBlock(r: { block: number; blockHash: string }, problems: Problem[]): void {
  if (r.blockHash !== "" && r.block === 0) problems.push({ field: "block", reason: "a record with a blockHash names its block too" });
}

/**
 * An order's record sent again with `removed: true` takes back its records
 * of its block (docs/chains.md, "Orders taken back"): it names the block;
 * an off-chain record is no block's, and is corrected by the order's next record.
 */
export function removalNamesBlock(r: { block: number; removed: boolean }, problems: Problem[]): void {
  if (r.removed && r.block === 0) {
    problems.push({ field: "block", reason: "a removal names the block of the on-chain event it takes back (an off-chain record is replaced by the order's next record, not removed)" });
  }
}

/** A listing's or an offer's record: updated no earlier than created. */
export function updatedAfterCreated(r: { createdAt: number; lastUpdatedAt: number }, problems: Problem[]): void {
  if (r.lastUpdatedAt < r.createdAt) {
    problems.push({ field: "lastUpdatedAt", reason: `must not be before createdAt (${r.createdAt}), got ${r.lastUpdatedAt}` });
  }
}

/** A listing's or an offer's expiry: after its creation, or 0 for none. */
export function expiresAfterCreated(r: { createdAt: number; expiresAt: number }, problems: Problem[]): void {
  if (r.expiresAt !== 0 && r.expiresAt <= r.createdAt) {
    problems.push({ field: "expiresAt", reason: `must be after createdAt (${r.createdAt}), or 0 for no expiry, got ${r.expiresAt}` });
  }
}

/** A listing status of an RPC record as the API writes it ("CREATED"); unspecified or unknown stays a number, refused by the checker. */
export function statusOf(s: ListingStatus): string | number {
  return s === ListingStatus.UNSPECIFIED ? s : (ListingStatus[s] ?? s);
}

/** A social user of an RPC record as its JSON (absent: null, refused by the checker). */
export function userOf(u: SocialUser | undefined): Record<string, unknown> | null {
  return u === undefined
    ? null
    : {
        id: u.id,
        screenName: u.screenName,
        profileImageUrl: u.profileImageUrl,
        description: u.description,
        name: u.name,
        location: u.location,
        followersCount: int(u.followersCount),
        verified: u.verified,
        statusesCount: int(u.statusesCount),
        favouritesCount: int(u.favouritesCount),
        protected: u.protected,
      };
}

/** A tweet of an RPC record as its JSON, its retweet nested. */
export function tweetOf(t: Tweet): Record<string, unknown> {
  return {
    id: t.id,
    user: userOf(t.user),
    source: t.source,
    text: t.text,
    retweetCount: int(t.retweetCount),
    favoriteCount: int(t.favoriteCount),
    possiblySensitive: t.possiblySensitive,
    lang: t.lang,
    retweetedStatus: t.retweetedStatus === undefined ? null : tweetOf(t.retweetedStatus),
    createdAt: t.createdAt,
    date: t.date,
    originalId: t.originalId,
    originalText: t.originalText,
    originalTweet: t.originalTweet,
    interaction: int(t.interaction),
  };
}

/**
 * A record's currency as one of its chain's payment tokens, by symbol
 * (domain/currencies.ts): a contract or a symbol in another case is stored
 * as the token's symbol; one the chain has not is refused, and so, for an
 * order (`ethUnitOnly`), is one whose amounts are not wei of ETH, by name.
 */
export function paymentCurrency(r: { chain: Chain; currency: string }, problems: Problem[], ethUnitOnly = false): void {
  // One lookup per record (every sale's check): refusedCurrency builds its message only for a refusal.
  const token = paymentToken(r.chain, r.currency);
  const refused = refusedCurrency(r.chain, r.currency, token, ethUnitOnly);
  if (refused === undefined) r.currency = token!.symbol;
  else problems.push({ field: "currency", reason: refused });
}
