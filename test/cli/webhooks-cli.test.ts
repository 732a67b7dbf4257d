import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openWebhookStore } from "../../src/store/open.js";
import { runCli } from "./run-cli.js";

// `marketdata webhooks` as an operator uses it: every subcommand has --help;
// mistakes are one line and exit 1; the secret is alone on stdout.

const C = "0x1234567890123456789012345678901234567890";
let dir: string;
let db: string;
let keyId: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "marketdata-webhooks-cli-"));
  db = join(dir, "store.sqlite");
  expect(runCli(["keys", "create", "--db", db, "--name", "k"]).status).toBe(0);
  keyId = "1";
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("marketdata webhooks", () => {
  it.each(["create", "list", "pause", "resume", "delete", "rotate-secret", "replay", "log"])("%s has --help", (sub) => {
    const r = runCli(["webhooks", sub, "--help"]);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/Usage: marketdata webhooks/);
    expect(r.stdout).toMatch(/--db/);
  });

  it("says plainly what is wrong", () => {
    const base = ["webhooks", "create", "--db", db, "--collections", C, "--key-id", keyId];
    for (const [args, message] of [
      [[...base, "--url", "http://example.com/h"], /must be https/],
      [[...base, "--url", "https://169.254.169.254/"], /private address/],
      [[...base, "--url", "https://example.com/h", "--types", "sale,mint"], /types must be among/],
      [[...base, "--url", "https://example.com/h", "--from", "yesterday"], /from must be/],
      [[...base, "--url", "https://example.com/h", "--finality", "safe"], /finality must be "final" or ""/],
      [["webhooks", "create", "--db", db, "--url", "https://example.com/h", "--collections", ",", "--key-id", keyId], /collections must name at least one/],
      [["webhooks", "create", "--db", db, "--url", "https://example.com/h", "--collections", "nope", "--key-id", keyId], /collections must be 0x/],
      [["webhooks", "create", "--db", db, "--url", "https://example.com/h", "--collections", C, "--key-id", "77"], /no unrevoked API key 77/],
      [["webhooks", "pause", "--db", db, "wh_aaaaaaaaaaaaaaaaaaaa"], /no webhook/],
      [["webhooks", "replay", "--db", db, "nope", "--from", "1"], /webhook id is "wh_"/],
      [["webhooks", "log", "--db", db, "wh_aaaaaaaaaaaaaaaaaaaa", "--limit", "5000"], /--limit must be/],
    ] as const) {
      const r = runCli([...args]);
      expect(r.status, args.join(" ")).toBe(1);
      expect(r.stderr, args.join(" ")).toMatch(message);
      expect(r.stderr.trim().split("\n"), args.join(" ")).toHaveLength(1);
    }
  });

  it("create takes a private destination with --allow-private-webhooks or ALLOW_PRIVATE_WEBHOOKS, as serve does, and not without", () => {
    const args = ["webhooks", "create", "--db", db, "--collections", C, "--key-id", keyId, "--url", "http://127.0.0.1:9/hook"];
    expect(runCli(args).stderr).toMatch(/must be https|private address/);
    const byFlag = runCli([...args, "--allow-private-webhooks"]);
    expect(byFlag.status, byFlag.stderr).toBe(0);
    const byVariable = runCli(args, undefined, { ALLOW_PRIVATE_WEBHOOKS: "true" });
    expect(byVariable.status, byVariable.stderr).toBe(0);
    expect(runCli(args, undefined, { ALLOW_PRIVATE_WEBHOOKS: "false" }).status).toBe(1);
  });

  it("create, pause, resume, rotate-secret, replay, delete", () => {
    const created = runCli(["webhooks", "create", "--db", db, "--url", "https://hooks.example.com/in", "--collections", `${C},${C.toUpperCase().replace("0X", "0x")}`, "--key-id", keyId, "--from", "0"]);
    expect(created.status, created.stderr).toBe(0);
    expect(created.stdout.trim()).toMatch(/^whsec_[A-Za-z0-9+/=]{44}$/);
    const id = /Created webhook (wh_[a-z0-9]{20})/.exec(created.stderr)![1]!;
    expect(created.stderr).toContain(`sale,listing,offer,transfer of ${C}, key 1, at position 0`);
    expect(runCli(["webhooks", "pause", "--db", db, id]).stderr).toMatch(/Paused webhook .* paused/);
    expect(runCli(["webhooks", "list", "--db", db]).stdout).toMatch(new RegExp(`${id}\\s+paused\\s+https://hooks.example.com/in`));
    expect(runCli(["webhooks", "resume", "--db", db, id]).stderr).toMatch(/Resumed webhook .* active/);
    const rotated = runCli(["webhooks", "rotate-secret", "--db", db, id]);
    expect(rotated.stdout.trim()).toMatch(/^whsec_/);
    expect(rotated.stdout.trim()).not.toBe(created.stdout.trim());
    // The store holds no event yet: a replay past the feed's next position would wait silently (issue 49, item 10).
    expect(runCli(["webhooks", "replay", "--db", db, id, "--from", "42"]).stderr).toMatch(/from position 42 is past the feed's next position \(1\)/);
    expect(runCli(["webhooks", "replay", "--db", db, id, "--from", "1"]).stderr).toMatch(/at position 0: every event after it is sent again/);
    expect(runCli(["webhooks", "log", "--db", db, id]).stdout.trim()).toMatch(/^AT\s+MESSAGE/);
    expect(runCli(["webhooks", "delete", "--db", db, id]).status).toBe(0);
    expect(runCli(["webhooks", "list", "--db", db]).stdout).not.toContain(id);
    // A webhook of settled data only says so in the list.
    const final = runCli(["webhooks", "create", "--db", db, "--url", "https://hooks.example.com/final", "--collections", C, "--key-id", keyId, "--types", "sale", "--finality", "final"]);
    expect(final.status, final.stderr).toBe(0);
    expect(runCli(["webhooks", "list", "--db", db]).stdout).toMatch(/https:\/\/hooks\.example\.com\/final\s+sale \(final\)/);
  });

  it("log shows a receiver's control characters as escapes, never raw (issue 49, item 8)", async () => {
    const created = runCli(["webhooks", "create", "--db", db, "--url", "https://hooks.example.com/log", "--collections", C, "--key-id", keyId]);
    expect(created.status, created.stderr).toBe(0);
    const id = /webhook (wh_[a-z0-9]{20})/.exec(created.stderr)![1]!;
    const hooks = await openWebhookStore(db);
    try {
      const held = (await hooks.lease("test", 60_000, 1000)).find((w) => w.id === id)!;
      const error = "HTTP 500: \u001b[2J\u001b[31mred\r\nfake line\u0007\u202e";
      await hooks.commit("test", [{ id, generation: held.generation, attempts: [{ at: 1_700_000_000_000, messageId: "msg_x", events: 1, firstPosition: 1, lastPosition: 1, status: 500, latencyMs: 3, error, attempt: 1 }] }]);
      await hooks.release("test");
    } finally {
      await hooks.close();
    }
    const log = runCli(["webhooks", "log", "--db", db, id]);
    expect(log.status, log.stderr).toBe(0);
    expect(log.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f\u202e]/);
    expect(log.stdout.trim().split("\n")).toHaveLength(2);
    expect(log.stdout).toContain("HTTP 500: \\x1b[2J\\x1b[31mred\\x0d\\x0afake line\\x07\\u202e");
  });
});
