import type { Kind } from "../domain/kinds/index.js";
import type { SocialUserRow } from "../domain/rows.js";
import { cumulative, Random, zipfCumulative } from "./random.js";

// A deterministic, realistic market: collections with skewed trait
// frequencies, a random-walk floor per collection, sales priced by floor
// times trait premiums on six marketplaces (fees taken from amountReceived,
// sweeps of several tokens in one transaction), listings in all four states,
// and the social side (users, influencer scores, tweets, collection scores).
// Everything is derived from the seed and the instant the market ends (the
// build's clock by default, so a store built today shows today's market);
// nothing else is read from the clock.

export type Scale = "small" | "default" | "large";

interface ScalePlan {
  /** Token count and sales count per collection. */
  collections: { tokens: number; sales: number }[];
  users: number;
  tweetsPerCollection: number;
  influencersPerCollection: number;
}

export const SCALES: Record<Scale, ScalePlan> = {
  small: {
    collections: [
      { tokens: 1200, sales: 4000 },
      { tokens: 500, sales: 1500 },
      { tokens: 200, sales: 500 },
    ],
    users: 60,
    tweetsPerCollection: 30,
    influencersPerCollection: 15,
  },
  default: {
    collections: [
      { tokens: 10_000, sales: 90_000 },
      { tokens: 5_000, sales: 50_000 },
      { tokens: 3_333, sales: 33_000 },
      { tokens: 1_000, sales: 16_000 },
      { tokens: 777, sales: 12_000 },
    ],
    users: 400,
    tweetsPerCollection: 150,
    influencersPerCollection: 40,
  },
  large: {
    collections: [
      { tokens: 10_000, sales: 400_000 },
      { tokens: 10_000, sales: 250_000 },
      { tokens: 8_888, sales: 200_000 },
      { tokens: 5_000, sales: 100_000 },
      { tokens: 3_000, sales: 50_000 },
    ],
    users: 1000,
    tweetsPerCollection: 400,
    influencersPerCollection: 50,
  },
};

/**
 * The end the documentation's answers were taken at (2026-11-01T00:00:00Z):
 * `marketdata demo --end 1793491200` builds the store the pages show.
 */
export const DOCS_DEMO_END = 1_793_491_200;
/** The market spans two years before its end. */
const SPAN = 730 * 86_400;
/** Block FIRST_BLOCK is mined at BLOCK_ORIGIN, one block every 12 s: a later end has later blocks. */
const BLOCK_ORIGIN = DOCS_DEMO_END - SPAN;
const FIRST_BLOCK = 16_000_000;
const blockAt = (t: number) => FIRST_BLOCK + Math.floor((t - BLOCK_ORIGIN) / 12);
/** The share of each collection's sales (at least LIVE_MIN) made in its last day, so every window shows a market on the day it is built. */
const LIVE_SHARE = 0.01;
const LIVE_MIN = 4;

/** The market's first and last instants (unix seconds). */
interface Span {
  start: number;
  end: number;
}
const WEI_PER_MICRO_ETH = 10n ** 12n;

const NAMES = ["Lunar Apes", "Pixel Owls", "Cyber Koi", "Meta Moths", "Quantum Cats", "Neon Foxes", "Astro Frogs"];

const TRAITS: { type: string; presence: number; values: string[] }[] = [
  { type: "Background", presence: 1, values: ["Blue", "Orange", "Aquamarine", "Yellow", "Gray", "Purple", "Army Green", "New Punk Blue", "Gold"] },
  { type: "Fur", presence: 1, values: ["Brown", "Gray", "Dark Brown", "Black", "Golden Brown", "Cream", "Tan", "Red", "Pink", "White", "Blue", "Zombie", "Robot", "Trippy", "Solid Gold"] },
  { type: "Eyes", presence: 1, values: ["Bored", "Sleepy", "Robot", "Coins", "Blindfold", "Sad", "Angry", "Hypnotized", "3d", "Laser Eyes", "Heart", "Crazy", "Blue Beams", "Cyborg"] },
  { type: "Mouth", presence: 1, values: ["Bored", "Grin", "Phoneme Vuh", "Bored Cigarette", "Jovial", "Rage", "Dumbfounded", "Bored Pipe", "Discomfort", "Small Grin", "Gold Grill", "Diamond Grill"] },
  { type: "Hat", presence: 0.78, values: ["Fez", "Beanie", "Sea Captain's Hat", "Bayc Flipped Brim", "Army Hat", "Cowboy Hat", "Halo", "Party Hat", "Bunny Ears", "Laurel Wreath", "King's Crown", "Trippy Captain's Hat"] },
  { type: "Clothes", presence: 0.82, values: ["Striped Tee", "Bone Necklace", "Vietnam Jacket", "Sailor Shirt", "Leather Jacket", "Hawaiian", "Tuxedo Tee", "Space Suit", "Kings Robe", "Black Suit", "Admirals Coat"] },
  { type: "Earring", presence: 0.3, values: ["Silver Hoop", "Gold Stud", "Silver Stud", "Gold Hoop", "Diamond Stud", "Cross"] },
];

const MARKETPLACES = ["OPENSEA", "BLUR", "LOOKSRARE", "X2Y2", "SUDOSWAP", "OTHER"] as const;
const MARKET_WEIGHTS = cumulative([0.42, 0.36, 0.07, 0.05, 0.06, 0.04]);
/** Marketplace fee plus creator royalty, per mille, taken from the seller. */
const FEES: Record<(typeof MARKETPLACES)[number], bigint> = {
  OPENSEA: 75n,
  BLUR: 5n,
  LOOKSRARE: 70n,
  X2Y2: 5n,
  SUDOSWAP: 5n,
  OTHER: 10n,
};
/** Of FEES, the marketplace's own share, per mille (the rest is the creator's royalty). */
const MARKETPLACE_FEES: Record<(typeof MARKETPLACES)[number], bigint> = {
  OPENSEA: 25n,
  BLUR: 0n,
  LOOKSRARE: 20n,
  X2Y2: 5n,
  SUDOSWAP: 5n,
  OTHER: 10n,
};

/**
 * The token a demo sale is paid in (docs/money.md), from what its sale
 * already drew (no draw of its own, so the market's other records are
 * those of a build before tokens were told apart): Blur's in its pool ETH,
 * a sale whose hash ends in 0 (an accepted offer, as a sixteenth of sales
 * are) in WETH, the rest in ETH.
 */
function paidIn(marketplace: string, hash: string): string {
  return marketplace === "BLUR" ? "BLUR_POOL" : hash.endsWith("0") ? "WETH" : "ETH";
}

/** An offer's payment token: a bid is made from a wrapped balance a marketplace can draw on, Blur's pool on Blur, WETH elsewhere. */
function bidIn(marketplace: string): string {
  return marketplace === "BLUR" ? "BLUR_POOL" : "WETH";
}

/**
 * The kinds the demo makes records of, in the order it imports them (appraisals and rarity are derived; a kind declared later has none):
 * the price points before the sales they price, which then add their dollars as they are written rather than each point moving an
 * hour of them (docs/money.md, "USD kept with the series").
 */
export const DEMO_KINDS = ["collections", "tokens", "prices", "sales", "listings", "transfers", "offers", "influencers", "tweets", "scores"] as const satisfies readonly Kind[];
export type DemoKind = (typeof DEMO_KINDS)[number];
export type DemoRecords = Record<DemoKind, object[]>;

interface Token {
  assetId: string;
  attributes: { trait_type: string; value: string }[];
  /** ln of the token's price premium over the floor. */
  premium: number;
  owner: string;
  /** When it last changed hands (its last sale), if it did. */
  moved?: number;
}

/** The demo's records, ending at `end` (unix seconds; the clock by default). */
export function generateDemo(seed: number, scale: Scale, end: number = Math.floor(Date.now() / 1000)): DemoRecords {
  const span: Span = { start: end - SPAN, end };
  const rnd = new Random(seed);
  const plan = SCALES[scale];
  const out = Object.fromEntries(DEMO_KINDS.map((k) => [k, []])) as unknown as DemoRecords;
  const wallets = Array.from({ length: 5000 }, () => `0x${rnd.hex(40)}`);
  const users = Array.from({ length: plan.users }, (_, i) => socialUser(rnd, i));
  const listingIds = new Set<string>();

  plan.collections.forEach((size, c) => {
    const address = `0x${rnd.hex(40)}`;
    const name = NAMES[c % NAMES.length]!;
    out.collections.push({ contractAddress: address, name });

    const tokens = makeTokens(rnd, size.tokens, wallets);
    const minted = tokens.map((t) => t.owner);
    const floor = floorWalk(rnd, 0.5 + rnd.next() * 12, span);
    const hot = zipfCumulative(tokens.length, 0.6);
    const order = tokens.map((_, i) => i);
    shuffle(rnd, order);

    // Sale events, oldest first; some are sweeps of several tokens in one transaction.
    const times = Array.from({ length: size.sales }, () => span.start + Math.floor(rnd.next() * SPAN)).sort((a, b) => a - b);
    // The last day's sales draw from a stream of their own (one token each),
    // so the market's other records are those of any end.
    const live = new Random(seed * 7_919 + c + 1);
    const liveTimes = Array.from({ length: Math.max(LIVE_MIN, Math.round(size.sales * LIVE_SHARE)) }, () => end - 1 - Math.floor(live.next() * 86_000)).sort((a, b) => a - b);
    const sell = (r: Random, t: number, count: number) => {
      const hash = `0x${r.hex(64)}`;
      const buyer = r.pick(wallets);
      const marketplace = MARKETPLACES[r.weighted(MARKET_WEIGHTS)]!;
      const picked = new Set<number>();
      for (let k = 0; k < count; k++) {
        let idx = order[r.weighted(hot)]!;
        while (picked.has(idx)) idx = (idx + 1) % tokens.length;
        picked.add(idx);
        const token = tokens[idx]!;
        // Rarer tokens trade thinner, so further from their value either way (CryptoPunks: 9% median error on the floor, 30% on the top 5%).
        const eth = floor(t) * Math.exp(token.premium + r.normal(0, 0.08 + 0.3 * token.premium));
        const price = BigInt(Math.max(1, Math.round(eth * 1e6))) * WEI_PER_MICRO_ETH;
        const received = (price * (1000n - FEES[marketplace])) / 1000n;
        const fee = (price * MARKETPLACE_FEES[marketplace]) / 1000n;
        out.sales.push({
          hash,
          from: token.owner,
          to: buyer,
          contractAddress: address,
          assetId: token.assetId,
          timestamp: t,
          block: blockAt(t),
          price: price.toString(),
          amountReceived: received.toString(),
          currency: paidIn(marketplace, hash),
          marketplace,
          marketplaceFee: fee.toString(),
          royaltyFee: (price - received - fee).toString(),
        });
        token.owner = buyer;
        token.moved = t;
      }
    };
    let i = 0;
    let j = 0;
    while (i < times.length || j < liveTimes.length) {
      if (j < liveTimes.length && (i === times.length || liveTimes[j]! < times[i]!)) {
        sell(live, liveTimes[j++]!, 1);
        continue;
      }
      const t = times[i]!;
      const sweep = Math.min(rnd.chance(0.04) ? rnd.int(2, 5) : 1, times.length - i);
      sell(rnd, t, sweep);
      i += sweep;
    }

    // Issue 34's market: tokens minted and moved between wallets, and bids.
    // Drawn from a stream of their own, so a seed's sales and listings stay
    // as they were.
    const more = new Random(seed * 1_000_003 + c + 1);
    out.transfers.push(...transfers(more, address, tokens, minted, wallets, span));
    out.offers.push(...offers(more, address, tokens, floor, wallets, end));

    for (const token of tokens) {
      out.tokens.push({ contractAddress: address, assetId: token.assetId, currentOwner: token.owner, attributes: token.attributes });
    }

    const listings = Math.round(size.tokens * 1.5);
    const made = out.listings.length;
    for (let l = 0; l < listings; l++) out.listings.push(listing(rnd, address, tokens, floor, listingIds, span));
    // A listing lapses after 30 days, as marketplaces' default expiries do:
    // an open one older than that ends EXPIRED, so the floor is today's
    // asks, near recent sales (it had been a two-year-old listing).
    for (const l of out.listings.slice(made) as { createdAt: number; lastUpdatedAt: number; status: string }[]) {
      if (l.status === "CREATED" && l.createdAt + LISTING_LIFE < end) {
        l.status = "EXPIRED";
        l.lastUpdatedAt = l.createdAt + LISTING_LIFE;
      }
    }

    const influencerPool = [...users];
    shuffle(rnd, influencerPool);
    influencerPool.slice(0, Math.min(plan.influencersPerCollection, users.length)).forEach((user) => {
      const score = Math.round(Math.min(100, Math.log10(1 + user.followersCount) * 14 + rnd.normal(0, 6)) * 100) / 100;
      out.influencers.push({ contractAddress: address, user, score: Math.max(0, score) });
    });

    for (let k = 0; k < plan.tweetsPerCollection; k++) out.tweets.push(tweet(rnd, address, name, rnd.pick(users), span));

    const hype = round2(20 + rnd.next() * 80);
    const gains = round2(rnd.normal(0, 25));
    const community = round2(30 + rnd.next() * 70);
    out.scores.push({ name, contractAddress: address, hype, gains, community, total: round2((hype + gains + community) / 3) });
  });
  out.prices.push(...ethPrices(seed, span));
  return out;
}

/**
 * ETH's USD price each hour of the market (docs/money.md: the points its
 * sales in ETH, WETH and Blur's pool ETH are priced by), a random walk from
 * a stream of its own, so the market's other records are those of a build
 * without them.
 */
function ethPrices(seed: number, { start, end }: Span): object[] {
  const rnd = new Random(seed * 104_729 + 53);
  const points: object[] = [];
  let usd = 2_000 + rnd.next() * 2_000;
  for (let minute = Math.ceil(start / 3_600) * 3_600; minute <= end; minute += 3_600) {
    usd *= Math.exp(rnd.normal(0, 0.006));
    points.push({ currency: "ETH", minute, usd: usd.toFixed(2) });
  }
  return points;
}

/** How long a demo listing stays open unless it ends before. */
const LISTING_LIFE = 30 * 86_400;
const ZERO_ADDRESS = `0x${"0".repeat(40)}`;

/**
 * Each token minted to its first owner from the zero address a day before
 * the market opened (200 a block), and one in twenty handed to another
 * wallet in the last 60 days, after its last sale: it changes owner, and
 * its listings made before end (decisions.md, "Fillable listings").
 */
function transfers(rnd: Random, address: string, tokens: Token[], minted: string[], wallets: string[], { start, end }: Span): object[] {
  const out: object[] = [];
  const mintTime = start - 86_400;
  tokens.forEach((token, i) => {
    out.push({
      hash: `0x${rnd.hex(64)}`, logIndex: i % 200, from: ZERO_ADDRESS, to: minted[i], contractAddress: address, assetId: token.assetId,
      timestamp: mintTime, block: blockAt(start) - 7_200 + Math.floor(i / 200),
    });
  });
  for (const token of tokens) {
    if (!rnd.chance(0.05)) continue;
    const from = Math.max(token.moved ?? 0, end - 60 * 86_400);
    const t = from + 1 + Math.floor(rnd.next() * (end - from - 1));
    const to = rnd.pick(wallets);
    out.push({
      hash: `0x${rnd.hex(64)}`, logIndex: rnd.int(0, 300), from: token.owner, to, contractAddress: address, assetId: token.assetId,
      timestamp: t, block: blockAt(t),
    });
    token.owner = to;
    token.moved = t;
  }
  return out;
}

/**
 * Bids of the last 30 days: collection-wide offers under the floor, trait offers on a few tokens' traits, token offers under a
 * token's value. Most stand (no expiry: the demo's answers do not move
 * with the clock); some were cancelled, some expired before the demo ends.
 */
function offers(rnd: Random, address: string, tokens: Token[], floor: (t: number) => number, wallets: string[], end: number): object[] {
  const out: object[] = [];
  const used = new Set<string>();
  const offer = (scope: object, eth: number, t: number) => {
    const marketplace = MARKETPLACES[rnd.weighted(MARKET_WEIGHTS)]!;
    let id: string;
    do id = rnd.digits(rnd.int(6, 12));
    while (used.has(`${marketplace}:${id}`));
    used.add(`${marketplace}:${id}`);
    const r = rnd.next();
    const expired = r < 0.15;
    out.push({
      marketplaceId: id, marketplace, contractAddress: address, ...scope, maker: rnd.pick(wallets),
      price: (BigInt(Math.max(1, Math.round(eth * 1e6))) * WEI_PER_MICRO_ETH).toString(), currency: bidIn(marketplace),
      createdAt: t, lastUpdatedAt: r >= 0.15 && r < 0.25 ? Math.min(end, t + rnd.int(60, 86_400)) : t,
      expiresAt: expired ? Math.min(end, t + rnd.int(3_600, 7 * 86_400)) : 0,
      status: r >= 0.15 && r < 0.25 ? "CANCELLED" : "CREATED",
    });
  };
  const recent = () => end - 30 * 86_400 + Math.floor(rnd.next() * 30 * 86_400);
  for (let k = 0; k < 20; k++) {
    const t = recent();
    // Under the market's asks: its cheapest listings sit at three quarters of the walk's level or so.
    offer({}, floor(t) * (0.55 + rnd.next() * 0.2), t);
  }
  for (let k = 0; k < 12; k++) {
    const token = rnd.pick(tokens);
    const a = rnd.pick(token.attributes);
    const t = recent();
    offer({ traitType: a.trait_type, traitValue: a.value }, floor(t) * Math.exp(token.premium) * (0.7 + rnd.next() * 0.2), t);
  }
  for (let k = 0; k < 30; k++) {
    const token = rnd.pick(tokens);
    const t = recent();
    offer({ assetId: token.assetId }, floor(t) * Math.exp(token.premium) * (0.7 + rnd.next() * 0.25), t);
  }
  return out;
}

function makeTokens(rnd: Random, count: number, wallets: string[]): Token[] {
  const traitPlan = TRAITS.map((t) => {
    const weights = zipfCumulative(t.values.length, 1.1);
    // Rarer values command higher premiums.
    const total = weights[weights.length - 1]!;
    const premiums = t.values.map((_, k) => 0.35 * Math.log(total / (1 / (k + 1) ** 1.1) / t.values.length) + rnd.normal(0, 0.05));
    const order = t.values.map((_, k) => k);
    shuffle(rnd, order);
    return { ...t, weights, premiums, order };
  });
  const tokens: Token[] = [];
  for (let id = 0; id < count; id++) {
    const attributes: Token["attributes"] = [];
    let premium = 0;
    for (const t of traitPlan) {
      if (!rnd.chance(t.presence)) continue;
      const rank = rnd.weighted(t.weights);
      attributes.push({ trait_type: t.type, value: t.values[t.order[rank]!]! });
      premium += Math.max(0, t.premiums[rank]!);
    }
    tokens.push({ assetId: String(id), attributes, premium: premium * 0.5, owner: rnd.pick(wallets) });
  }
  return tokens;
}

/** Daily geometric random walk of the floor price in ETH, as a function of time. */
function floorWalk(rnd: Random, level: number, { start }: Span): (t: number) => number {
  const days = Math.ceil(SPAN / 86_400) + 1;
  const drift = rnd.normal(0, 0.002);
  const levels = [level];
  for (let d = 1; d < days; d++) levels.push(levels[d - 1]! * Math.exp(drift + rnd.normal(0, 0.035)));
  return (t) => levels[Math.min(days - 1, Math.max(0, Math.floor((t - start) / 86_400)))]!;
}

/**
 * One listing. `used` holds the ids drawn so far (`marketplace:id`): a
 * marketplace's listing id names one listing of one collection, and the
 * store refuses a record that would move it to another (decisions.md).
 */
function listing(rnd: Random, address: string, tokens: Token[], floor: (t: number) => number, used: Set<string>, { start, end }: Span): object {
  const token = rnd.pick(tokens);
  const marketplace = MARKETPLACES[rnd.weighted(MARKET_WEIGHTS)]!;
  const createdAt = start + Math.floor(rnd.next() * SPAN);
  const age = end - createdAt;
  const r = rnd.next();
  // Old listings have mostly ended; recent ones are mostly still open.
  const status = age < 14 * 86_400 && r < 0.7 ? "CREATED" : r < 0.25 ? "FULFILLED" : r < 0.65 ? "CANCELLED" : r < 0.9 ? "EXPIRED" : "CREATED";
  const lastUpdatedAt = status === "CREATED" ? createdAt : Math.min(end, createdAt + rnd.int(60, 30 * 86_400));
  const eth = floor(createdAt) * Math.exp(token.premium) * (1.02 + rnd.next() * 0.6);
  let marketplaceId: string;
  do {
    marketplaceId = marketplace === "OPENSEA" || marketplace === "SUDOSWAP" ? `0x${rnd.hex(64)}` : rnd.digits(rnd.int(6, 12));
  } while (used.has(`${marketplace}:${marketplaceId}`));
  used.add(`${marketplace}:${marketplaceId}`);
  return {
    marketplaceId,
    marketplace,
    contractAddress: address,
    assetId: token.assetId,
    createdAt,
    lastUpdatedAt,
    price: (BigInt(Math.max(1, Math.round(eth * 1e6))) * WEI_PER_MICRO_ETH).toString(),
    currency: "ETH",
    status,
  };
}

const FIRST = ["Ada", "Ben", "Chloe", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lea", "Max", "Nia", "Oto", "Pia"];
const LAST = ["Stone", "Rivers", "Nakamura", "Okafor", "Silva", "Larsen", "Moreau", "Kowalski", "Haddad", "Chen"];
const PLACES = ["", "", "Lisbon", "Berlin", "NYC", "Seoul", "metaverse", "Lagos", "Toronto", "São Paulo"];
const BIOS = ["", "collector. not financial advice.", "building onchain", "apes together strong", "floor sweeper", "artist + degen"];

type User = SocialUserRow;

function socialUser(rnd: Random, i: number): User {
  const first = rnd.pick(FIRST);
  const last = rnd.pick(LAST);
  const id = rnd.digits(rnd.int(9, 19));
  const followers = Math.round(Math.exp(rnd.normal(7, 2)));
  return {
    id,
    screenName: `${first.toLowerCase()}${last.toLowerCase()}${i}`,
    profileImageUrl: `https://pbs.twimg.com/profile_images/${id}/avatar_normal.jpg`,
    description: rnd.pick(BIOS),
    name: `${first} ${last}`,
    location: rnd.pick(PLACES),
    followersCount: followers,
    verified: followers > 50_000 && rnd.chance(0.5),
    statusesCount: Math.round(Math.exp(rnd.normal(8, 1.2))),
    favouritesCount: Math.round(Math.exp(rnd.normal(8.5, 1.3))),
    protected: rnd.chance(0.02),
  };
}

const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const TEMPLATES = [
  "gm {name} fam, floor looking strong today",
  "just swept three {name} off the floor. still early.",
  "the {name} roadmap thread everyone asked for. a long read about utility, art and what comes next for holders",
  "{name} trait rarity is so underpriced right now",
  "who else is holding {name} through the dip?",
  "new {name} pfp, what do you think",
];
const SOURCES = [
  '<a href="https://mobile.twitter.com" rel="nofollow">Twitter Web App</a>',
  '<a href="http://twitter.com/download/iphone" rel="nofollow">Twitter for iPhone</a>',
  '<a href="http://twitter.com/download/android" rel="nofollow">Twitter for Android</a>',
];

function tweet(rnd: Random, address: string, name: string, user: User, { start }: Span): object {
  const t = start + Math.floor(rnd.next() * SPAN);
  const d = new Date(t * 1000);
  const pad = (n: number) => String(n).padStart(2, "0");
  const createdAt = `${DAYS[d.getUTCDay()]} ${MONTHS[d.getUTCMonth()]} ${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} +0000 ${d.getUTCFullYear()}`;
  const id = `1${rnd.digits(18)}`;
  const full = rnd.pick(TEMPLATES).replaceAll("{name}", name);
  const text = full.length > 80 ? `${full.slice(0, 79)}… https://t.co/${rnd.hex(10)}` : full;
  const retweetCount = Math.round(Math.exp(rnd.normal(2.5, 1.5)));
  const favoriteCount = Math.round(Math.exp(rnd.normal(4, 1.5)));
  return {
    contractAddress: address,
    id,
    user,
    source: rnd.pick(SOURCES),
    text,
    retweetCount,
    favoriteCount,
    possiblySensitive: rnd.chance(0.02),
    lang: rnd.chance(0.9) ? "en" : rnd.pick(["es", "pt", "ja", "ko", "fr"]),
    retweetedStatus: null,
    createdAt,
    date: `${d.toISOString().slice(0, 23)}+00:00`,
    originalId: id,
    originalText: full,
    originalTweet: true,
    interaction: retweetCount + favoriteCount,
  };
}

function shuffle<T>(rnd: Random, a: T[]): void {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rnd.next() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}
