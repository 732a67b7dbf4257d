import { LISTING_STATUSES, type ListingStatusName } from "../domain/records.js";
import { isAddress, isTxHash, isUint256, MARKETPLACE_RE, MAX_EPOCH_SECONDS } from "../domain/formats.js";

// Field checkers for imported records: each returns the stored form of a
// value or throws FieldError with the reason. Record checkers collect every
// field's error, so one pass reports everything wrong with a line.

export class FieldError extends Error {}

export type Check<T> = (value: unknown) => T;

const show = (v: unknown) => {
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 80 ? `${s.slice(0, 80)}...` : s;
};

function fail(reason: string): never {
  throw new FieldError(reason);
}

export const string: Check<string> = (v) => (typeof v === "string" ? v : fail(`must be a string, got ${show(v)}`));

export const nonEmpty: Check<string> = (v) => (string(v) !== "" ? (v as string) : fail("must not be empty"));

export const address: Check<string> = (v) =>
  typeof v === "string" && isAddress(v) ? v.toLowerCase() : fail(`must be 0x followed by 40 hex characters, got ${show(v)}`);

/** An address, or "" when unknown. */
export const ownerAddress: Check<string> = (v) => (v === "" ? "" : address(v));

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

export const confidence: Check<string> = (v) =>
  typeof v === "string" && /^(0(\.[0-9]{1,18})?|1(\.0{1,18})?)$/.test(v)
    ? v
    : fail(`must be a decimal fraction from 0 to 1 written as text, like "0.8731", got ${show(v)}`);

export const url: Check<string> = (v) => {
  if (typeof v === "string" && /^https?:\/\/\S+$/.test(v) && URL.canParse(v)) return v;
  return fail(`must be an http(s) URL, got ${show(v)}`);
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

/**
 * Checks an object against a shape: every field present (unless listed in
 * `optional`, which then takes `defaults`), no unknown fields. Field paths of
 * nested checks are prefixed with the parent field.
 */
export function object<S extends Shape>(
  shape: S,
  optional: Partial<Parsed<S>> = {},
): (value: unknown, problems: Problem[], path?: string) => Parsed<S> | undefined {
  const names = Object.keys(shape);
  return (value, problems, path = "") => {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      problems.push({ field: path || "record", reason: `must be a JSON object, got ${show(value)}` });
      return undefined;
    }
    const input = value as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    const before = problems.length;
    for (const name of names) {
      const field = path ? `${path}.${name}` : name;
      if (!(name in input)) {
        if (name in optional) out[name] = optional[name];
        else problems.push({ field, reason: "is required" });
        continue;
      }
      try {
        out[name] = shape[name]!(input[name]);
      } catch (err) {
        if (err instanceof NestedProblems) {
          problems.push(...err.problems.map((p) => ({ field: `${field}${p.field.startsWith("[") ? "" : "."}${p.field}`, reason: p.reason })));
        } else if (err instanceof FieldError) {
          problems.push({ field, reason: err.message });
        } else throw err;
      }
    }
    for (const name of Object.keys(input)) {
      if (!(name in shape)) problems.push({ field: path ? `${path}.${name}` : name, reason: "is not a field of this kind" });
    }
    return problems.length === before ? (out as Parsed<S>) : undefined;
  };
}

/** Problems of a nested object or array, carried up through a field check. */
export class NestedProblems extends Error {
  constructor(readonly problems: Problem[]) {
    super("nested problems");
  }
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

/** A field check for an array whose items pass `item`. */
export function arrayOf<T>(item: (v: unknown, problems: Problem[], path?: string) => T | undefined): Check<T[]> {
  return (v) => {
    if (!Array.isArray(v)) fail(`must be an array, got ${show(v)}`);
    const problems: Problem[] = [];
    const out = v.map((x, i) => item(x, problems, `[${i}]`));
    if (problems.length > 0) throw new NestedProblems(problems);
    return out as T[];
  };
}
