import { type Client, Code, ConnectError, createClient, type Interceptor, type Transport } from "@connectrpc/connect";
import {
  AssetService,
  type ListAppraisalsRequest,
  type ListListingsRequest,
  type ListOffersRequest,
  type ListRarityRequest,
  type ListSalesRequest,
  type ListTokenOwnersRequest,
  type ListTokensRequest,
  type WatchListingsRequest,
  type WatchOffersRequest,
  type WatchSalesRequest,
} from "./gen/marketdata/v1/asset_service_pb.js";
import {
  CollectionService,
  type GetCollectionCandlesRequest,
  type GetCollectionStatsSeriesRequest,
  type ListCollectionActivityRequest,
  type ListCollectionHoldersRequest,
  type ListCollectionsRequest,
  type WatchCollectionActivityRequest,
} from "./gen/marketdata/v1/collection_service_pb.js";
import { IngestService } from "./gen/marketdata/v1/ingest_service_pb.js";
import type {
  ActivityEvent, Appraisal, AssetRarity, Candle, CollectionSummary, Holder, Listing, Offer, Removal, Sale, StatsBucket, Token, TokenOwner,
} from "./gen/marketdata/v1/resources_pb.js";
import { type ListWebhooksRequest, type Webhook, WebhookService } from "./gen/marketdata/v1/webhook_service_pb.js";

// The client of the marketdata service, whatever carries it: connect-es
// clients of the contract's services, the API key on every call, retries
// with backoff for what can succeed later, cursors followed, and live feeds
// resumed from the last token seen. The transports come from the entry
// point (index.ts: fetch, for browsers and Node; node.ts: Node's http2, and
// gRPC).

export type Protocol = "connect" | "grpc-web" | "grpc";

export interface MarketDataClientOptions {
  /** The server, e.g. "http://127.0.0.1:8080". */
  baseUrl: string;
  /** Sent as x-api-key on every call. */
  apiKey: string;
  /** Default "connect". "grpc" needs Node (HTTP/2). */
  protocol?: Protocol;
  /** A unary call's deadline, retries included (ms); default 30,000. Streams have none. */
  timeoutMs?: number;
  /** Attempts of a call that failed with unavailable or resource_exhausted; default 4. */
  maxAttempts?: number;
  /** The first backoff (ms), doubled each attempt, with full jitter; default 200. */
  backoffMs?: number;
  /** The longest backoff (ms); default 10,000. */
  maxBackoffMs?: number;
  /** Called before each retry, with what failed and how long the client waits. */
  onRetry?: (info: RetryInfo) => void;
}

export interface RetryInfo {
  /** "/marketdata.v1.AssetService/ListSales", or the feed's RPC. */
  procedure: string;
  attempt: number;
  delayMs: number;
  error: ConnectError;
}

/** A list's request, without the cursor `pages` follows. */
type PageRequest<R> = Omit<Partial<R>, "cursor" | "$typeName">;

/** Every list of the contract that pages (13), the service it is on, and what `pages` yields of it. */
export interface PagedLists {
  listAppraisals: { request: PageRequest<ListAppraisalsRequest>; record: Appraisal };
  listRarity: { request: PageRequest<ListRarityRequest>; record: AssetRarity };
  listSales: { request: PageRequest<ListSalesRequest>; record: Sale };
  listListings: { request: PageRequest<ListListingsRequest>; record: Listing };
  listTokens: { request: PageRequest<ListTokensRequest>; record: Token };
  listOffers: { request: PageRequest<ListOffersRequest>; record: Offer };
  listTokenOwners: { request: PageRequest<ListTokenOwnersRequest>; record: TokenOwner };
  /** Each holder (its page's `data.holders`). */
  listCollectionHolders: { request: PageRequest<ListCollectionHoldersRequest>; record: Holder };
  getCollectionStatsSeries: { request: PageRequest<GetCollectionStatsSeriesRequest>; record: StatsBucket };
  getCollectionCandles: { request: PageRequest<GetCollectionCandlesRequest>; record: Candle };
  listCollections: { request: PageRequest<ListCollectionsRequest>; record: CollectionSummary };
  listCollectionActivity: { request: PageRequest<ListCollectionActivityRequest>; record: ActivityEvent };
  /** With an admin key. */
  listWebhooks: { request: PageRequest<ListWebhooksRequest>; record: Webhook };
}

/** A page as `pages` reads it: its records, wherever the list keeps them, and its next cursor (`cursor` or `next_page`). */
interface AnyPage {
  data?: unknown;
  webhooks?: unknown[];
  cursor?: string;
  nextPage?: string;
}

/** Where each list is, and where its page keeps its records. */
const LISTS: { [M in keyof PagedLists]: { service: "asset" | "collection" | "webhooks"; records?: (page: AnyPage) => unknown[] } } = {
  listAppraisals: { service: "asset" },
  listRarity: { service: "asset" },
  listSales: { service: "asset" },
  listListings: { service: "asset" },
  listTokens: { service: "asset" },
  listOffers: { service: "asset" },
  listTokenOwners: { service: "asset" },
  listCollectionHolders: { service: "collection", records: (page) => (page.data as { holders?: Holder[] } | undefined)?.holders ?? [] },
  getCollectionStatsSeries: { service: "collection" },
  getCollectionCandles: { service: "collection" },
  listCollections: { service: "collection" },
  listCollectionActivity: { service: "collection" },
  listWebhooks: { service: "webhooks", records: (page) => page.webhooks ?? [] },
};

/** The live feeds `watch` follows (every stream of the contract), and what each yields. */
export interface Feeds {
  sales: { request: Omit<Partial<WatchSalesRequest>, "$typeName">; record: Sale };
  listings: { request: Omit<Partial<WatchListingsRequest>, "$typeName">; record: Listing };
  offers: { request: Omit<Partial<WatchOffersRequest>, "$typeName">; record: Offer };
  /** A collection's sales, listings, offers and transfers in one feed (WatchCollectionActivity); a removal is an event of type "removed". */
  activity: { request: Omit<Partial<WatchCollectionActivityRequest>, "$typeName">; record: ActivityEvent };
}

/** Each feed's RPC, and the client of its service. */
const FEEDS = {
  sales: { service: "asset", method: AssetService.method.watchSales },
  listings: { service: "asset", method: AssetService.method.watchListings },
  offers: { service: "asset", method: AssetService.method.watchOffers },
  activity: { service: "collection", method: CollectionService.method.watchCollectionActivity },
} as const satisfies Record<keyof Feeds, { service: "asset" | "collection"; method: { localName: string } }>;

/** A feed's message, whichever RPC sent it. */
interface FeedMessage {
  resumeToken: string;
  sale?: Sale;
  listing?: Listing;
  offer?: Offer;
  event?: ActivityEvent;
  removed?: Removal;
}

/** The WebhookService RPCs that only read: retried as reads are; the others change a webhook, and are retried as writes. */
const WEBHOOK_READS = new Set(["ListWebhooks", "GetWebhook", "ListWebhookAttempts"]);

export interface FeedEvent<R> {
  record: R;
  /** Pass back as `cursor` to resume after this record. */
  resumeToken: string;
  /**
   * Set when a reorganisation took the record back (a sale only): every
   * answer is now as if it had never come. `originalId` is the event id it
   * was last sent under ("evt_<epoch>_<position>"), at `originalPosition`.
   */
  removed?: { originalId: string; originalPosition: bigint };
}

export interface MarketDataClient {
  asset: Client<typeof AssetService>;
  collection: Client<typeof CollectionService>;
  ingest: Client<typeof IngestService>;
  /** Webhook administration (WebhookService): a client made with an admin key. */
  webhooks: Client<typeof WebhookService>;
  /** Every record of a list, page after page, to the end (or until `signal` aborts). */
  pages<M extends keyof PagedLists>(method: M, request: PagedLists[M]["request"], options?: { signal?: AbortSignal }): AsyncIterable<PagedLists[M]["record"]>;
  /**
   * A live feed (WatchSales, WatchListings, WatchOffers,
   * WatchCollectionActivity): each record as it is committed,
   * from `request.cursor` (a resumeToken) or from now. After a disconnect it
   * reconnects with backoff from the last token it saw: exactly once, in
   * commit order. Ends when `signal` aborts; throws what cannot succeed by
   * retrying (a bad filter, an unknown collection, a revoked key, a token of
   * another store).
   */
  watch<K extends keyof Feeds>(feed: K, request: Feeds[K]["request"], options?: { signal?: AbortSignal }): AsyncIterable<FeedEvent<Feeds[K]["record"]>>;
  /**
   * A collection's records of one kind ("sales", "tokens", ...: the server's
   * docs/export.md) as the lines `marketdata import KIND` reads, through
   * GET /v1/export/KIND, chunk after chunk to the end, from
   * `request.position` (a chunk's) or the first record. Each chunk says
   * where the next starts: keep the last to go on later. A chunk refused for
   * the key's rate, or lost with its connection, is asked again from the
   * same position.
   */
  export(kind: string, request: ExportRequest, options?: { signal?: AbortSignal }): AsyncIterable<ExportChunk>;
}

export interface ExportRequest {
  contractAddress: string;
  /** The collection's chain; the server's default when absent. */
  chain?: string;
  /** Where to start: a chunk's `position`; the first record when absent. */
  position?: string;
  /** Records a chunk (1 to 10,000; the server's default 10,000). */
  limit?: number;
}

export interface ExportChunk {
  /** Import lines (NDJSON, without their newlines). */
  lines: string[];
  /** Where the next chunk starts. */
  position: string;
  /** Whether this chunk reached the collection's last record. */
  done: boolean;
}

/** What the entry point gives: a transport of a protocol, with the client's interceptors. */
export type TransportFactory = (protocol: Protocol, baseUrl: string, interceptors: Interceptor[], timeoutMs: number) => Transport;

/** The connection was refused: nothing reached the server, any call may try again. */
const NOT_SENT = new Set(["ECONNREFUSED"]);
/**
 * The connection failed under the call: a server restarting, or one that
 * refused a request too large and closed the connection while its body was
 * still being sent. Retried for reads only: a read is small, a write that
 * large is refused the same way each time.
 */
const CUT_OFF = new Set(["EPIPE", "ECONNRESET"]);

/**
 * Whether another attempt may succeed: the server is unavailable (busy,
 * restarting, shutting down), or limiting the caller's rate (resource_exhausted
 * with Retry-After); for reads, also a deadline the server gave up at and a
 * connection cut off. Never a refusal of the request itself: a bad argument,
 * a message too large (resource_exhausted without Retry-After), a revoked key.
 */
export function retryable(error: ConnectError, read: boolean): boolean {
  if (error.code === Code.Unavailable) return true;
  if (error.code === Code.ResourceExhausted) return error.metadata.get("retry-after") !== null;
  if (error.code === Code.DeadlineExceeded) return read;
  const cause = error.cause as { code?: unknown } | undefined;
  if (typeof cause?.code !== "string") return false;
  return NOT_SENT.has(cause.code) || (read && CUT_OFF.has(cause.code));
}

/** The trailer (and error metadata) a feed that must end carries its position in. */
const RESUME_TOKEN = "resume-token";

export function createClientWith(options: MarketDataClientOptions, transportFor: TransportFactory): MarketDataClient {
  const o = {
    protocol: options.protocol ?? "connect",
    timeoutMs: options.timeoutMs ?? 30_000,
    maxAttempts: options.maxAttempts ?? 4,
    backoffMs: options.backoffMs ?? 200,
    maxBackoffMs: options.maxBackoffMs ?? 10_000,
  };
  const withKey: Interceptor = (next) => (req) => {
    req.header.set("x-api-key", options.apiKey);
    return next(req);
  };
  /** Unary calls only: a stream's retries are watch()'s, which knows where to resume. */
  const retrying: Interceptor = (next) => async (req) => {
    if (req.stream) return next(req);
    // Every read is idempotent; a write is retried only when the server said it may be.
    const read = req.service.typeName === WebhookService.typeName ? WEBHOOK_READS.has(req.method.name) : req.service.typeName !== IngestService.typeName;
    for (let attempt = 1; ; attempt++) {
      try {
        return await next(req);
      } catch (err) {
        const error = ConnectError.from(err);
        // The call's own deadline (timeoutMs) aborts its signal: that is the end, not a retry.
        if (!retryable(error, read) || attempt >= o.maxAttempts || req.signal.aborted) throw error;
        const delayMs = backoff(attempt, error);
        options.onRetry?.({ procedure: req.url.slice(req.url.indexOf("/", 8)), attempt, delayMs, error });
        await sleep(delayMs, req.signal);
      }
    }
  };
  const backoff = (attempt: number, error: ConnectError): number => {
    // The server's word first (Retry-After, or the rate-limit window's reset), then full jitter.
    const told = Number(error.metadata.get("retry-after") ?? error.metadata.get("ratelimit-reset") ?? Number.NaN);
    const jitter = Math.random() * Math.min(o.maxBackoffMs, o.backoffMs * 2 ** (attempt - 1));
    return Number.isFinite(told) && told > 0 ? Math.min(o.maxBackoffMs, told * 1000) + jitter / 4 : jitter;
  };
  const transport = transportFor(o.protocol, options.baseUrl, [withKey, retrying], o.timeoutMs);
  const asset = createClient(AssetService, transport);
  const collection = createClient(CollectionService, transport);
  const ingest = createClient(IngestService, transport);
  const webhooks = createClient(WebhookService, transport);
  const services = { asset, collection, webhooks };

  async function* pages<M extends keyof PagedLists>(method: M, request: PagedLists[M]["request"], opts: { signal?: AbortSignal } = {}): AsyncGenerator<PagedLists[M]["record"]> {
    const list = LISTS[method];
    const call = (services[list.service] as unknown as Record<string, (r: object, c: { signal?: AbortSignal }) => Promise<AnyPage>>)[method]!;
    let cursor = "";
    do {
      const page = await call({ ...request, cursor }, opts.signal === undefined ? {} : { signal: opts.signal });
      yield* (list.records?.(page) ?? (page.data as unknown[])) as PagedLists[M]["record"][];
      cursor = page.nextPage ?? page.cursor ?? "";
    } while (cursor !== "" && opts.signal?.aborted !== true);
  }


  async function* watch<K extends keyof Feeds>(feed: K, request: Feeds[K]["request"], opts: { signal?: AbortSignal } = {}): AsyncGenerator<FeedEvent<Feeds[K]["record"]>> {
    let cursor = request.cursor ?? "";
    const { service, method } = FEEDS[feed];
    const procedure = `/${method.parent.typeName}/${method.name}`;
    const client = services[service] as unknown as Record<string, (r: object, o: { signal?: AbortSignal; timeoutMs: number }) => AsyncIterable<FeedMessage>>;
    for (let attempt = 1; opts.signal?.aborted !== true; ) {
      try {
        // The stream from `cursor`, with no deadline.
        for await (const m of client[method.localName]!({ ...request, cursor }, { signal: opts.signal, timeoutMs: 0 })) {
          attempt = 1;
          cursor = m.resumeToken;
          // A message with no record only says where the stream stands (activity's): its token is kept all the same.
          const record = m.sale ?? m.listing ?? m.offer ?? m.event;
          if (record !== undefined) yield { record: record as Feeds[K]["record"], resumeToken: m.resumeToken };
          else if (m.removed?.sale !== undefined) {
            const { originalId, originalPosition } = m.removed;
            yield { record: m.removed.sale as Feeds[K]["record"], resumeToken: m.resumeToken, removed: { originalId, originalPosition } };
          }
        }
        // The server ended the stream without an error: start again where it stopped.
      } catch (err) {
        if (opts.signal?.aborted ?? false) return;
        const error = ConnectError.from(err);
        // A stream the server ended on purpose says where to resume (too slow: resource_exhausted with the token); a lost
        // connection is unavailable (or a reset: canceled, internal).
        const resumeAt = error.metadata.get(RESUME_TOKEN);
        cursor = resumeAt ?? cursor;
        const lost =
          retryable(error, true) ||
          (error.code === Code.ResourceExhausted && resumeAt !== null) ||
          error.code === Code.Canceled ||
          error.code === Code.Internal ||
          error.code === Code.Unknown;
        if (!lost) throw error;
        const delayMs = backoff(Math.min(attempt, 8), error);
        options.onRetry?.({ procedure, attempt, delayMs, error });
        attempt++;
        await sleep(delayMs, opts.signal);
      }
    }
  }

  async function* exportChunks(kind: string, request: ExportRequest, opts: { signal?: AbortSignal } = {}): AsyncGenerator<ExportChunk> {
    let position = request.position ?? "";
    let attempt = 1;
    for (;;) {
      const url = new URL(`v1/export/${encodeURIComponent(kind)}`, options.baseUrl.endsWith("/") ? options.baseUrl : `${options.baseUrl}/`);
      url.searchParams.set("contractAddress", request.contractAddress);
      if (request.chain !== undefined) url.searchParams.set("chain", request.chain);
      if (request.limit !== undefined) url.searchParams.set("limit", String(request.limit));
      if (position !== "") url.searchParams.set("position", position);
      let answer: ExportChunk | ConnectError;
      try {
        const res = await fetch(url, { headers: { "x-api-key": options.apiKey }, ...(opts.signal === undefined ? {} : { signal: opts.signal }) });
        const body = await res.text();
        answer = res.ok
          ? { lines: body === "" ? [] : body.slice(0, -1).split("\n"), position: res.headers.get("x-export-position") ?? "", done: res.headers.get("x-export-done") === "true" }
          : exportError(res, body);
      } catch (err) {
        if (opts.signal?.aborted ?? false) return;
        answer = new ConnectError(String(err), Code.Unavailable, undefined, undefined, err);
      }
      if (!(answer instanceof ConnectError)) {
        yield answer;
        if (answer.done) return;
        position = answer.position;
        attempt = 1;
        continue;
      }
      if (!retryable(answer, true) || attempt >= o.maxAttempts) throw answer;
      const delayMs = backoff(attempt, answer);
      options.onRetry?.({ procedure: `GET /v1/export/${kind}`, attempt, delayMs, error: answer });
      attempt++;
      await sleep(delayMs, opts.signal);
    }
  }

  return { asset, collection, ingest, webhooks, pages, watch, export: exportChunks };
}

/** An export's refusal: the NDJSON routes' {code: "resource_exhausted", message} as the RPCs' error, its Retry-After kept. */
function exportError(res: Response, body: string): ConnectError {
  let parsed: { code?: string; message?: string } = {};
  try {
    parsed = JSON.parse(body) as typeof parsed;
  } catch {
    // Not the service's form (a proxy's page): said by its status.
  }
  const name = (parsed.code ?? "").replace(/(^|_)([a-z])/g, (_m, _u, c: string) => c.toUpperCase()) as keyof typeof Code;
  const code = (Code[name] as Code | undefined) ?? (res.status === 429 ? Code.ResourceExhausted : res.status >= 500 ? Code.Unavailable : Code.Unknown);
  const error = new ConnectError(parsed.message ?? `${res.status} ${res.statusText}`, code);
  const retryAfter = res.headers.get("retry-after");
  if (retryAfter !== null) error.metadata.set("retry-after", retryAfter);
  return error;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done);
  });
}

export { Code, ConnectError };
