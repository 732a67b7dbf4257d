import { ConnectError } from "@connectrpc/connect";
import { openReadRepositories, openWebhookStore } from "../store/open.js";
import type { WebhookAttemptRecord, WebhookRecord } from "../store/ports/webhooks.js";
import { WebhookAdmin } from "../service/webhooks/admin.js";
import { EVENT_TYPE } from "../service/webhooks/payload.js";
import { positionsText } from "../service/webhooks/positions.js";
import { CliError } from "./errors.js";
import { terminalText } from "./terminal-text.js";

// `webhooks`: subscriptions managed on the store itself (a SQLite file's
// webhooks file, or a PostgreSQL database), as `keys` does; running servers
// pick changes up within a second. The same operations as WebhookService.

export interface WebhookCliOptions {
  db: string;
  allowPrivateWebhooks?: boolean;
}

async function withAdmin<T>(opts: WebhookCliOptions, fn: (admin: WebhookAdmin) => Promise<T>): Promise<T> {
  const store = await openReadRepositories(opts.db, { poolSize: 2 });
  let hooks;
  try {
    hooks = await openWebhookStore(opts.db);
  } catch (err) {
    await store.close();
    throw err;
  }
  try {
    return await fn(new WebhookAdmin(store, hooks, { allowPrivate: opts.allowPrivateWebhooks === true }));
  } catch (err) {
    // The service's refusals (a bad URL, no such webhook) are the user's to fix: one line.
    if (err instanceof ConnectError) throw new CliError(err.rawMessage);
    throw err;
  } finally {
    await hooks.close();
    await store.close();
  }
}

const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

function table(cells: string[][]): void {
  const rows = cells.map((r) => r.map(terminalText));
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const r of rows) process.stdout.write(`${r.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd()}\n`);
}

function describe(w: WebhookRecord): string {
  const reason = w.stateReason === null ? "" : ` (${w.stateReason})`;
  return terminalText(`${w.id} ${w.state}${reason}: ${w.url}, ${w.kinds.map((k) => EVENT_TYPE[k]).join(",")} of ${w.collections.join(",")}, key ${w.keyId}, at position ${positionsText(w.positions)}`);
}

export async function createWebhook(
  opts: WebhookCliOptions & { url: string; collections: string; chain?: string; types?: string; keyId: string; from?: string; finality?: string },
): Promise<void> {
  if (!/^[1-9][0-9]{0,15}$/.test(opts.keyId)) throw new CliError(`--key-id must be a positive integer (from "keys list"), got ${JSON.stringify(opts.keyId)}`);
  const { webhook, secret } = await withAdmin(opts, (admin) =>
    admin.create({ url: opts.url, collections: [opts.collections], chain: opts.chain ?? "", types: opts.types === undefined ? [] : [opts.types], keyId: Number(opts.keyId), from: opts.from ?? "",
      finality: opts.finality ?? "" }),
  );
  process.stderr.write(`Created webhook ${describe(webhook)}.\nIts signing secret is shown only once; give it to the receiver now:\n`);
  // The secret alone on the last line of stdout, so scripts can capture it.
  process.stdout.write(`${secret}\n`);
}

export async function listWebhooks(opts: WebhookCliOptions): Promise<void> {
  const list = await withAdmin(opts, (admin) => admin.list());
  table([
    ["ID", "STATE", "URL", "TYPES", "COLLECTIONS", "KEY", "POSITION", "CREATED", "REASON"],
    ...list.map((w) => [
      w.id,
      w.state,
      w.url,
      `${w.kinds.map((k) => EVENT_TYPE[k]).join(",")}${w.finalOnly ? " (final)" : ""}`,
      w.collections.length === 1 ? w.collections[0]! : `${w.collections.length} collections`,
      String(w.keyId),
      positionsText(w.positions),
      iso(w.createdAt),
      w.stateReason ?? "",
    ]),
  ]);
}

export async function changeWebhook(opts: WebhookCliOptions, id: string, action: "pause" | "resume" | "delete"): Promise<void> {
  if (action === "delete") {
    await withAdmin(opts, (admin) => admin.delete(id));
    process.stderr.write(`Deleted webhook ${id} and its delivery log.\n`);
    return;
  }
  const w = await withAdmin(opts, (admin) => (action === "pause" ? admin.pause(id) : admin.resume(id)));
  process.stderr.write(`${action === "pause" ? "Paused" : "Resumed"} webhook ${describe(w)}; servers apply it within a second.\n`);
}

export async function rotateWebhookSecret(opts: WebhookCliOptions, id: string): Promise<void> {
  const { webhook, secret } = await withAdmin(opts, (admin) => admin.rotateSecret(id));
  process.stderr.write(`New secret for webhook ${webhook.id}; deliveries carry signatures by both the old and the new one for 24 hours.\n`);
  process.stdout.write(`${secret}\n`);
}

export async function replayWebhook(opts: WebhookCliOptions, id: string, from: string): Promise<void> {
  const w = await withAdmin(opts, (admin) => admin.replay(id, from));
  process.stderr.write(`Webhook ${describe(w)}: every event after it is sent again, in position order.\n`);
}

export async function webhookLog(opts: WebhookCliOptions, id: string, limit: string): Promise<void> {
  if (!/^[0-9]{1,4}$/.test(limit) || Number(limit) < 1 || Number(limit) > 1000) throw new CliError(`--limit must be a number from 1 to 1000, got ${JSON.stringify(limit)}`);
  const attempts: WebhookAttemptRecord[] = await withAdmin(opts, (admin) => admin.attempts(id, Number(limit)));
  table([
    ["AT", "MESSAGE", "ATTEMPT", "EVENTS", "POSITIONS", "STATUS", "MS", "ERROR"],
    ...attempts.map((a) => [
      new Date(a.at).toISOString(),
      a.messageId,
      String(a.attempt),
      String(a.events),
      `${a.firstPosition}-${a.lastPosition}`,
      a.status === 0 ? "-" : String(a.status),
      String(a.latencyMs),
      a.error,
    ]),
  ]);
}
