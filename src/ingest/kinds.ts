import { compareDecimal } from "../domain/formats.js";
import { type Kind, KINDS } from "../domain/kinds.js";
import * as f from "./fields.js";
import type { Problem } from "./fields.js";

// The importable kinds of decisions.md (domain/kinds.ts): each is the API's
// own JSON record (plus contractAddress where the API record lacks it),
// checked field by field, with the cross-field rules. The store writes the
// checked records (its RecordImport port).

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
  source: 1024,
  tweet: 25_000,
  lang: 16,
  traitType: 256,
  traitValue: 1024,
  displayType: 64,
} as const;

/** Attributes of one token at most. */
export const MAX_ATTRIBUTES = 1000;

const socialUser = f.object({
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

const tweetFields = {
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

function interactionRule(t: TweetShape, problems: Problem[], path = ""): void {
  if (t.interaction !== t.retweetCount + t.favoriteCount) {
    problems.push({
      field: `${path}interaction`,
      reason: `must equal retweetCount + favoriteCount (${t.retweetCount + t.favoriteCount}), got ${t.interaction}`,
    });
  }
}

// A retweeted post is a tweet record itself (without contractAddress); it is
// stored as its JSON text.
const retweet: f.Check<string | null> = (v) => {
  if (v === null) return null;
  const problems: Problem[] = [];
  const parsed = retweetRecord(v, problems);
  if (parsed) interactionRule(parsed, problems);
  if (problems.length > 0 || !parsed) throw new f.NestedProblems(problems);
  return JSON.stringify(v);
};
const retweetRecord = f.object({ ...tweetFields, retweetedStatus: (v: unknown) => retweet(v) });

const traitValue = f.text(TEXT_LIMITS.traitValue);

const attribute = f.object(
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

const SHAPES = {
  collections: f.object({ contractAddress: f.address, name: f.text(TEXT_LIMITS.name) }),
  tokens: f.object(
    {
      contractAddress: f.address,
      assetId: f.uint256,
      currentOwner: f.ownerAddress,
      attributes: f.arrayOf(attribute, MAX_ATTRIBUTES),
    },
    { currentOwner: "" },
  ),
  appraisals: f.object({
    contractAddress: f.address,
    assetId: f.uint256,
    fairMarketValue: f.uint256,
    confidence: f.confidence,
    currency: f.currency,
  }),
  rarity: f.object({
    contractAddress: f.address,
    assetId: f.uint256,
    currentOwner: f.ownerAddress,
    rarityScore: f.finite,
    statisticalRarity: f.finite,
    rarityRank: f.positiveInt,
  }),
  sales: f.object({
    hash: f.txHash,
    from: f.address,
    to: f.address,
    contractAddress: f.address,
    assetId: f.uint256,
    timestamp: f.epochSeconds,
    block: f.count,
    price: f.uint256,
    amountReceived: f.uint256,
    currency: f.currency,
    marketplace: f.marketplace,
  }),
  listings: f.object({
    marketplaceId: f.marketplaceId,
    marketplace: f.marketplace,
    contractAddress: f.address,
    assetId: f.uint256,
    createdAt: f.epochSeconds,
    lastUpdatedAt: f.epochSeconds,
    price: f.uint256,
    currency: f.currency,
    status: f.listingStatus,
  }),
  transfers: f.object({
    hash: f.txHash,
    logIndex: f.count,
    from: f.address,
    to: f.address,
    contractAddress: f.address,
    assetId: f.uint256,
    timestamp: f.epochSeconds,
    block: f.count,
  }),
  offers: f.object(
    {
      marketplaceId: f.marketplaceId,
      marketplace: f.marketplace,
      contractAddress: f.address,
      assetId: (v: unknown) => (v === "" ? "" : f.uint256(v)),
      traitType: f.text(TEXT_LIMITS.traitType),
      traitValue,
      maker: f.address,
      price: f.uint256,
      currency: f.currency,
      createdAt: f.epochSeconds,
      lastUpdatedAt: f.epochSeconds,
      expiresAt: f.count,
      status: f.listingStatus,
    },
    { assetId: "", traitType: "", traitValue: "", expiresAt: 0 },
  ),
  influencers: f.object({ contractAddress: f.address, user: f.nested(socialUser), score: f.finite }),
  tweets: f.object({ contractAddress: f.address, ...tweetFields, retweetedStatus: retweet }),
  scores: f.object({
    name: f.text(TEXT_LIMITS.name),
    contractAddress: f.address,
    hype: f.finite,
    gains: f.finite,
    community: f.finite,
    total: f.finite,
  }),
};

export { type Kind, KINDS };
// Every kind has a shape, and nothing else does.
SHAPES satisfies { [K in Kind]: unknown };

type RecordOf<K extends Kind> = NonNullable<ReturnType<(typeof SHAPES)[K]>>;



/** What the checks of a batch or a file are held to beyond the records themselves. */
export interface CheckContext {
  /** The latest sale or listing time taken (unix seconds): the clock plus the allowed skew (formats.ts latestTimeAllowed). */
  latestTime: number;
}

/** A time past the latest taken: a sale or listing dated in the future (a clock off, a unit mix-up). */
function notAhead(field: string, time: number, ctx: CheckContext, problems: Problem[]): void {
  if (time > ctx.latestTime) {
    problems.push({
      field,
      reason: `must not be later than this server's clock allows (${ctx.latestTime}: now plus the allowed clock skew, --max-clock-skew), got ${time}`,
    });
  }
}

/** Rules across fields, after every field passed. */
const RULES: { [K in Kind]?: (r: RecordOf<K>, problems: Problem[], ctx: CheckContext) => void } = {
  sales: (r, problems, ctx) => {
    if (compareDecimal(r.amountReceived, r.price) > 0) {
      problems.push({ field: "amountReceived", reason: `must not exceed price (${r.price}), got ${r.amountReceived}` });
    }
    notAhead("timestamp", r.timestamp, ctx, problems);
  },
  listings: (r, problems, ctx) => {
    if (r.lastUpdatedAt < r.createdAt) {
      problems.push({ field: "lastUpdatedAt", reason: `must not be before createdAt (${r.createdAt}), got ${r.lastUpdatedAt}` });
    }
    notAhead("createdAt", r.createdAt, ctx, problems);
    notAhead("lastUpdatedAt", r.lastUpdatedAt, ctx, problems);
  },
  transfers: (r, problems, ctx) => notAhead("timestamp", r.timestamp, ctx, problems),
  offers: (r, problems, ctx) => {
    if (r.lastUpdatedAt < r.createdAt) {
      problems.push({ field: "lastUpdatedAt", reason: `must not be before createdAt (${r.createdAt}), got ${r.lastUpdatedAt}` });
    }
    if (r.expiresAt !== 0 && r.expiresAt <= r.createdAt) {
      problems.push({ field: "expiresAt", reason: `must be after createdAt (${r.createdAt}), or 0 for no expiry, got ${r.expiresAt}` });
    }
    // A token offer names an asset, a trait offer a trait (type and value), a collection offer neither.
    if ((r.traitType === "") !== (r.traitValue === "")) {
      problems.push({ field: r.traitType === "" ? "traitType" : "traitValue", reason: "a trait offer names both traitType and traitValue" });
    }
    if (r.assetId !== "" && r.traitType !== "") problems.push({ field: "assetId", reason: "an offer is for one token (assetId) or for a trait (traitType, traitValue), not both" });
    notAhead("createdAt", r.createdAt, ctx, problems);
    notAhead("lastUpdatedAt", r.lastUpdatedAt, ctx, problems);
  },
  tweets: (r, problems) => interactionRule(r, problems),
};

export interface KindHandler {
  /** The checked record, or undefined with `problems` filled in. */
  check(value: unknown, problems: Problem[]): unknown;
}

export function handlerFor<K extends Kind>(kind: K, ctx: CheckContext): KindHandler {
  const shape = SHAPES[kind] as (v: unknown, p: Problem[]) => RecordOf<K> | undefined;
  const rule = RULES[kind] as ((r: RecordOf<K>, p: Problem[], ctx: CheckContext) => void) | undefined;
  return {
    check(value, problems) {
      // Before any check looks inside: a value nested this deep is no record (and no check may recurse into it).
      const deep = f.tooDeep(value);
      if (deep !== undefined) {
        problems.push({ field: deep, reason: f.TOO_DEEP });
        return undefined;
      }
      const record = shape(value, problems);
      if (record === undefined) return undefined;
      rule?.(record, problems, ctx);
      return problems.length > 0 ? undefined : record;
    },
  };
}

export { isKind } from "../domain/kinds.js";
