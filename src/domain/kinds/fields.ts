import { LISTING_STATUSES, type ListingStatusName } from "../rows.js";
import { isAddress, isTxHash, isUint256, MARKETPLACE_RE, MAX_EPOCH_SECONDS } from "../formats.js";
import { deepFieldOfText } from "../json-depth.js";
import { WASH_RULES } from "../wash.js";
import { type Chain, DEFAULT_CHAIN, isChain, unknownChain } from "../chains.js";

// Field checkers for imported records: each returns the stored form of a
// value or throws FieldError with the reason. Record checkers collect every
// field's error, so one pass reports everything wrong with a line.

/**
 * A field's reason for refusal. Not an Error: it is always caught by the
 * record's check, and an Error's stack capture on every throw held the event
 * loop for a batch of records each wrong in every field.
 */
export class FieldError {
  constructor(readonly message: string) {}
}

export type Check<T> = (value: unknown) => T;

// Bounds of one record's check, whatever it holds (docs/limits.md, "Ingest
// and import records"): a record's answer is a few short problems however
// large or broken the record, and the work to find them stops there.

/** Problems reported per record at most; checking a record stops once it has this many. */
export const MAX_PROBLEMS = 5;
/** A value (of a record's field) nested deeper than this is refused before anything looks inside it. */
export const MAX_DEPTH = 8;
/** Characters of a value quoted in a problem. */
const QUOTE_CHARS = 80;

/**
 * A short JSON rendering of `v` for a problem: at most QUOTE_CHARS
 * characters, however large or deep `v` is (never a whole stringify).
 */
export function show(v: unknown): string {
  const budget = { left: QUOTE_CHARS };
  const out = preview(v, budget, 0);
  return budget.left < 0 ? `${out.slice(0, QUOTE_CHARS)}...` : out;
}

function preview(v: unknown, budget: { left: number }, depth: number): string {
  if (budget.left < 0) return "";
  let out: string;
  if (typeof v === "string") out = JSON.stringify(v.length > QUOTE_CHARS ? v.slice(0, QUOTE_CHARS + 1) : v);
  else if (typeof v !== "object" || v === null) out = String(JSON.stringify(v) ?? v);
  else if (depth >= 4) out = Array.isArray(v) ? "[...]" : "{...}";
  else {
    const parts: string[] = [];
    const open = Array.isArray(v) ? "[" : "{";
    budget.left -= 2;
    for (const [k, x] of Array.isArray(v) ? v.entries() : Object.entries(v)) {
      if (budget.left < 0) break;
      const item = Array.isArray(v) ? preview(x, budget, depth + 1) : `${JSON.stringify(String(k).slice(0, QUOTE_CHARS + 1))}:${preview(x, budget, depth + 1)}`;
      parts.push(item);
    }
    return `${open}${parts.join(",")}${open === "[" ? "]" : "}"}`;
  }
  budget.left -= out.length;
  return out;
}

/** Why a line or body that is not UTF-8 text is refused (a decoder would store U+FFFD). */
export const NOT_UTF8 = "is not valid UTF-8 text (a decoder would store U+FFFD in its place)";

/** Why a line is not a record: JSON.parse's words, cut short (they quote the input). */
export function notJson(err: Error): string {
  const m = err.message.length > 200 ? `${err.message.slice(0, 200)}...` : err.message;
  return `is not valid JSON (${m})`;
}

function fail(reason: string): never {
  throw new FieldError(reason);
}

/**
 * Text of at most `max` characters (UTF-16 code units), well-formed: a lone
 * surrogate (a JSON escape like "\ud800") would be stored as U+FFFD.
 */
export function text(max: number): Check<string> {
  return (v) => {
    if (typeof v !== "string") fail(`must be a string, got ${show(v)}`);
    if (v.length > max) fail(`must be at most ${max} characters, got ${v.length}`);
    if (!v.isWellFormed()) fail("must be valid Unicode text (it holds a lone surrogate, such as an escaped \\ud800 alone)");
    return v;
  };
}

/** Text that is not empty. */
export function nonEmpty(max: number): Check<string> {
  const check = text(max);
  return (v) => (check(v) !== "" ? (v as string) : fail("must not be empty"));
}

export const address: Check<string> = (v) =>
  typeof v === "string" && isAddress(v) ? v.toLowerCase() : fail(`must be 0x followed by 40 hex characters, got ${show(v)}`);

/** A chain's name (chains.ts); "" (a protobuf message naming none) is the default chain. */
export const chain: Check<Chain> = (v) =>
  v === "" ? DEFAULT_CHAIN : typeof v === "string" && isChain(v) ? v : fail(unknownChain(typeof v === "string" ? v : show(v)));

/** An address, or "" when unknown. */
export const ownerAddress: Check<string> = (v) => (v === "" ? "" : address(v));

/** A block's hash (lower case), or "" when the indexer sent none. */
export const blockHash: Check<string> = (v) =>
  v === "" ? "" : typeof v === "string" && isTxHash(v) ? v.toLowerCase() : fail(`must be 0x followed by 64 hex characters, or "" for none, got ${show(v)}`);

/**
 * A record's finality as the reads answer it ("final", "pending", or ""):
 * taken, so that an answer is a line that can be imported again, and
 * dropped, since the chain's finalized block decides it (docs/chains.md).
 */
export const answeredFinality: Check<undefined> = (v) =>
  v === "" || v === "final" || v === "pending" ? undefined : fail(`is answered by the store ("final" or "pending", from its chain's finality), got ${show(v)}`);

/** washFlags as a sale answers it (rule names): accepted and dropped, as the store evaluates them (docs/wash-trades.md). */
export const answeredWashFlags: Check<undefined> = (v) =>
  Array.isArray(v) && v.every((n) => WASH_RULES.some((r) => r.name === n))
    ? undefined
    : fail(`is answered by the store (a list of ${WASH_RULES.map((r) => r.name).join(", ")}), got ${show(v)}`);

/** washScore as a sale answers it: accepted and dropped. */
export const answeredWashScore: Check<undefined> = (v) =>
  typeof v === "number" && v >= 0 && v <= 1 ? undefined : fail(`is answered by the store (a number from 0 to 1), got ${show(v)}`);

/** priceUsd as a sale answers it: accepted and dropped, as the store reads it from the price points (docs/money.md). */
export const answeredPriceUsd: Check<undefined> = (v) =>
  typeof v === "string" && /^([0-9]{1,40}\.[0-9]{2})?$/.test(v) ? undefined : fail(`is answered by the store (dollars to the cent, or ""), got ${show(v)}`);

export const txHash: Check<string> = (v) =>
  typeof v === "string" && isTxHash(v) ? v.toLowerCase() : fail(`must be 0x followed by 64 hex characters, got ${show(v)}`);

export const uint256: Check<string> = (v) =>
  typeof v === "string" && isUint256(v)
    ? v
    : fail(`must be a canonical unsigned decimal string (no sign, no leading zeros, below 2^256), got ${show(v)}`);

export const epochSeconds: Check<number> = (v) => {
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) fail(`must be a non-negative integer epoch time in seconds, got ${show(v)}`);
  if (BigInt(v) >= MAX_EPOCH_SECONDS) fail(`must be epoch seconds below ${MAX_EPOCH_SECONDS}, got ${v} (milliseconds?)`);
  return v;
};

export const count: Check<number> = (v) =>
  typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : fail(`must be a non-negative integer, got ${show(v)}`);

export const positiveInt: Check<number> = (v) =>
  typeof v === "number" && Number.isSafeInteger(v) && v >= 1 ? v : fail(`must be a positive integer, got ${show(v)}`);

/** The most units one transfer moves (JSON's safe integers: a balance summed in either engine's 64-bit integers stays exact). */
export const MAX_QUANTITY = Number.MAX_SAFE_INTEGER;

/** Units of a token (an ERC-1155 amount; 1 for an ERC-721 token): a canonical decimal string, "" (an RPC record's unset field) for 1. */
export const quantity: Check<string> = (v) =>
  v === ""
    ? "1"
    : typeof v === "string" && /^[1-9][0-9]{0,15}$/.test(v) && Number(v) <= MAX_QUANTITY
      ? v
      : fail(`must be a canonical decimal string from 1 to ${MAX_QUANTITY} (units of the token: 1 for an ERC-721 token), got ${show(v)}`);

/** The token standards a collection's contract follows (decisions.md, "ERC-1155"). */
export const TOKEN_STANDARDS = ["ERC721", "ERC1155"] as const;
export type TokenStandard = (typeof TOKEN_STANDARDS)[number];

/** A collection's token standard; "" (an RPC record's unset field) for ERC-721. */
export const tokenStandard: Check<TokenStandard> = (v) =>
  v === ""
    ? "ERC721"
    : (TOKEN_STANDARDS as readonly unknown[]).includes(v)
      ? (v as TokenStandard)
      : fail(`must be one of ${TOKEN_STANDARDS.map((s) => `"${s}"`).join(", ")}, got ${show(v)}`);

export const finite: Check<number> = (v) =>
  typeof v === "number" && Number.isFinite(v) ? v : fail(`must be a finite number, got ${show(v)}`);

export const bool: Check<boolean> = (v) => (typeof v === "boolean" ? v : fail(`must be true or false, got ${show(v)}`));

export const marketplace: Check<string> = (v) =>
  typeof v === "string" && MARKETPLACE_RE.test(v) ? v : fail(`must be an upper-case identifier matching [A-Z0-9_]{1,32}, got ${show(v)}`);

/** Listing ids: decimal for some marketplaces, 0x-prefixed hex for others. */
export const marketplaceId: Check<string> = (v) =>
  typeof v === "string" && /^([0-9]{1,100}|0x[0-9a-fA-F]{1,128})$/.test(v)
    ? v
    : fail(`must be a decimal or 0x-prefixed hex string, got ${show(v)}`);

export const listingStatus: Check<ListingStatusName> = (v) =>
  (LISTING_STATUSES as readonly unknown[]).includes(v)
    ? (v as ListingStatusName)
    : fail(`must be one of ${LISTING_STATUSES.join(", ")}, got ${show(v)}`);

export const currency: Check<string> = (v) => (v === "ETH" ? v : fail(`must be "ETH" (amounts are wei), got ${show(v)}`));

/** A payment token by symbol or contract (domain/currencies.ts): its form here, which of the chain's tokens it is by the kind's rules (parts.ts paymentCurrency). */
export const paymentCurrency: Check<string> = (v) =>
  typeof v === "string" && /^([A-Za-z][A-Za-z0-9_]{0,15}|0x[0-9a-fA-F]{40})$/.test(v)
    ? v
    : fail(`must be a payment token's symbol, like "ETH" or "WETH", or its contract address (docs/money.md), got ${show(v)}`);

/** US dollars per whole token: a positive decimal string of at most 15 integer and 12 fractional digits ("3421.57"). */
export const usdPrice: Check<string> = (v) =>
  typeof v === "string" && /^(0|[1-9][0-9]{0,14})(\.[0-9]{1,12})?$/.test(v) && /[1-9]/.test(v)
    ? v
    : fail(`must be a positive decimal string of US dollars per token, like "3421.57", got ${show(v)}`);

/** A fee taken out of a sale's price, in its currency's smallest unit; "" when its indexer did not tell it. */
export const fee: Check<string> = (v) => (v === "" ? "" : uint256(v));

export const confidence: Check<string> = (v) =>
  typeof v === "string" && /^(0(\.[0-9]{1,18})?|1(\.0{1,18})?)$/.test(v)
    ? v
    : fail(`must be a decimal fraction from 0 to 1 written as text, like "0.8731", got ${show(v)}`);

/** The longest URL taken (what browsers and CDNs take in practice). */
export const MAX_URL_CHARS = 2048;

export const url: Check<string> = (v) => {
  if (typeof v === "string" && v.length > MAX_URL_CHARS) fail(`must be at most ${MAX_URL_CHARS} characters, got ${v.length}`);
  if (typeof v === "string" && /^https?:\/\/\S+$/.test(v) && URL.canParse(v)) return v;
  return fail(`must be an http(s) URL, got ${show(v)}`);
};

/** A link a metadata record may leave out: an http(s) URL, or "" when untold. */
export const optionalUrl: Check<string> = (v) => (v === "" ? "" : url(v));

/**
 * The longest data: URI taken as an image or animation (an on-chain SVG):
 * more would make every tokens page that shows it that much longer
 * (docs/limits.md, "Ingest and import records").
 */
export const MAX_DATA_URI_CHARS = 32_768;

/** Schemes a token's media is fetched by: the web, IPFS and Arweave (OpenSea's metadata standard). */
const MEDIA_URI = /^(https?:\/\/|ipfs:\/\/|ar:\/\/)\S+$/;
const DATA_URI = /^data:[a-z]+\/[a-z0-9.+-]+(;[a-z0-9=.+-]+)*,\S*$/i;

/** A token's or a collection's image or animation: an http(s), ipfs:// or ar:// URI, a data: URI, or "" when untold. */
export const mediaUri: Check<string> = (v) => {
  if (v === "") return "";
  if (typeof v === "string" && v.startsWith("data:")) {
    if (v.length > MAX_DATA_URI_CHARS) fail(`a data: URI must be at most ${MAX_DATA_URI_CHARS} characters, got ${v.length}`);
    if (DATA_URI.test(v)) return v;
    return fail(`must be a data: URI with a media type ("data:image/svg+xml;base64,..."), got ${show(v.slice(0, 64))}`);
  }
  if (typeof v === "string" && v.length > MAX_URL_CHARS) fail(`must be at most ${MAX_URL_CHARS} characters, got ${v.length}`);
  if (typeof v === "string" && MEDIA_URI.test(v) && URL.canParse(v)) return v;
  return fail(`must be an http(s), ipfs:// or ar:// URI, a data: URI or "", got ${show(v)}`);
};

const WEEKDAY = "(Mon|Tue|Wed|Thu|Fri|Sat|Sun)";
const MONTH = "(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)";
const TWITTER_TIME = new RegExp(`^${WEEKDAY} ${MONTH} [0-3][0-9] [0-2][0-9]:[0-5][0-9]:[0-6][0-9] [+-][0-9]{4} [0-9]{4}$`);
export const twitterTime: Check<string> = (v) =>
  typeof v === "string" && TWITTER_TIME.test(v)
    ? v
    : fail(`must look like "Wed Oct 10 20:19:24 +0000 2018", got ${show(v)}`);

const ISO_MS = /^[0-9]{4}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]\.[0-9]{3}[+-][0-9]{2}:[0-9]{2}$/;
export const isoMillis: Check<string> = (v) =>
  typeof v === "string" && ISO_MS.test(v) && !Number.isNaN(Date.parse(v))
    ? v
    : fail(`must be ISO 8601 with milliseconds and a numeric offset, like "2018-10-10T20:19:24.000+00:00", got ${show(v)}`);

export const nullable =
  <T>(check: Check<T>): Check<T | null> =>
  (v) =>
    v === null ? null : check(v);

// ---- records -------------------------------------------------------------

export type Shape = Record<string, Check<unknown>>;
export type Parsed<S extends Shape> = { [K in keyof S]: ReturnType<S[K]> };

export interface Problem {
  field: string;
  reason: string;
}

/** An object's check, and the names of the fields it takes (in the shape's order). */
export type ObjectCheck<T> = ((value: unknown, problems: Problem[], path?: string) => T | undefined) & {
  readonly fields: readonly string[];
  /** The fields a record may leave out (each then takes its default). */
  readonly optional: readonly string[];
};

/**
 * Checks an object against a shape: every field present (unless listed in
 * `optional`, which then takes `defaults`), no unknown fields. Field paths of
 * nested checks are prefixed with the parent field.
 */
export function object<S extends Shape>(shape: S, optional: Partial<Parsed<S>> = {}): ObjectCheck<Parsed<S>> {
  const names = Object.keys(shape);
  const check = (value: unknown, problems: Problem[], path = ""): Parsed<S> | undefined => {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      problems.push({ field: path || "record", reason: `must be a JSON object, got ${show(value)}` });
      return undefined;
    }
    const input = value as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    const before = problems.length;
    for (const name of names) {
      if (problems.length >= MAX_PROBLEMS) break;
      const field = path ? `${path}.${name}` : name;
      // Own fields only: "toString" or "__proto__" is no field of a record, whatever Object.prototype holds.
      if (!Object.hasOwn(input, name)) {
        if (name in optional) out[name] = optional[name];
        else problems.push({ field, reason: "is required" });
        continue;
      }
      try {
        out[name] = shape[name]!(input[name]);
      } catch (err) {
        if (err instanceof NestedProblems) {
          for (const p of err.problems.slice(0, MAX_PROBLEMS)) problems.push({ field: `${field}${p.field.startsWith("[") ? "" : "."}${p.field}`, reason: p.reason });
        } else if (err instanceof FieldError) {
          problems.push({ field, reason: err.message });
        } else throw err;
      }
    }
    for (const name in input) {
      if (problems.length >= MAX_PROBLEMS) break;
      if (!Object.hasOwn(input, name)) continue;
      if (!Object.hasOwn(shape, name)) problems.push({ field: `${path ? `${path}.` : ""}${show(name).slice(1, -1)}`, reason: "is not a field of this kind" });
    }
    return problems.length === before ? (out as Parsed<S>) : undefined;
  };
  return Object.assign(check, { fields: names, optional: Object.keys(optional) });
}

/**
 * A record of a collection: `shape` plus its optional `chain` (the default
 * chain when absent), last so that a record's own fields' problems come first.
 */
export function collectionRecord<S extends Shape>(shape: S, optional: Partial<Parsed<S>> = {}): ObjectCheck<Parsed<S> & { chain: Chain }> {
  return object({ ...shape, chain }, { ...optional, chain: DEFAULT_CHAIN } as Partial<Parsed<S & { chain: Check<Chain> }>>) as ObjectCheck<Parsed<S> & { chain: Chain }>;
}

/** Problems of a nested object or array, carried up through a field check. */
/** A nested object's problems, thrown up to its field (not an Error either: see FieldError). */
export class NestedProblems {
  constructor(readonly problems: Problem[]) {}
}

/** A field check for a nested object of the given shape. */
export function nested<T>(check: (v: unknown, problems: Problem[]) => T | undefined): Check<T> {
  return (v) => {
    const problems: Problem[] = [];
    const out = check(v, problems);
    if (problems.length > 0 || out === undefined) throw new NestedProblems(problems);
    return out;
  };
}

/** A field check for an array of at most `maxItems` items, each passing `item`. */
export function arrayOf<T>(item: (v: unknown, problems: Problem[], path?: string) => T | undefined, maxItems: number): Check<T[]> {
  return (v) => {
    if (!Array.isArray(v)) fail(`must be an array, got ${show(v)}`);
    if (v.length > maxItems) fail(`must hold at most ${maxItems} items, got ${v.length}`);
    const problems: Problem[] = [];
    const out: (T | undefined)[] = [];
    for (let i = 0; i < v.length && problems.length < MAX_PROBLEMS; i++) out.push(item(v[i], problems, `[${i}]`));
    if (problems.length > 0) throw new NestedProblems(problems);
    return out as T[];
  };
}

/**
 * The first field of `record` holding a value nested deeper than
 * MAX_DEPTH, if any: found without recursion (a value a million levels
 * deep is one JSON.parse can build, and any recursive walk of it, a check
 * or a JSON.stringify, would exhaust the stack).
 */
export function tooDeep(record: unknown): string | undefined {
  if (typeof record !== "object" || record === null) return undefined;
  for (const [name, value] of Array.isArray(record) ? [...record.entries()].map(([i, v]) => [`[${i}]`, v] as const) : Object.entries(record)) {
    const stack: [unknown, number][] = [[value, 1]];
    while (stack.length > 0) {
      const [v, depth] = stack.pop()!;
      if (typeof v !== "object" || v === null) continue;
      if (depth > MAX_DEPTH) return String(name);
      for (const child of Array.isArray(v) ? v : Object.values(v)) if (typeof child === "object" && child !== null) stack.push([child, depth + 1]);
    }
  }
  return undefined;
}

/** Why a value nested too deep is refused (kinds.ts, and parseLine before parsing). */
export const TOO_DEEP = `must not nest deeper than ${MAX_DEPTH} levels`;

/** A line of NDJSON: its value, or the problem that keeps it from being one. */
export type ParsedLine = { value: unknown; invalid?: undefined } | { value?: undefined; invalid: Problem };

/**
 * A line's JSON value, or why it has none. A line nested deeper than a
 * record may be is refused from its text, before JSON.parse builds it
 * (domain/json-depth.ts): the record is depth 1 there, level 0 for tooDeep.
 */
export function parseLine(text: string): ParsedLine {
  const deep = deepFieldOfText(text, MAX_DEPTH + 1);
  if (deep !== undefined) return { invalid: { field: deep, reason: TOO_DEEP } };
  try {
    return { value: JSON.parse(text) };
  } catch (err) {
    if (!(err instanceof SyntaxError)) throw err;
    return { invalid: { field: "record", reason: notJson(err) } };
  }
}


/** The message of a rejected record: its first problems, each reason cut short (at most MAX_PROBLEMS). */
export function describeProblems(problems: readonly Problem[]): string {
  const shown = problems.slice(0, MAX_PROBLEMS).map((p) => `${p.field.slice(0, 200)}: ${p.reason.length > 300 ? `${p.reason.slice(0, 300)}...` : p.reason}`);
  const more = problems.length > MAX_PROBLEMS ? `; and more (checking stops at ${MAX_PROBLEMS} problems a record)` : "";
  return shown.join("; ") + more;
  // At most MAX_PROBLEMS * ~500 characters: a record's message is bounded whatever it holds.
}
