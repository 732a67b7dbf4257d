import { echo } from "../domain/echo.js";
import { Code, ConnectError } from "@connectrpc/connect";
import { isAddress, isUint256, MARKETPLACE_RE, MAX_EPOCH_SECONDS } from "../domain/formats.js";
import { type Chain, collectionRef, DEFAULT_CHAIN, isChain, unknownChain } from "../domain/chains.js";
import { SERIES_INTERVALS, type SeriesInterval } from "../domain/series.js";
import { LISTING_STATUSES, type ListingStatusName } from "../domain/rows.js";
import { ListingStatus } from "../../gen/marketdata/v1/resources_pb.js";
import { AMOUNT_UNITS, type AmountUnit } from "../domain/money.js";

// Request validation shared by every RPC, whatever protocol carried it.
// Messages name the parameter by its JSON (query) name and quote the value.

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 50;
export const MAX_ASSET_IDS = 20;
export const MAX_ADDRESSES = 20;

export function invalid(message: string): ConnectError {
  return new ConnectError(message, Code.InvalidArgument);
}

const q = echo;

/** A required collection address, returned lower case. */
export function contractAddress(value: string, param = "contractAddress"): string {
  if (value === "") throw invalid(`${param} is required`);
  if (!isAddress(value)) throw invalid(`${param} must be 0x followed by 40 hex characters, got ${q(value)}`);
  return value.toLowerCase();
}

/** A request's chain: one of domain/chains.ts CHAINS; "" is the default chain. */
export function chain(value: string, param = "chain"): Chain {
  if (value === "") return DEFAULT_CHAIN;
  if (!isChain(value)) throw invalid(`${param} ${unknownChain(value)}`);
  return value;
}

/** finality= ("final": settled records only; docs/chains.md, "Finality"): whether only final records are asked. */
export function finalOnly(value: string): boolean {
  if (value === "" || value === "final") return value === "final";
  throw invalid(`finality must be "final" or "" (every record), got ${echo(value)}`);
}

/**
 * A request's collection, required: its address (lower case, as answers
 * name it) and its reference on the request's chain (domain/chains.ts
 * collectionRef: what the store looks up and a cursor is bound to).
 */
export function collection(req: { contractAddress: string; chain: string }): { address: string; ref: string } {
  const address = contractAddress(req.contractAddress);
  return { address, ref: collectionRef(chain(req.chain), address) };
}

/** Up to MAX_ADDRESSES addresses, lower case, duplicates dropped, order kept. */
export function contractAddresses(values: readonly string[], param = "contractAddress"): string[] {
  if (values.length === 0) throw invalid(`${param} is required`);
  const unique = [...new Set(values.map((v) => contractAddress(v, param)))];
  if (unique.length > MAX_ADDRESSES) {
    throw invalid(`${param} accepts at most ${MAX_ADDRESSES} addresses, got ${unique.length}`);
  }
  return unique;
}

export function assetId(value: string, param = "assetId"): string {
  if (!isUint256(value)) {
    throw invalid(`${param} must be a decimal token id (no sign, no leading zeros, at most 78 digits), got ${q(value)}`);
  }
  return value;
}

/** An optional single asset id: "" means every asset. */
export function optionalAssetId(value: string, param = "assetId"): string | undefined {
  return value === "" ? undefined : assetId(value, param);
}

/** A list of asset ids, de-duplicated, at most MAX_ASSET_IDS. */
export function assetIds(values: readonly string[], param = "assetId"): string[] {
  const unique = [...new Set(values.map((v) => assetId(v, param)))];
  if (unique.length > MAX_ASSET_IDS) {
    throw invalid(`${param} accepts at most ${MAX_ASSET_IDS} ids, got ${unique.length}`);
  }
  return unique;
}

export function limit(value: number | undefined, param = "limit", bounds = { fallback: DEFAULT_LIMIT, max: MAX_LIMIT }): number {
  if (value === undefined) return bounds.fallback;
  if (!Number.isInteger(value) || value < 1 || value > bounds.max) {
    throw invalid(`${param} must be between 1 and ${bounds.max}, got ${value}`);
  }
  return value;
}

/** A series' interval: one of SERIES_INTERVALS, required. */
export function seriesInterval(value: string, param = "interval"): SeriesInterval {
  return requiredChoice(value, SERIES_INTERVALS, param);
}

/** One of `choices`, which the caller must name ("" is refused: no default). */
export function requiredChoice<T extends string>(value: string, choices: readonly T[], param: string): T {
  if (value === "") throw invalid(`${param} is required: one of ${choices.join(", ")}`);
  return choice(value, choices, param);
}

export function epochSeconds(value: bigint | undefined, param: string): number | undefined {
  if (value === undefined) return undefined;
  if (value < 0n) throw invalid(`${param} must be epoch seconds (not negative), got ${value}`);
  if (value >= MAX_EPOCH_SECONDS) {
    throw invalid(`${param} must be epoch seconds below ${MAX_EPOCH_SECONDS}, got ${value} (milliseconds?)`);
  }
  return Number(value);
}

/** Inclusive since/until window in epoch seconds. */
export function timeWindow(since: bigint | undefined, until: bigint | undefined) {
  const window = { since: epochSeconds(since, "since"), until: epochSeconds(until, "until") };
  if (window.since !== undefined && window.until !== undefined && window.since > window.until) {
    throw invalid(`since must not be greater than until, got since=${window.since} until=${window.until}`);
  }
  return window;
}

/** A marketplace filter ("": every one), in any case (as addresses are): identifiers are stored upper case. */
export function marketplace(value: string, param = "marketplace"): string | undefined {
  if (value === "") return undefined;
  const upper = value.toUpperCase();
  if (!MARKETPLACE_RE.test(upper)) {
    throw invalid(`${param} must be a marketplace identifier matching [A-Z0-9_]{1,32} (any case), got ${q(value)}`);
  }
  return upper;
}

/** Each status of the contract by its enum value (the zero value is "every status"). */
const STATUS_NAMES = new Map<ListingStatus, ListingStatusName>(LISTING_STATUSES.map((n) => [ListingStatus[n], n]));

export function listingStatus(status: ListingStatus): ListingStatusName | undefined {
  if (status === ListingStatus.UNSPECIFIED) return undefined;
  const name = STATUS_NAMES.get(status);
  if (name === undefined) {
    throw invalid(`status must be one of ${LISTING_STATUSES.join(", ")}, got ${status}`);
  }
  return name;
}

/** An optional owner address ("": every owner), returned lower case. */
export function optionalOwner(value: string, param = "owner"): string | undefined {
  return value === "" ? undefined : contractAddress(value, param);
}

/** An optional trait filter "type:value" (the first ":" separates them; "": every token). */
export function optionalTrait(value: string, param = "trait"): { type: string; value: string } | undefined {
  if (value === "") return undefined;
  const at = value.indexOf(":");
  if (at <= 0) throw invalid(`${param} must be "type:value" (a trait type, a colon, a value), got ${q(value)}`);
  return { type: value.slice(0, at), value: value.slice(at + 1) };
}

/** One of `choices`, or the first when "". */
export function choice<T extends string>(value: string, choices: readonly T[], param: string): T {
  if (value === "") return choices[0]!;
  const found = choices.find((c) => c === value);
  if (found === undefined) throw invalid(`${param} must be one of ${choices.join(", ")}, got ${q(value)}`);
  return found;
}

/** The unit a read answers amounts in (docs/money.md): "eth" or "" (the record's own token), or "usd"; any case. */
export function amountUnit(value: string): AmountUnit {
  return choice(value.toLowerCase(), AMOUNT_UNITS, "currency");
}

/** The longest text the collections list searches for. */
export const MAX_QUERY_LENGTH = 100;

/** An optional search text ("": none), returned lower case. */
export function optionalQuery(value: string, param = "query"): string | undefined {
  if (value === "") return undefined;
  if ([...value].length > MAX_QUERY_LENGTH) throw invalid(`${param} must be at most ${MAX_QUERY_LENGTH} characters, got ${q(value)}`);
  return value.toLowerCase();
}
