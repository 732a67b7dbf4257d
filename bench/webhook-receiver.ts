import { execFileSync } from "node:child_process";
import { createHmac, timingSafeEqual } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

// A webhook receiver for the tests and the webhooks benchmark: HTTPS on
// 127.0.0.1 with a self-signed certificate made for it (openssl), checking
// every delivery's signature with its own implementation of the Standard
// Webhooks convention (node:crypto, not the standardwebhooks package the
// server signs with), and recording what arrived. What it answers is the
// caller's to script (failures, delays, 410).

export interface Delivery {
  id: string;
  timestamp: number;
  /** The body as received. */
  body: string;
  /** Parsed body. */
  payload: { type: string; timestamp: string; data: { webhookId: string; events: WebhookEventJson[] } };
  /** Each v1 signature in the header, and which secret (index into `secrets`) verified it; -1 none. */
  signatures: { signature: string; verifiedBy: number }[];
  receivedAt: number;
  /** The path the delivery was posted to (a receiver serves several webhooks on paths of their own). */
  path: string;
}

export interface WebhookEventJson {
  id: string;
  type: string;
  position: number | string;
  timestamp: number | string;
  sale?: Record<string, unknown>;
  listing?: Record<string, unknown>;
  offer?: Record<string, unknown>;
  transfer?: Record<string, unknown>;
  /** A token whose record was written (type "token"). */
  token?: Record<string, unknown>;
  /** The chain of the event's collection. */
  chain: string;
  /** A record a reorganisation took back (type "removed"). */
  removed?: { type: string; originalId: string; originalPosition: number | string; sale?: Record<string, unknown>; transfer?: Record<string, unknown> };
}

export interface ReceiverOptions {
  /** Check signatures (default true; a benchmark's receiver may leave that cost out). */
  verify?: boolean;
  /** Keep each delivery in `deliveries` (default true; a long benchmark counts in onDelivery instead). */
  record?: boolean;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  /** Wait this long before answering. */
  delayMs?: number;
}

/** A self-signed certificate for 127.0.0.1 and localhost (PEM), made with openssl in a temporary folder. */
export function selfSignedCertificate(): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), "marketdata-cert-"));
  try {
    execFileSync(
      "openssl",
      ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
        "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")],
      { stdio: "ignore" },
    );
    return { key: readFileSync(join(dir, "key.pem"), "utf8"), cert: readFileSync(join(dir, "cert.pem"), "utf8") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The convention's v1 signature, computed here: base64 of HMAC-SHA256, keyed
 * by the secret's base64 after "whsec_", over "id.timestamp.body".
 */
export function signatureOf(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  return createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64");
}

function matches(expected: string, got: string): boolean {
  const a = Buffer.from(expected);
  const b = Buffer.from(got);
  return a.length === b.length && timingSafeEqual(a, b);
}

export class WebhookReceiver {
  readonly deliveries: Delivery[] = [];
  /** Deliveries refused because no signature verified, or the headers were missing. */
  readonly unsigned: string[] = [];
  /** The secrets each delivery is checked against; set by the test once it knows them. */
  secrets: string[] = [];
  /** What to answer a delivery; default 200. */
  answer: (d: Delivery) => Answer = () => ({ status: 200 });
  /** Deliveries being answered now, per webhook: a lease broken would show two at once. */
  readonly inflight = new Map<string, number>();
  maxInflightPerWebhook = 0;
  /** Deliveries being answered now, in all, and the most at once: the server's bound per destination. */
  inflightTotal = 0;
  maxInflightTotal = 0;
  readonly #server: https.Server;
  readonly #waiters: { check: () => boolean; resolve: () => void }[] = [];
  url = "";
  readonly certificate: string;

  /** Called with each delivery taken (2xx), after it is recorded. */
  onDelivery: ((d: Delivery) => void) | undefined;
  readonly #options: ReceiverOptions;

  private constructor(cert: { key: string; cert: string }, options: ReceiverOptions) {
    this.#options = options;
    this.certificate = cert.cert;
    this.#server = https.createServer({ key: cert.key, cert: cert.cert, keepAliveTimeout: 30_000 }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8");
        const id = String(req.headers["webhook-id"] ?? "");
        const timestamp = Number(req.headers["webhook-timestamp"]);
        const header = String(req.headers["webhook-signature"] ?? "");
        const signatures = this.#options.verify === false ? [{ signature: "", verifiedBy: 0 }] : header
          .split(" ")
          .filter((s) => s.startsWith("v1,"))
          .map((s) => s.slice(3))
          .map((signature) => ({ signature, verifiedBy: this.secrets.findIndex((secret) => matches(signatureOf(secret, id, timestamp, body), signature)) }));
        if (id === "" || !Number.isFinite(timestamp) || !signatures.some((s) => s.verifiedBy >= 0)) {
          this.unsigned.push(id);
          res.writeHead(401).end("bad signature");
          return;
        }
        const delivery: Delivery = { id, timestamp, body, payload: JSON.parse(body) as Delivery["payload"], signatures, receivedAt: Date.now(), path: req.url ?? "/" };
        const webhook = delivery.payload.data.webhookId;
        const n = (this.inflight.get(webhook) ?? 0) + 1;
        this.inflight.set(webhook, n);
        this.maxInflightPerWebhook = Math.max(this.maxInflightPerWebhook, n);
        this.inflightTotal++;
        this.maxInflightTotal = Math.max(this.maxInflightTotal, this.inflightTotal);
        const answer = this.answer(delivery);
        const reply = () => {
          this.inflight.set(webhook, (this.inflight.get(webhook) ?? 1) - 1);
          this.inflightTotal--;
          if (answer.status >= 200 && answer.status < 300) {
            if (this.#options.record !== false) this.deliveries.push(delivery);
            this.onDelivery?.(delivery);
          }
          res.writeHead(answer.status, answer.headers ?? {}).end(answer.status >= 300 ? "not now" : "ok");
          this.#wake();
        };
        if (answer.delayMs !== undefined && answer.delayMs > 0) setTimeout(reply, answer.delayMs);
        else reply();
      });
    });
  }

  static async start(options: ReceiverOptions = {}, cert = selfSignedCertificate()): Promise<WebhookReceiver> {
    const r = new WebhookReceiver(cert, options);
    await new Promise<void>((resolve) => r.#server.listen(0, "127.0.0.1", resolve));
    r.url = `https://127.0.0.1:${(r.#server.address() as AddressInfo).port}`;
    return r;
  }

  /** Every event taken (2xx), in arrival order. */
  events(webhookId?: string): WebhookEventJson[] {
    return this.deliveries.filter((d) => webhookId === undefined || d.payload.data.webhookId === webhookId).flatMap((d) => d.payload.data.events);
  }

  #wake(): void {
    for (const w of [...this.#waiters]) {
      if (w.check()) {
        this.#waiters.splice(this.#waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  }

  /** Resolves once `check` holds (checked after each delivery); rejects after `timeoutMs`. */
  until(check: () => boolean, timeoutMs = 20_000): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter = {
        check,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
        reject(new Error(`receiver: condition not met within ${timeoutMs} ms (${this.deliveries.length} deliveries)`));
      }, timeoutMs);
      this.#waiters.push(waiter);
    });
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((r) => this.#server.close(r));
  }
}
