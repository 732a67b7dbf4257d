import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextKey, type HandlerContext } from "@connectrpc/connect";
import { handlerFor, importLine, type Kind } from "../domain/kinds/index.js";
import { DEFAULTS } from "../config/settings.js";
import { latestTimeAllowed } from "../domain/formats.js";
import { isChain, recordRef, unknownChain } from "../domain/chains.js";
import { describeProblems, type Problem } from "../domain/kinds/fields.js";
import { RecordConflictError, StoreReadOnlyError } from "../store/ports/errors.js";
import type { IngestWriter } from "../store/ports/writes.js";
import { type IngestResponse, IngestResponseSchema } from "../../gen/marketdata/v1/ingest_service_pb.js";
import { MAX_BATCH_RECORDS } from "../domain/ingest-limits.js";

import type { WriteNotices } from "./write-notices.js";
// The ingest API's one path, whatever carried the batch (an RPC's records,
// REST's NDJSON lines): every record checked as `marketdata import` checks a
// line, then the valid ones written by natural key in one transaction
// (IngestWriter), the answer counting what was new or changed (accepted)
// and what the store already held exactly so (duplicates: a sender's retry).
// A batch with an invalid record writes nothing and is refused as
// invalid_argument, the answer (every rejected record, numbered) attached as
// the error's detail (REST: in the error body), unless the caller asked to
// skip invalid records.

/** One record of a batch: its position (REST: its line) and its JSON value, or why it has none. */
export interface IngestLine {
  line: number;
  value?: unknown;
  /** The line is no record (not UTF-8, not JSON, nested too deep): why. */
  invalid?: Problem;
}

export interface IngestResult {
  accepted: number;
  duplicates: number;
  rejected: { line: number; message: string }[];
}

/** Rejected records quoted in a refused batch's message. */
const QUOTED_REJECTIONS = 3;
/**
 * Rejected records listed in a refused batch's error (REST's error body,
 * the RPCs' error details), each message cut to REJECTION_CHARS: the
 * answer stays a few kilobytes however many records were invalid, small
 * enough for gRPC's trailers (grpc-js takes 8 KB of metadata by default).
 * The message says how many there were in all; skipInvalid's answer lists
 * every one.
 */
export const DETAILED_REJECTIONS = 10;
const REJECTION_CHARS = 200;

export interface IngestOptions {
  /** How far past the clock a sale's or listing's time may be (seconds); --max-clock-skew's default when absent. */
  maxClockSkewSeconds?: number;
  /** The clock (ms), for tests. */
  now?: () => number;
  /** Told of each batch that changed the store (write-notices.ts); none when absent. */
  notices?: WriteNotices;
}

export class Ingest {
  readonly #writer: IngestWriter;
  readonly #skew: number;
  readonly #now: () => number;
  readonly #notices: WriteNotices | undefined;

  constructor(writer: IngestWriter, options: IngestOptions = {}) {
    this.#writer = writer;
    this.#notices = options.notices;
    this.#skew = options.maxClockSkewSeconds ?? DEFAULTS.maxClockSkew;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Checks and writes one batch of `kind`; throws invalid_argument when it is
   * refused as a whole. `chain` (the request's; "": the default chain) is the
   * chain of every record that names none.
   */
  async batch(kind: Kind, lines: readonly IngestLine[], skipInvalid: boolean, chain = ""): Promise<IngestResult> {
    tooLarge(lines.length);
    if (chain !== "" && !isChain(chain)) throw new ConnectError(`chain ${unknownChain(chain)}`, Code.InvalidArgument);
    const handler = handlerFor(kind, { latestTime: latestTimeAllowed(this.#skew, this.#now()) });
    const valid: Record<string, unknown>[] = [];
    const rejected: IngestResult["rejected"] = [];
    for (const { line, value, invalid } of lines) {
      const problems: Problem[] = invalid === undefined ? [] : [invalid];
      const record = invalid === undefined ? handler.check(chain === "" ? value : onChain(value, chain), problems) : undefined;
      if (problems.length > 0 || record === undefined) rejected.push({ line, message: describeProblems(problems) });
      else valid.push(record as Record<string, unknown>);
    }
    if (rejected.length > 0 && !skipInvalid) throw refused(lines.length, { accepted: 0, duplicates: 0, rejected });
    if (valid.length === 0) return { accepted: 0, duplicates: 0, rejected };
    let counts;
    try {
      counts = await this.#writer.write(kind, valid);
    } catch (err) {
      if (err instanceof StoreReadOnlyError) throw new ConnectError(err.message, Code.FailedPrecondition);
      if (err instanceof RecordConflictError) throw new ConnectError(`nothing was written: ${err.message}`, Code.InvalidArgument);
      throw err;
    }
    if (this.#notices !== undefined && counts.inserted + counts.updated > 0) {
      this.#notices.publish({ kind, collections: new Set(valid.flatMap((r) => (r.contractAddress === undefined ? [] : [recordRef(r)]))) });
    }
    return { accepted: counts.inserted + counts.updated, duplicates: counts.unchanged, rejected };
  }

  /**
   * A batch of RPC records of `kind`, numbered from `first`, on the
   * request's `chain` ("": the default); `removed`: every record taken back
   * (the request's flag, docs/chains.md).
   */
  records(kind: Kind, records: readonly unknown[], skipInvalid: boolean, first = 1, chain = "", removed = false): Promise<IngestResult> {
    tooLarge(records.length);
    // As its import line (the kind's declaration): one checker rules on both.
    const line = importLine(kind);
    const lineOf = removed ? (r: unknown) => ({ ...line(r), removed: true }) : line;
    return this.batch(kind, records.map((r, i) => ({ line: first + i, value: lineOf(r) })), skipInvalid, chain);
  }
}

/** A record naming no chain, on `chain`; anything else (a record naming one, no object at all) as it is, for the checker. */
function onChain(value: unknown, chain: string): unknown {
  if (typeof value !== "object" || value === null || Array.isArray(value) || Object.hasOwn(value, "chain")) return value;
  return { ...value, chain };
}

/** Refuses a batch over MAX_BATCH_RECORDS before any of it is checked (`counting`: n is as far as the count got). */
export function tooLarge(n: number, counting = false): void {
  if (n > MAX_BATCH_RECORDS) {
    const got = counting ? "more" : String(n);
    throw new ConnectError(`a batch holds at most ${MAX_BATCH_RECORDS} records, got ${got}; split it`, Code.InvalidArgument);
  }
}

export function toIngestResponse(r: IngestResult): IngestResponse {
  return create(IngestResponseSchema, { accepted: r.accepted, duplicates: r.duplicates, rejected: r.rejected });
}

/** The error of a batch refused as a whole: the first rejections in its message, the first DETAILED_REJECTIONS in its detail. */
function refused(total: number, result: IngestResult): ConnectError {
  const cut = (m: string) => (m.length > REJECTION_CHARS ? `${m.slice(0, REJECTION_CHARS)}...` : m);
  const quoted = result.rejected
    .slice(0, QUOTED_REJECTIONS)
    .map((r) => `record ${r.line}: ${cut(r.message)}`)
    .join("; ");
  const more = result.rejected.length > QUOTED_REJECTIONS ? `; and ${result.rejected.length - QUOTED_REJECTIONS} more` : "";
  const listed = result.rejected.length > DETAILED_REJECTIONS ? ` (the first ${DETAILED_REJECTIONS} listed)` : "";
  const detail = { ...result, rejected: result.rejected.slice(0, DETAILED_REJECTIONS).map((r) => ({ line: r.line, message: cut(r.message) })) };
  return new ConnectError(
    `${result.rejected.length} of ${total} records invalid${listed}; nothing was written (set skipInvalid to write the valid ones): ${quoted}${more}`,
    Code.InvalidArgument,
    undefined,
    [{ desc: IngestResponseSchema, value: toIngestResponse(detail) }],
  );
}

/** The ingest result inside an error from Ingest.batch (its detail), for transports that write it in their own form. */
export function rejectionsOf(err: ConnectError): IngestResponse | undefined {
  return err.findDetails(IngestResponseSchema)[0];
}

interface Batch {
  records: readonly unknown[];
  skipInvalid: boolean;
  /** The chain of the records that name none; absent on a kind without chains (IngestPricesRequest): "". */
  chain?: string;
  /** IngestSalesRequest's and IngestTransfersRequest's: every record taken back. */
  removed?: boolean;
}

/**
 * Messages of a stream being written at once: the next ones are read and
 * checked while earlier ones commit (and share their commits), at most this
 * many held.
 */
const STREAM_IN_FLIGHT = 8;

/**
 * Admits the next message of a write stream (set by the transport that
 * admitted the call): the key is checked again and the message counted
 * against the key's ingest limit, waiting while it is over it; throws when
 * the key was revoked or lost its ingest scope.
 */
export const admitNextBatch = createContextKey<((signal: AbortSignal) => Promise<void>) | undefined>(undefined, {
  description: "admits the next message of a write stream",
});

/**
 * A client stream of batches of `kind`: each committed as it comes, in
 * order; one answer adding them up, records numbered across the stream.
 * Each message after the first (admitted with the call) is admitted as a
 * request of its own (admitNextBatch). A batch refused (or failed), or a
 * message refused admission, ends the stream with its error; the batches
 * before it stay committed, and so may the few read after it while it was
 * in flight (a retry of the stream finds them duplicates).
 */
async function stream(ingest: Ingest, kind: Kind, batches: AsyncIterable<Batch>, context: HandlerContext): Promise<IngestResponse> {
  const admit = context.values.get(admitNextBatch);
  const total: IngestResult = { accepted: 0, duplicates: 0, rejected: [] };
  const inFlight: Promise<{ result?: IngestResult; error?: unknown }>[] = [];
  const settle = async () => {
    const { result, error } = await inFlight.shift()!;
    if (error !== undefined) throw error;
    total.accepted += result!.accepted;
    total.duplicates += result!.duplicates;
    // Bounded: a stream that keeps sending invalid records keeps the first of them.
    for (const x of result!.rejected) if (total.rejected.length < MAX_BATCH_RECORDS) total.rejected.push(x);
  };
  let next = 1;
  let messages = 0;
  for await (const b of batches) {
    if (messages++ > 0) await admit?.(context.signal);
    const first = next;
    next += b.records.length;
    inFlight.push(ingest.records(kind, b.records, b.skipInvalid, first, b.chain ?? "", b.removed).then((result) => ({ result }), (error: unknown) => ({ error })));
    if (inFlight.length >= STREAM_IN_FLIGHT) await settle();
  }
  while (inFlight.length > 0) await settle();
  return toIngestResponse(total);
}

/** The IngestService implementation (Connect router; every RPC protocol). */
export function createIngestService(ingest: Ingest) {
  const unary = (kind: Kind) => async (req: Batch) => toIngestResponse(await ingest.records(kind, req.records, req.skipInvalid, 1, req.chain ?? "", req.removed));
  return {
    ingestCollections: unary("collections"),
    ingestTokens: unary("tokens"),
    ingestSales: unary("sales"),
    streamSales: (reqs: AsyncIterable<Batch>, context: HandlerContext) => stream(ingest, "sales", reqs, context),
    ingestListings: unary("listings"),
    ingestTransfers: unary("transfers"),
    ingestOffers: unary("offers"),
    streamListings: (reqs: AsyncIterable<Batch>, context: HandlerContext) => stream(ingest, "listings", reqs, context),
    ingestAppraisals: unary("appraisals"),
    ingestRarity: unary("rarity"),
    ingestInfluencers: unary("influencers"),
    ingestTweets: unary("tweets"),
    ingestScores: unary("scores"),
    ingestReorgs: unary("reorgs"),
    ingestFinality: unary("finality"),
    ingestPrices: unary("prices"),
    ingestSpam: unary("spam"),
    ingestFlags: unary("flags"),
  };
}
