import http from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { signatureOf } from "../../bench/webhook-receiver.js";
import { terminalText } from "../../src/cli/terminal-text.js";
import { DeliveryClient, newSecret } from "../../src/service/webhooks/delivery.js";
import { checkWebhookUrl, guardedLookup, isPrivateAddress } from "../../src/service/webhooks/destination.js";
import { batchBody, messageId } from "../../src/service/webhooks/payload.js";
import { parseStart, positionsBefore, positionsText } from "../../src/service/webhooks/positions.js";
import { backoffMs, outcomeOf, RETRY_AFTER_CAP_MS, RETRY_CAP_MS, retryAfterMs } from "../../src/service/webhooks/retry.js";

// The pure parts of webhooks: where they may deliver, when they retry,
// positions, and signatures checked against the receiver's own
// implementation of the convention.

describe("webhook destinations", () => {
  const strict = { allowPrivate: false };
  const lax = { allowPrivate: true };

  it("are https with a public host unless private ones are allowed", () => {
    expect(checkWebhookUrl("https://hooks.example.com/in#frag", strict)).toBe("https://hooks.example.com/in");
    for (const url of ["http://hooks.example.com/", "https://127.0.0.1/", "https://10.1.2.3/", "https://[::1]/", "https://169.254.169.254/latest",
      "https://localhost:8443/", "https://a.localhost/", "https://[::ffff:192.168.1.1]/", "https://100.64.0.1/", "https://0.0.0.0/"]) {
      expect(() => checkWebhookUrl(url, strict), url).toThrow(/https|private/);
    }
    expect(checkWebhookUrl("http://127.0.0.1:9999/x", lax)).toBe("http://127.0.0.1:9999/x");
    expect(() => checkWebhookUrl("ftp://x/", lax)).toThrow(/http/);
    expect(() => checkWebhookUrl("https://u:p@example.com/", strict)).toThrow(/user name/);
    expect(() => checkWebhookUrl("not a url", strict)).toThrow(/absolute/);
    expect(() => checkWebhookUrl(`https://example.com/${"a".repeat(3000)}`, strict)).toThrow(/2048/);
  });

  it("know private, loopback, link-local and reserved addresses, IPv4 and IPv6", () => {
    for (const a of ["127.0.0.1", "10.0.0.1", "172.16.5.5", "192.168.0.1", "169.254.1.1", "100.64.1.1", "0.0.0.0", "224.0.0.1", "::1", "fc00::1", "fe80::1", "::ffff:10.0.0.1", "::"]) {
      expect(isPrivateAddress(a), a).toBe(true);
    }
    for (const a of ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"]) expect(isPrivateAddress(a), a).toBe(false);
  });

  it("know the IPv6 forms that reach loopback, private or IPv4 space (issue 49, item 12), and refuse them and localhost. at create", () => {
    for (const a of ["::127.0.0.1", "::7f00:1", "::ffff:0:0", "::ffff:127.0.0.1", "2002:7f00:1::1", "64:ff9b:1::a00:1", "64:ff9b::a00:1", "2001::1", "fec0::1", "2001:db8::1"]) {
      expect(isPrivateAddress(a), a).toBe(true);
    }
    for (const url of ["https://[::127.0.0.1]/", "https://[2002:7f00:1::1]/", "https://[64:ff9b:1::1]/", "https://[2001::1]/", "https://[fec0::1]/", "https://localhost./", "https://LOCALHOST/", "https://a.localhost./"]) {
      expect(() => checkWebhookUrl(url, strict), url).toThrow(/private/);
    }
  });

  it("refuse control characters rather than strip them, and name the flag where it goes (issue 49, items 13 and 15)", () => {
    for (const url of ["https://hooks.example.com/a\r\nb", "https://hooks.exa\tmple.com/", "https://hooks.example.com/\n"]) {
      expect(() => checkWebhookUrl(url, strict), JSON.stringify(url)).toThrow(/control characters/);
    }
    expect(() => checkWebhookUrl("http://hooks.example.com/", strict)).toThrow(/--allow-private-webhooks \(on `marketdata webhooks create`/);
  });
});

describe("webhook connections", () => {
  it("read no more of a receiver's answer than the log keeps: an endless 200 is a delivery, a huge 500 a short error (issue 49, item 11)", async () => {
    let written = 0;
    const server = http.createServer((req, res) => {
      req.resume();
      const status = req.url === "/fail" ? 500 : 200;
      res.writeHead(status, { "content-type": "text/plain" });
      // Without end, as fast as the connection takes it.
      const more = () => {
        while (!res.destroyed && res.write(Buffer.alloc(64 * 1024, 0x61))) written += 64 * 1024;
        if (!res.destroyed) res.once("drain", more);
      };
      res.on("close", () => undefined);
      more();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const { port } = server.address() as AddressInfo;
    const client = new DeliveryClient({ policy: { allowPrivate: true }, timeoutMs: 5000 });
    try {
      const ok = await client.post(`http://127.0.0.1:${port}/ok`, "msg_1", [newSecret()], "{}");
      expect(ok).toMatchObject({ status: 200, error: "" });
      expect(ok.latencyMs).toBeLessThan(4000);
      const failed = await client.post(`http://127.0.0.1:${port}/fail`, "msg_2", [newSecret()], "{}");
      expect(failed.status).toBe(500);
      expect(failed.error.length).toBeLessThanOrEqual(600);
      await new Promise((r) => setTimeout(r, 100));
      // What the server could write before the client closed: socket buffers, not the whole stream.
      expect(written).toBeLessThan(64 * 1024 * 1024);
    } finally {
      client.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it("refuse a name that resolves to a private address at connection time (DNS rebinding), unless allowed", async () => {
    const lookup = (allowPrivate: boolean) =>
      new Promise<{ err: NodeJS.ErrnoException | null; address: unknown }>((resolve) =>
        guardedLookup({ allowPrivate })("localhost", {}, (err, address) => resolve({ err, address })),
      );
    const strict = await lookup(false);
    expect(strict.err?.code).toBe("EPRIVATE");
    expect(strict.err?.message).toMatch(/private/);
    const lax = await lookup(true);
    expect(lax.err).toBeNull();
    expect(isPrivateAddress(String(lax.address))).toBe(true);
  });

  it("never send to a destination this server's policy refuses, whoever created the webhook", async () => {
    const client = new DeliveryClient({ policy: { allowPrivate: false }, timeoutMs: 1000 });
    const r = await client.post("http://127.0.0.1:9/hook", "msg_x", [newSecret()], "{}");
    expect(r).toMatchObject({ status: 0, latencyMs: 0 });
    expect(r.error).toMatch(/https/);
    client.close();
  });
});

describe("webhook retries", () => {
  it("back off exponentially with jitter, capped", () => {
    expect(backoffMs(1, () => 0)).toBe(500);
    expect(backoffMs(1, () => 1)).toBe(1000);
    expect(backoffMs(4, () => 1)).toBe(8000);
    expect(backoffMs(40, () => 1)).toBe(RETRY_CAP_MS);
    expect(backoffMs(40, () => 0)).toBe(RETRY_CAP_MS / 2);
  });

  it("read Retry-After as seconds or an HTTP date, bounded", () => {
    const now = Date.parse("2026-11-26T10:00:00Z");
    expect(retryAfterMs("3", now)).toBe(3000);
    expect(retryAfterMs("Thu, 26 Nov 2026 10:00:30 GMT", now)).toBe(30_000);
    expect(retryAfterMs("Thu, 26 Nov 2026 09:00:00 GMT", now)).toBe(0);
    expect(retryAfterMs("999999", now)).toBe(RETRY_AFTER_CAP_MS);
    expect(retryAfterMs("soon", now)).toBeUndefined();
    expect(retryAfterMs(undefined, now)).toBeUndefined();
  });

  it("deliver on 2xx, disable on 410, retry anything else", () => {
    expect(outcomeOf(200).kind).toBe("delivered");
    expect(outcomeOf(204).kind).toBe("delivered");
    expect(outcomeOf(410).kind).toBe("gone");
    for (const s of [0, 301, 400, 401, 429, 500, 503]) expect(outcomeOf(s).kind, String(s)).toBe("retry");
  });
});

describe("webhook positions", () => {
  it("are parsed from a position, a time or now", () => {
    expect(parseStart("", true)).toEqual({ kind: "now" });
    expect(parseStart("now", true)).toEqual({ kind: "now" });
    expect(parseStart("42", false)).toEqual({ kind: "position", position: 42 });
    expect(parseStart("2026-11-26T10:00:00Z", false)).toEqual({ kind: "time", at: Date.parse("2026-11-26T10:00:00Z") / 1000 });
    expect(parseStart("2026-11-26T11:00:00+01:00", false)).toEqual({ kind: "time", at: Date.parse("2026-11-26T10:00:00Z") / 1000 });
    expect(() => parseStart("now", false)).toThrow(/position or a time/);
    for (const bad of ["yesterday", "-1", "2026-11-26", "2026-11-26T10:00:00", "1e9"]) expect(() => parseStart(bad, true), bad).toThrow(/from must be/);
  });

  it("start a replay just before its position, shown as one number when every kind agrees", () => {
    expect(positionsBefore(10)).toEqual({ sales: 9, listings: 9, offers: 9, transfers: 9, tokens: 9 });
    expect(positionsBefore(0)).toEqual({ sales: 0, listings: 0, offers: 0, transfers: 0, tokens: 0 });
    expect(positionsText({ sales: 9, listings: 9, offers: 9, transfers: 9, tokens: 9 })).toBe("9");
    expect(positionsText({ sales: 9, listings: 3, offers: 0, transfers: 9, tokens: 2 })).toBe("sale:9,listing:3,offer:0,transfer:9,token:2");
  });
});

describe("webhook signatures", () => {
  it("are the convention's v1 HMAC-SHA256: checked by the receiver's own implementation and by standardwebhooks", () => {
    const secret = newSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const client = new DeliveryClient({ policy: { allowPrivate: false }, timeoutMs: 1000 });
    const at = new Date();
    const body = batchBody("wh_x", ['{"id":"evt_1_1"}'], at);
    const id = messageId("wh_abc", 1, 5, 9);
    expect(id).toBe("msg_abc_1_5_9");
    const header = client.sign([secret], id, at, body);
    const ts = Math.floor(at.getTime() / 1000);
    expect(header).toBe(`v1,${signatureOf(secret, id, ts, body)}`);
    expect(new Webhook(secret).verify(body, { "webhook-id": id, "webhook-timestamp": String(ts), "webhook-signature": header })).toEqual(JSON.parse(body));
    // A rotation: both signatures, either secret verifies.
    const next = newSecret();
    const both = client.sign([next, secret], id, at, body).split(" ");
    expect(both).toEqual([`v1,${signatureOf(next, id, ts, body)}`, `v1,${signatureOf(secret, id, ts, body)}`]);
    // A changed body does not verify.
    expect(signatureOf(secret, id, ts, `${body} `)).not.toBe(header.slice(3));
    client.close();
  });
});

describe("what the CLI prints of a receiver's answer (issue 49, item 8)", () => {
  it("shows control characters, C1 controls and bidi overrides as escapes", () => {
    expect(terminalText("HTTP 500: \u001b[2J\u001b[31mred\r\nfake line\u0007")).toBe("HTTP 500: \\x1b[2J\\x1b[31mred\\x0d\\x0afake line\\x07");
    expect(terminalText("a\u009bb\u202ec\u2066")).toBe("a\\x9bb\\u202ec\\u2066");
    expect(terminalText("plain text, é, 日本")).toBe("plain text, é, 日本");
  });
});
