import { mkdtempSync, rmSync } from "node:fs";
import Database from "better-sqlite3";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openWebhookStore, openWritableStore } from "../../src/store/open.js";
import { WEBHOOK_LOG_SIZE, type WebhookAttemptRecord, type WebhookStore } from "../../src/store/ports/webhooks.js";
import { webhooksFileOf } from "../../src/store/sqlite/webhooks.js";
import { withKeys } from "../support/engine.js";
import { createTestDatabase, skipPg } from "../support/pg.js";

// The webhooks' store on both engines: leases give each webhook to one
// holder at a time and pass on once they lapse; a holder that lost one
// writes nothing of it; progress from before a replay (another generation)
// moves no position; logs are cut back to their last WEBHOOK_LOG_SIZE
// attempts; marks map a time to the feed's position then.

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "marketdata-webhooks-store-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const engines: [string, () => Promise<{ target: string; drop(): Promise<void> }>, boolean][] = [
  ["SQLite", async () => ({ target: join(dir, `store-${Math.random()}.sqlite`), drop: async () => {} }), false],
  ["PostgreSQL", async () => { const d = await createTestDatabase(); return { target: d.url, drop: d.drop }; }, skipPg],
];

const at0 = { sales: 0, listings: 0, offers: 0, transfers: 0, tokens: 0 };
const attempt = (n: number): WebhookAttemptRecord => ({
  at: 1_700_000_000_000 + n, messageId: `msg_${n}`, events: 1, firstPosition: n, lastPosition: n, status: 200, latencyMs: 3, error: "", attempt: 1,
});

for (const [name, open, skip] of engines) {
  describe.skipIf(skip)(`webhooks store (${name})`, () => {
    let target: string;
    let drop: () => Promise<void>;
    let hooks: WebhookStore;
    let keyId: number;
    beforeAll(async () => {
      ({ target, drop } = await open());
      await (await openWritableStore(target, { migrateEmpty: true })).close();
      keyId = await withKeys(target, async (admin) => (await admin.create("k")).id);
      hooks = await openWebhookStore(target);
    });
    afterAll(async () => {
      await hooks?.close();
      await drop?.();
    });

    const create = (id: string) =>
      hooks.create({ id, url: "https://example.com/h", collections: ["0x" + "a".repeat(40)], kinds: ["sales"], keyId, secret: "whsec_x", epoch: "e", positions: at0 });

    it("lease each webhook to one holder at a time, and pass it on once the lease lapses", async () => {
      await create("wh_lease00000000000000a");
      await create("wh_lease00000000000000b");
      const a = await hooks.lease("A", 400, 1000);
      expect(a.map((w) => w.id).sort()).toEqual(["wh_lease00000000000000a", "wh_lease00000000000000b"]);
      expect(await hooks.lease("B", 400, 1000)).toEqual([]);
      // A renews; B still gets nothing.
      expect((await hooks.lease("A", 400, 1000)).length).toBe(2);
      expect(await hooks.lease("B", 400, 1000)).toEqual([]);
      // A stops renewing: B takes both once A's lease lapses, and A's progress is refused.
      await new Promise((r) => setTimeout(r, 600));
      expect((await hooks.lease("B", 5000, 1000)).length).toBe(2);
      const lost = await hooks.commit("A", [{ id: "wh_lease00000000000000a", generation: 1, positions: { ...at0, sales: 9 }, attempts: [attempt(1)] }]);
      expect(lost).toEqual(["wh_lease00000000000000a"]);
      expect((await hooks.get("wh_lease00000000000000a"))!.positions.sales).toBe(0);
      expect(await hooks.attempts("wh_lease00000000000000a", 10)).toEqual([]);
      // B's progress is written; a release lets A take them at once.
      expect(await hooks.commit("B", [{ id: "wh_lease00000000000000a", generation: 1, positions: { ...at0, sales: 9 }, attempts: [attempt(1)] }])).toEqual([]);
      expect((await hooks.get("wh_lease00000000000000a"))!.positions.sales).toBe(9);
      await hooks.release("B");
      expect((await hooks.lease("A", 5000, 1000)).length).toBe(2);
      // A paused webhook is leased to nobody.
      await hooks.setState("wh_lease00000000000000b", "paused", null);
      expect((await hooks.lease("A", 5000, 1000)).map((w) => w.id)).toEqual(["wh_lease00000000000000a"]);
      await hooks.release("A");
    });

    it("write no positions from before a replay, but keep its attempts", async () => {
      await create("wh_replay0000000000000a");
      const [w] = (await hooks.lease("C", 5000, 1000)).filter((x) => x.id === "wh_replay0000000000000a");
      const replayed = await hooks.replay(w!.id, "e", { ...at0, sales: 3 });
      expect(replayed!.generation).toBe(w!.generation + 1);
      await hooks.commit("C", [{ id: w!.id, generation: w!.generation, positions: { ...at0, sales: 50 }, attempts: [attempt(7)] }]);
      const after = await hooks.get(w!.id);
      expect(after!.positions.sales).toBe(3);
      expect((await hooks.attempts(w!.id, 10)).map((a) => a.messageId)).toEqual(["msg_7"]);
      await hooks.release("C");
    });

    it(`cut a log back to its last ${WEBHOOK_LOG_SIZE} attempts when asked`, async () => {
      await create("wh_log000000000000000a");
      await hooks.lease("D", 60_000, 1000);
      for (let i = 0; i < 11; i++) {
        const attempts = Array.from({ length: 100 }, (_, j) => attempt(i * 100 + j));
        await hooks.commit("D", [{ id: "wh_log000000000000000a", generation: 1, attempts, trim: i === 10 }]);
      }
      const log = await hooks.attempts("wh_log000000000000000a", 1000);
      expect(log).toHaveLength(WEBHOOK_LOG_SIZE);
      expect(log[0]!.messageId).toBe("msg_1099");
      expect(log.at(-1)!.messageId).toBe("msg_100");
      await hooks.delete("wh_log000000000000000a");
      expect(await hooks.attempts("wh_log000000000000000a", 10)).toEqual([]);
      await hooks.release("D");
    });

    it("map a time to the feed's position by the latest mark at or before it", async () => {
      await hooks.mark(1000, 10, 10_000);
      await hooks.mark(1010, 25, 10_000);
      await hooks.mark(1010, 99, 10_000); // a second mark in the same second keeps the first
      expect(await hooks.markAt(999)).toBeUndefined();
      expect(await hooks.markAt(1005)).toBe(10);
      expect(await hooks.markAt(2000)).toBe(25);
      // Marks older than what is kept are dropped.
      await hooks.mark(20_000, 30, 100);
      expect(await hooks.markAt(1500)).toBeUndefined();
    });

    it("say which keys stand", async () => {
      const revoked = await withKeys(target, async (admin) => {
        const k = await admin.create("gone");
        await admin.revoke(k.id);
        return k.id;
      });
      expect([...(await hooks.liveKeys([keyId, revoked, 999_999]))]).toEqual([keyId]);
    });

    it("keep whether a webhook is of settled data only (finality=final)", async () => {
      const every = await create("wh_final0000000000000a");
      const final = await hooks.create({ id: "wh_final0000000000000b", url: "https://example.com/h", collections: ["0x" + "a".repeat(40)], kinds: ["sales"], keyId, secret: "whsec_x", epoch: "e", positions: at0, finalOnly: true });
      expect([every.finalOnly, final.finalOnly]).toEqual([false, true]);
      expect((await hooks.get("wh_final0000000000000b"))?.finalOnly).toBe(true);
    });
  });
}

describe("a SQLite webhooks file made before finality=final webhooks", () => {
  it("takes the column when opened, its webhooks answering every event", async () => {
    const target = join(dir, "old-webhooks.sqlite");
    await (await openWritableStore(target, { migrateEmpty: true })).close();
    const keyId = await withKeys(target, async (admin) => (await admin.create("k")).id);
    const made = await openWebhookStore(target);
    await made.create({ id: "wh_old00000000000000000", url: "https://example.com/h", collections: ["0x" + "a".repeat(40)], kinds: ["sales"], keyId, secret: "whsec_x", epoch: "e", positions: at0 });
    await made.close();
    // As an older build left it: no final_only column.
    const file = new Database(webhooksFileOf(target));
    file.exec("ALTER TABLE webhooks DROP COLUMN final_only");
    file.close();
    const hooks = await openWebhookStore(target);
    try {
      expect((await hooks.get("wh_old00000000000000000"))?.finalOnly).toBe(false);
    } finally {
      await hooks.close();
    }
  });
});
