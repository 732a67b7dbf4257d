import { collectionRef, refParts } from "../../domain/chains.js";
import { randomBytes } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { echo } from "../../domain/echo.js";
import type { FeedKind } from "../../store/ports/feed.js";
import type { ReadRepositories } from "../../store/ports/reads.js";
import type { FeedPositions, WebhookAttemptRecord, WebhookRecord, WebhookStore } from "../../store/ports/webhooks.js";
import * as p from "../params.js";
import { newSecret } from "./delivery.js";
import { checkWebhookUrl, type DestinationPolicy } from "./destination.js";
import { DEFAULT_EVENT_TYPES, FEED_KIND_OF_EVENT, FEED_KINDS } from "../../domain/kinds/index.js";
import { collectionHeads, parseStart, positionsBefore, type StartPoint } from "./positions.js";

// What an operator does with webhooks, on either side: the admin RPC
// (WebhookService, webhook-service.ts) and `marketdata webhooks` (the CLI,
// on the store directly) both call this. Errors are ConnectErrors, which
// the CLI prints as one line and the RPC answers in its protocol.

/** Collections one webhook may name. */
export const MAX_WEBHOOK_COLLECTIONS = 100;
/** Webhooks one API key may deliver for: each costs the server a lease and reads every second. */
export const MAX_WEBHOOKS_PER_KEY = 100;
/** ListWebhooks' page size: the default and the most. */
export const WEBHOOKS_PAGE = 100;
export const WEBHOOKS_PAGE_MAX = 1000;
/** How long a rotated-out secret still signs (ms): receivers switch keys in that time. */
export const ROTATION_OVERLAP_MS = 24 * 3_600_000;
/**
 * A replay from a time starts at the feed's mark this long before it: on
 * PostgreSQL a writer's transaction takes its positions before it commits,
 * so events committed just after a mark may hold positions just below it.
 */
export const REPLAY_MARGIN_SECONDS = 30;
export const ATTEMPTS_DEFAULT = 100;

export interface CreateWebhook {
  url: string;
  collections: readonly string[];
  /** The chain of its collections (domain/chains.ts); "" or absent: the default chain. */
  chain?: string;
  /** "sale", "listing", "offer", "transfer", "token"; none: the first four (DEFAULT_EVENT_TYPES). */
  types: readonly string[];
  keyId: number;
  /** "now" (or ""), a position, or a time. */
  from?: string;
  /** "final": settled sales and transfers only (docs/chains.md); "" or absent: every event. */
  finality?: string;
}

function notFound(id: string): ConnectError {
  return new ConnectError(`no webhook ${echo(id)}`, Code.NotFound);
}

function checkId(id: string): string {
  if (!/^wh_[a-z0-9]{20}$/.test(id)) throw new ConnectError(`a webhook id is "wh_" and 20 letters or digits, got ${echo(id)}`, Code.InvalidArgument);
  return id;
}

function newId(): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  return `wh_${[...randomBytes(20)].map((b) => alphabet[b % 36]).join("")}`;
}

/** A webhook's chain: its collections' (stored as references, on one chain: create()). */
export function webhookChain(rec: { collections: readonly string[] }): string {
  return refParts(rec.collections[0] ?? "").chain;
}

export class WebhookAdmin {
  constructor(
    private readonly store: ReadRepositories,
    private readonly hooks: WebhookStore,
    private readonly policy: DestinationPolicy,
  ) {}

  async create(req: CreateWebhook): Promise<{ webhook: WebhookRecord; secret: string }> {
    const url = checkWebhookUrl(req.url, this.policy);
    // Emptiness after the split: "," or " , " names no collection.
    const named = req.collections.flatMap((c) => c.split(",")).map((c) => c.trim()).filter((c) => c !== "");
    if (named.length === 0) throw p.invalid("collections must name at least one contract address");
    const chain = p.chain(req.chain ?? "");
    const finalOnly = p.finalOnly(req.finality ?? "");
    // Stored as references (domain/chains.ts collectionRef): a webhook is on one chain.
    const collections = [...new Set(named.map((c) => collectionRef(chain, p.contractAddress(c, "collections"))))];
    if (collections.length > MAX_WEBHOOK_COLLECTIONS) throw p.invalid(`collections may name at most ${MAX_WEBHOOK_COLLECTIONS} contract addresses, got ${collections.length}`);
    const types = req.types.flatMap((t) => t.split(",")).map((t) => t.trim()).filter((t) => t !== "");
    const kinds = new Set<FeedKind>();
    for (const t of types.length === 0 ? DEFAULT_EVENT_TYPES : types) {
      const kind = FEED_KIND_OF_EVENT[t];
      if (kind === undefined) throw p.invalid(`types must be among ${Object.keys(FEED_KIND_OF_EVENT).join(", ")}, got ${echo(t)}`);
      kinds.add(kind);
    }
    if (!Number.isSafeInteger(req.keyId) || req.keyId <= 0) throw p.invalid(`key id must be a positive integer, got ${req.keyId}`);
    if (!(await this.hooks.liveKeys([req.keyId])).has(req.keyId)) {
      throw new ConnectError(`no unrevoked API key ${req.keyId}: a webhook delivers for a key, and stops when it is revoked`, Code.FailedPrecondition);
    }
    const held = (await this.hooks.list()).filter((w) => w.keyId === req.keyId).length;
    if (held >= MAX_WEBHOOKS_PER_KEY) {
      throw new ConnectError(`API key ${req.keyId} has ${held} webhooks, the most one key may have (${MAX_WEBHOOKS_PER_KEY}): delete one, or use another key`, Code.ResourceExhausted);
    }
    const epoch = await this.store.feed.epoch();
    const positions = await this.#start(parseStart(req.from ?? "", true), collections);
    const secret = newSecret();
    const webhook = await this.hooks.create({ id: newId(), url, collections, kinds: FEED_KINDS.filter((k) => kinds.has(k)), keyId: req.keyId, secret, epoch, positions, finalOnly });
    return { webhook, secret };
  }

  /** Every webhook (the CLI). */
  list(): Promise<WebhookRecord[]> {
    return this.hooks.list();
  }

  /** A page of webhooks in id order after `cursor` (an id; "": the first), and the next page's cursor ("" on the last). */
  async page(limit: number, cursor: string): Promise<{ webhooks: WebhookRecord[]; cursor: string }> {
    const n = p.limit(limit === 0 ? undefined : limit, "limit", { fallback: WEBHOOKS_PAGE, max: WEBHOOKS_PAGE_MAX });
    if (cursor !== "") checkId(cursor);
    const after = (await this.hooks.list()).filter((w) => w.id > cursor).sort((a, b) => (a.id < b.id ? -1 : 1));
    const webhooks = after.slice(0, n);
    return { webhooks, cursor: after.length > n ? webhooks[n - 1]!.id : "" };
  }

  async get(id: string): Promise<WebhookRecord> {
    const found = await this.hooks.get(checkId(id));
    if (found === undefined) throw notFound(id);
    return found;
  }

  async pause(id: string): Promise<WebhookRecord> {
    return this.#found(id, await this.hooks.setState(checkId(id), "paused", null));
  }

  /** Active again from its kept position, whatever stopped it (paused, failing, disabled). */
  async resume(id: string): Promise<WebhookRecord> {
    return this.#found(id, await this.hooks.setState(checkId(id), "active", null, true));
  }

  async delete(id: string): Promise<void> {
    if (!(await this.hooks.delete(checkId(id)))) throw notFound(id);
  }

  async rotateSecret(id: string): Promise<{ webhook: WebhookRecord; secret: string }> {
    const secret = newSecret();
    const webhook = this.#found(id, await this.hooks.rotateSecret(checkId(id), secret, Date.now() + ROTATION_OVERLAP_MS));
    return { webhook, secret };
  }

  async replay(id: string, from: string): Promise<WebhookRecord> {
    const webhook = await this.get(id);
    const positions = await this.#start(parseStart(from, false), webhook.collections);
    return this.#found(id, await this.hooks.replay(webhook.id, await this.store.feed.epoch(), positions));
  }

  async attempts(id: string, limit: number): Promise<WebhookAttemptRecord[]> {
    const n = limit === 0 ? ATTEMPTS_DEFAULT : limit;
    if (!Number.isInteger(n) || n < 1 || n > 1000) throw p.invalid(`limit must be between 1 and 1000, got ${limit}`);
    await this.get(id);
    return this.hooks.attempts(id, n);
  }

  #found(id: string, record: WebhookRecord | undefined): WebhookRecord {
    if (record === undefined) throw notFound(id);
    return record;
  }

  /** The positions a webhook starts after. */
  async #start(start: StartPoint, collections: readonly string[]): Promise<FeedPositions> {
    if (start.kind === "position") {
      // Past the feed's next position, a webhook would wait for events that may never come, saying nothing.
      const next = (await this.store.feed.last()) + 1;
      if (start.position > next) {
        throw p.invalid(`from position ${start.position} is past the feed's next position (${next}): give a position up to ${next}`);
      }
      return positionsBefore(start.position);
    }
    if (start.kind === "time") {
      const mark = await this.hooks.markAt(start.at - REPLAY_MARGIN_SECONDS);
      if (mark === undefined) {
        throw new ConnectError(
          `no feed position is known for ${new Date(start.at * 1000).toISOString()} (the feed is marked while a server delivers webhooks, kept 30 days): give a position instead`,
          Code.FailedPrecondition,
        );
      }
      return positionsBefore(mark + 1);
    }
    return collectionHeads(this.store, collections);
  }
}
