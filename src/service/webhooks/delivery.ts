import http from "node:http";
import https from "node:https";
import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { checkWebhookUrl, type DestinationPolicy, guardedLookup } from "./destination.js";

// One delivery attempt: the batch POSTed with the Standard Webhooks headers
// (webhook-id, webhook-timestamp, webhook-signature: v1, HMAC-SHA256 over
// "id.timestamp.body", signed by the standardwebhooks package), over a
// keep-alive connection per destination, bounded in time; the answer's body
// is read and dropped: at most RESPONSE_BYTES of it, kept for the log; an
// answer longer than that closes its connection unread.

const RESPONSE_BYTES = 512;

export interface DeliveryClientOptions {
  policy: DestinationPolicy;
  /** The whole attempt: connect, send, the answer's status and body. */
  timeoutMs: number;
  /** Extra certificate authorities receivers may use (PEM), beyond Node's. */
  ca?: string | undefined;
  /** The User-Agent sent. */
  userAgent?: string;
}

export interface DeliveryResult {
  /** HTTP status; 0: no answer. */
  status: number;
  latencyMs: number;
  retryAfter?: string | undefined;
  /** What went wrong, for the log; "" when delivered. */
  error: string;
}

/** A new "whsec_" secret: 32 random bytes, base64, as the convention's keys are. */
export function newSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}

export class DeliveryClient {
  readonly #options: DeliveryClientOptions;
  readonly #agents = new Map<string, http.Agent>();
  readonly #signers = new Map<string, Webhook>();
  readonly #lookup: ReturnType<typeof guardedLookup>;

  constructor(options: DeliveryClientOptions) {
    this.#options = options;
    this.#lookup = guardedLookup(options.policy);
  }

  #agent(url: URL): http.Agent {
    let agent = this.#agents.get(url.origin);
    if (agent === undefined) {
      const common = { keepAlive: true, keepAliveMsecs: 1000, maxFreeSockets: 4, timeout: this.#options.timeoutMs };
      agent = url.protocol === "https:" ? new https.Agent({ ...common, ...(this.#options.ca === undefined ? {} : { ca: this.#options.ca }) }) : new http.Agent(common);
      this.#agents.set(url.origin, agent);
    }
    return agent;
  }

  #signer(secret: string): Webhook {
    let signer = this.#signers.get(secret);
    if (signer === undefined) {
      signer = new Webhook(secret);
      if (this.#signers.size > 10_000) this.#signers.clear();
      this.#signers.set(secret, signer);
    }
    return signer;
  }

  /** The webhook-signature header: one v1 signature per secret (the current one, and the previous during a rotation), space-separated. */
  sign(secrets: readonly string[], id: string, at: Date, body: string): string {
    return secrets.map((s) => this.#signer(s).sign(id, at, body)).join(" ");
  }

  /** Sends one attempt; never throws. */
  post(target: string, id: string, secrets: readonly string[], body: string): Promise<DeliveryResult> {
    const started = performance.now();
    const at = new Date();
    try {
      // Checked at each attempt: a webhook made elsewhere (another server's flags, the CLI) is held to this server's policy.
      checkWebhookUrl(target, this.#options.policy);
    } catch (err) {
      return Promise.resolve({ status: 0, latencyMs: 0, error: err instanceof Error ? err.message : String(err) });
    }
    const url = new URL(target);
    const headers = {
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(body)),
      "user-agent": this.#options.userAgent ?? "marketdata-webhooks/1",
      "webhook-id": id,
      "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
      "webhook-signature": this.sign(secrets, id, at, body),
    };
    return new Promise<DeliveryResult>((resolve) => {
      let settled = false;
      const done = (status: number, error: string, retryAfter?: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ status, error, latencyMs: Math.round(performance.now() - started), ...(retryAfter === undefined ? {} : { retryAfter }) });
      };
      const send = url.protocol === "https:" ? https.request : http.request;
      const req = send(url, { method: "POST", headers, agent: this.#agent(url), lookup: this.#lookup as never }, (res) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        const finish = () => {
          const status = res.statusCode ?? 0;
          const ok = status >= 200 && status < 300;
          const text = ok ? "" : `HTTP ${status}${kept > 0 ? `: ${Buffer.concat(chunks).subarray(0, RESPONSE_BYTES).toString("utf8").replace(/\s+/g, " ").trim()}` : ""}`;
          const retryAfter = res.headers["retry-after"];
          done(status, text, typeof retryAfter === "string" ? retryAfter : undefined);
        };
        res.on("data", (chunk: Buffer) => {
          chunks.push(chunk);
          kept += chunk.length;
          // Past what the log keeps, the rest is not read: a receiver answering a
          // gigabyte, or without end, costs one connection (closed), not a core.
          if (kept >= RESPONSE_BYTES) {
            finish();
            res.destroy();
          }
        });
        res.on("end", finish);
        res.on("error", (err) => done(0, `reading the answer: ${err.message}`));
      });
      const timer = setTimeout(() => {
        req.destroy(new Error(`no answer within ${this.#options.timeoutMs} ms`));
      }, this.#options.timeoutMs);
      req.on("error", (err: NodeJS.ErrnoException) => done(0, err.code === "EPRIVATE" ? err.message : `${err.code ?? "error"}: ${err.message}`));
      req.end(body);
    });
  }

  close(): void {
    for (const agent of this.#agents.values()) agent.destroy();
    this.#agents.clear();
  }
}
