import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServeProcess, startServe } from "../../src/cli/run-sync.js";
import { WebhookReceiver } from "../../bench/webhook-receiver.js";
import { createTestDatabase, skipPg } from "../support/pg.js";
import { numberedSale } from "../support/sales.js";
import { runCli } from "./run-cli.js";

// Webhooks across processes, as an operator runs them: subscriptions made
// with `marketdata webhooks create`, two `serve` processes on one store
// (a SQLite file; a PostgreSQL database), the second with two workers, a
// receiver that answers slowly so
// batches are in flight. Each webhook is delivered by one process at a time
// (the receiver never sees two of its batches at once); SIGKILL of the
// process delivering them mid-batch loses nothing: the other takes the
// webhooks over once their leases lapse, and resends at most the batches
// whose receipt was not yet written. SIGTERM writes every position: a
// restarted server sends nothing twice.

const C = "0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee";
const WEBHOOKS = 3;
const BATCH = 100;

const engines: { name: string; skip: boolean; store: () => Promise<{ db: string; cleanup(): Promise<void> }> }[] = [
  {
    name: "sqlite",
    skip: false,
    store: async () => {
      const dir = mkdtempSync(join(tmpdir(), "marketdata-webhooks-"));
      return { db: join(dir, "store.sqlite"), cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
    },
  },
  {
    name: "postgres",
    skip: skipPg,
    store: async () => {
      const d = await createTestDatabase();
      return { db: d.url, cleanup: d.drop };
    },
  },
];

function cli(args: string[]): string {
  const r = runCli(args);
  expect(r.status, r.stderr).toBe(0);
  return r.stdout.trim();
}

for (const engine of engines) {
  describe.skipIf(engine.skip)(`webhooks across processes (${engine.name})`, () => {
    const ctx = {} as { db: string; cleanup(): Promise<void>; receiver: WebhookReceiver; caFile: string; ingest: string; ids: string[]; servers: ServeProcess[] };
    let n = 0;

    beforeAll(async () => {
      Object.assign(ctx, await engine.store());
      ctx.servers = [];
      ctx.receiver = await WebhookReceiver.start();
      ctx.caFile = join(mkdtempSync(join(tmpdir(), "marketdata-ca-")), "ca.pem");
      writeFileSync(ctx.caFile, ctx.receiver.certificate);
      cli(["migrate", "--db", ctx.db]);
      ctx.ingest = cli(["keys", "create", "--db", ctx.db, "--name", "indexer", "--scope", "ingest"]).split("\n").pop()!;
      const keyId = /^\s*(\d+)\s+indexer/m.exec(cli(["keys", "list", "--db", ctx.db]))![1]!;
      // Refused without --allow-private-webhooks: a loopback receiver is an SSRF target.
      const refused = runCli(["webhooks", "create", "--db", ctx.db, "--url", `${ctx.receiver.url}/x`, "--collections", C, "--key-id", keyId]);
      expect(refused.status).toBe(1);
      expect(refused.stderr).toMatch(/loopback or private address.*--allow-private-webhooks/);
      ctx.ids = [];
      for (let i = 0; i < WEBHOOKS; i++) {
        const r = runCli(["webhooks", "create", "--db", ctx.db, "--url", `${ctx.receiver.url}/w${i}`, "--collections", C, "--types", "sale", "--key-id", keyId, "--allow-private-webhooks"]);
        expect(r.status, r.stderr).toBe(0);
        ctx.receiver.secrets.push(r.stdout.trim());
        ctx.ids.push(/Created webhook (wh_[a-z0-9]{20})/.exec(r.stderr)![1]!);
      }
      const list = cli(["webhooks", "list", "--db", ctx.db]);
      for (const id of ctx.ids) expect(list).toContain(id);
      // Slow answers: a SIGKILL lands while batches are in flight.
      ctx.receiver.answer = () => ({ status: 200, delayMs: 40 });
    });

    afterAll(async () => {
      for (const s of ctx.servers ?? []) await s.stop(2000);
      await ctx.receiver?.close();
      if (ctx.caFile !== undefined) rmSync(join(ctx.caFile, ".."), { recursive: true, force: true });
      await ctx.cleanup?.();
    });

    const serve = async (workers = 1) => {
      const s = await startServe([
        "--db", ctx.db, "--port", "0", "--workers", String(workers), "--log-level", "info", "--ingest-rate-limit", "0",
        "--allow-private-webhooks", "--webhook-ca", ctx.caFile, "--webhook-lease-seconds", "3", "--webhook-timeout", "1", "--no-derive-refresh",
      ]);
      ctx.servers.push(s);
      return s;
    };
    const ingest = async (server: ServeProcess, count: number) => {
      const sales = Array.from({ length: count }, () => numberedSale(++n, C));
      const r = await fetch(`${server.url}/v1/ingest/sales`, {
        method: "POST",
        headers: { "x-api-key": ctx.ingest, "content-type": "application/x-ndjson" },
        body: sales.map((s) => JSON.stringify(s)).join("\n"),
      });
      expect(r.status, await r.text()).toBe(200);
      return sales.map((s) => s.hash as string);
    };
    /** Each webhook's events once each (first arrival), and how many arrived again. */
    const received = (id: string) => {
      const first = new Map<string, { hash: string; position: number }>();
      let again = 0;
      for (const e of ctx.receiver.events(id)) {
        if (first.has(e.id)) again++;
        else first.set(e.id, { hash: e.sale!.hash as string, position: Number(e.position) });
      }
      return { events: [...first.values()], again };
    };

    it("one process at a time per webhook; SIGKILL mid-batch loses nothing; SIGTERM keeps every position", async () => {
      const a = await serve();
      const sent: string[] = [];
      sent.push(...(await ingest(a, 200)));
      // A holds every webhook (B is not yet running) and is delivering.
      await ctx.receiver.until(() => ctx.ids.every((id) => ctx.receiver.events(id).length > 0), 20_000);
      // B runs two workers: after A dies, they share its webhooks, each one delivering any given webhook alone.
      const b = await serve(2);
      for (let i = 0; i < 4; i++) sent.push(...(await ingest(a, 50)));
      // SIGKILL while a batch is being answered.
      await ctx.receiver.until(() => [...ctx.receiver.inflight.values()].some((v) => v > 0), 20_000);
      a.child.kill("SIGKILL");
      await new Promise((r) => a.child.once("exit", r));
      for (let i = 0; i < 4; i++) sent.push(...(await ingest(b, 50)));
      await ctx.receiver.until(() => ctx.ids.every((id) => received(id).events.length >= sent.length), 45_000);
      for (const id of ctx.ids) {
        const { events, again } = received(id);
        expect(events.map((e) => e.hash), id).toEqual(sent);
        // Duplicates only across the crash: at most the batches A had sent without writing their receipt.
        expect(again, id).toBeLessThanOrEqual(3 * BATCH);
      }
      expect(ctx.receiver.maxInflightPerWebhook).toBe(1);
      expect(ctx.receiver.unsigned).toEqual([]);

      // SIGTERM: positions written, leases given back; a server started again sends nothing twice.
      await b.stop();
      expect(b.child.exitCode).toBe(0);
      const before = ctx.ids.map((id) => ctx.receiver.events(id).length);
      const c = await serve();
      const more = await ingest(c, 20);
      await ctx.receiver.until(() => ctx.ids.every((id) => received(id).events.length >= sent.length + more.length), 20_000);
      ctx.ids.forEach((id, i) => {
        expect(ctx.receiver.events(id).slice(before[i]).map((e) => e.sale!.hash), id).toEqual(more);
      });
      // The log of attempts, through the CLI.
      const log = cli(["webhooks", "log", "--db", ctx.db, ctx.ids[0]!, "--limit", "5"]);
      expect(log.split("\n")[0]).toMatch(/^AT\s+MESSAGE\s+ATTEMPT\s+EVENTS\s+POSITIONS\s+STATUS\s+MS\s+ERROR/);
      expect(log).toMatch(/ 200 /);
    }, 120_000);
  });
}
