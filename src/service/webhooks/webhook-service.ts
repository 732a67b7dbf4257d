import { refParts } from "../../domain/chains.js";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import {
  CreateWebhookResponseSchema,
  DeleteWebhookResponseSchema,
  GetWebhookResponseSchema,
  ListWebhookAttemptsResponseSchema,
  ListWebhooksResponseSchema,
  PauseWebhookResponseSchema,
  ReplayWebhookResponseSchema,
  ResumeWebhookResponseSchema,
  RotateWebhookSecretResponseSchema,
  type Webhook,
  WebhookAttemptSchema,
  type WebhookService,
  WebhookSchema,
} from "../../../gen/marketdata/v1/webhook_service_pb.js";
import { StoreReadOnlyError, StoreUnavailableError } from "../../store/ports/errors.js";
import type { WebhookAttemptRecord, WebhookRecord } from "../../store/ports/webhooks.js";
import { streamCaller } from "../watch.js";
import { type WebhookAdmin, webhookChain } from "./admin.js";
import type { WebhookStats } from "./held.js";
import { EVENT_TYPE } from "./payload.js";
import { positionsList } from "./positions.js";

// WebhookService: the admin RPC over WebhookAdmin. The transport admits
// only keys with the admin scope (policy/admission.ts); a webhook created
// without a key id delivers for the calling key.

export function toWebhookMessage(r: WebhookRecord, stats?: WebhookStats): Webhook {
  return create(WebhookSchema, {
    id: r.id,
    url: r.url,
    chain: webhookChain(r),
    collections: r.collections.map((c) => refParts(c).address),
    types: r.kinds.map((k) => EVENT_TYPE[k]),
    keyId: BigInt(r.keyId),
    state: r.state,
    stateReason: r.stateReason ?? "",
    createdAt: BigInt(r.createdAt),
    positions: positionsList(r.positions).map(BigInt),
    lagSeconds: BigInt(stats?.lagSeconds ?? 0),
    finality: r.finalOnly ? "final" : "",
  });
}

function toAttemptMessage(a: WebhookAttemptRecord) {
  return create(WebhookAttemptSchema, {
    at: BigInt(a.at),
    messageId: a.messageId,
    events: a.events,
    firstPosition: BigInt(a.firstPosition),
    lastPosition: BigInt(a.lastPosition),
    status: a.status,
    latencyMs: a.latencyMs,
    error: a.error,
    attempt: a.attempt,
  });
}

/** The webhooks of a server as the services see them: their administration, and this process's delivery figures. */
export interface WebhookDeps {
  admin: WebhookAdmin;
  stats: () => readonly WebhookStats[];
}

export function createWebhookService(admin: WebhookAdmin, stats: () => readonly WebhookStats[] = () => []): ServiceImpl<typeof WebhookService> {
  const message = (r: WebhookRecord) => toWebhookMessage(r, stats().find((s) => s.id === r.id));
  return storeErrorsSaid({
    async createWebhook(req, ctx: HandlerContext) {
      const keyId = req.keyId === 0n ? (ctx.values.get(streamCaller) ?? 0) : Number(req.keyId);
      const { webhook, secret } = await admin.create({ url: req.url, collections: req.collections, chain: req.chain, types: req.types, keyId, from: req.from, finality: req.finality });
      return create(CreateWebhookResponseSchema, { webhook: message(webhook), secret });
    },
    async listWebhooks(req) {
      const page = await admin.page(req.limit, req.cursor);
      return create(ListWebhooksResponseSchema, { webhooks: page.webhooks.map(message), cursor: page.cursor });
    },
    async getWebhook(req) {
      return create(GetWebhookResponseSchema, { webhook: message(await admin.get(req.id)) });
    },
    async pauseWebhook(req) {
      return create(PauseWebhookResponseSchema, { webhook: message(await admin.pause(req.id)) });
    },
    async resumeWebhook(req) {
      return create(ResumeWebhookResponseSchema, { webhook: message(await admin.resume(req.id)) });
    },
    async deleteWebhook(req) {
      await admin.delete(req.id);
      return create(DeleteWebhookResponseSchema, {});
    },
    async rotateWebhookSecret(req) {
      const { webhook, secret } = await admin.rotateSecret(req.id);
      return create(RotateWebhookSecretResponseSchema, { webhook: message(webhook), secret });
    },
    async replayWebhook(req) {
      return create(ReplayWebhookResponseSchema, { webhook: message(await admin.replay(req.id, req.from)) });
    },
    async listWebhookAttempts(req) {
      return create(ListWebhookAttemptsResponseSchema, { attempts: (await admin.attempts(req.id, req.limit)).map(toAttemptMessage) });
    },
  });
}

/** Each method's store failures as the caller's codes: a replica's refusal (failed_precondition), an unreachable store (unavailable). */
function storeErrorsSaid<T extends object>(impl: T): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(impl) as [string, (...args: unknown[]) => Promise<unknown>][]) {
    wrapped[name] = async (...args: unknown[]) => {
      try {
        return await fn(...args);
      } catch (err) {
        if (err instanceof StoreReadOnlyError) throw new ConnectError(err.message, Code.FailedPrecondition);
        if (err instanceof StoreUnavailableError) throw new ConnectError(err.message, Code.Unavailable);
        throw err;
      }
    };
  }
  return wrapped as T;
}
