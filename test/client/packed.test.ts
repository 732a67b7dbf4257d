import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withKeys } from "../support/engine.js";
import { buildFixture, COLLECTION, type Fixture } from "../support/fixture.js";
import { jsonLines, runJsonLines } from "../support/json-lines.js";
import { numberedSale } from "../support/sales.js";
import { ingestOk, restListAll, startTestServer, type TestServer } from "../support/server.js";
import { EVERY_RPC } from "../support/rpc-names.js";
import { expectEveryListPaged, type ListReads, offerNow } from "../support/client-lists.js";
import { resolveWebhooks } from "../../src/config/serve.js";

// @marketdata/client as a user gets it: `npm pack ./packages/client`, the
// tarball installed into a directory outside the repository, and a
// TypeScript program there (fixtures/program.ts) type-checked by tsc and run
// by node against a real server: every RPC on every protocol (webhook
// administration with an admin key), every list paged to the end, every
// feed watched, a watch that survives a server restart, and backoff on 429.
// A misspelt request field must not compile.

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const FIXTURES = fileURLToPath(new URL("./fixtures/", import.meta.url));
const TSC = join(ROOT, "node_modules/typescript/bin/tsc");
const NODE_TYPES = (JSON.parse(readFileSync(join(ROOT, "node_modules/@types/node/package.json"), "utf8")) as { version: string }).version;

let f: Fixture;
let server: TestServer;
let dir: string;
let ingestKey: string;
let adminKey: string;
/** The server's options: webhooks to loopback allowed (the program's go to a local port nothing listens on). */
const SERVER = { rateLimit: 0, ingestRateLimit: 0, webhooks: resolveWebhooks({ allowPrivateWebhooks: true }) };

beforeAll(async () => {
  f = buildFixture();
  [ingestKey, adminKey] = await withKeys(f.dbPath, async (admin) => [
    (await admin.create("client-test", { scope: "ingest" })).key,
    (await admin.create("client-admin", { scope: "admin" })).key,
  ]);
  server = await startTestServer(f.dbPath, SERVER);
  dir = mkdtempSync(join(tmpdir(), "marketdata-client-user-"));
  // As the README says, from the repository root (`./`: a bare `packages/client` is read as a GitHub repository).
  execFileSync("npm", ["pack", "./packages/client", "--pack-destination", dir, "--silent"], { cwd: ROOT, stdio: "ignore" });
  const tarball = readdirSync(dir).find((n) => n.endsWith(".tgz"))!;
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify({ name: "a-user", private: true, type: "module", dependencies: { "@marketdata/client": `file:./${tarball}` }, devDependencies: { "@types/node": NODE_TYPES } }),
  );
  execFileSync("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--silent"], { cwd: dir, stdio: "ignore" });
  for (const file of ["program.ts", "wrong-field.ts"]) copyFileSync(join(FIXTURES, file), join(dir, file));
}, 180_000);

afterAll(async () => {
  await server?.close();
  f?.cleanup();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** tsc over one file of the user's directory, with the fixture's tsconfig. */
function tsc(file: string): { ok: boolean; output: string } {
  const config = JSON.parse(readFileSync(join(FIXTURES, "tsconfig.json"), "utf8")) as Record<string, unknown>;
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ ...config, files: [file] }));
  try {
    execFileSync(process.execPath, [TSC, "-p", "tsconfig.json"], { cwd: dir, encoding: "utf8", stdio: "pipe" });
    return { ok: true, output: "" };
  } catch (err) {
    return { ok: false, output: String((err as { stdout?: string }).stdout ?? err) };
  }
}

/** Runs the compiled program; resolves with its JSON lines once it exits. */
function program(...args: string[]): Promise<unknown[]> {
  return runJsonLines(process.execPath, [join(dir, "out/program.js"), ...args], { cwd: dir });
}

describe("@marketdata/client, packed and installed as a user installs it", () => {
  it("type-checks a user's program, and refuses a misspelt request field", () => {
    const wrong = tsc("wrong-field.ts");
    expect(wrong.ok).toBe(false);
    expect(wrong.output).toMatch(/wrong-field\.ts.*contractAdress/s);
    const ok = tsc("program.ts");
    expect(ok.output).toBe("");
    expect(ok.ok).toBe(true);
  });

  it("calls every RPC of the contract on Connect, gRPC-Web and gRPC", async () => {
    const [results] = (await program("every", server.baseUrl, f.key, ingestKey, COLLECTION, adminKey)) as [Record<string, Record<string, string>>];
    const expected = Object.fromEntries(EVERY_RPC.map((m) => [m, "ok"]));
    expect(results).toEqual({ connect: expected, "grpc-web": expected, grpc: expected });
  });

  it("pages a collection's sales to the end: the server's list, in its order", async () => {
    const [hashes] = (await program("pages", server.baseUrl, f.key, ingestKey, COLLECTION)) as [string[]];
    const listed = (await restListAll(server.baseUrl, "/v1/asset/sales", { contractAddress: COLLECTION }, f.key)).map((s) => `${s.hash}/${s.assetId}`);
    expect(listed.length).toBeGreaterThan(7);
    expect(hashes).toEqual(listed);
  });

  it("exports a collection's sales in chunks to the end: every sale of the list once, as import lines; a kind it does not export refused", async () => {
    const [got] = (await program("export", server.baseUrl, f.key, ingestKey, COLLECTION)) as [{ hashes: string[]; chunks: number; position: string; refused: string }];
    const listed = (await restListAll(server.baseUrl, "/v1/asset/sales", { contractAddress: COLLECTION }, f.key)).map((s) => `${s.hash}/${s.assetId}`);
    expect([...got.hashes].sort()).toEqual([...listed].sort());
    expect(got.chunks).toBe(Math.floor(listed.length / 100) + 1);
    expect(got.position).not.toBe("");
    expect(got.refused).toBe("InvalidArgument");
  });

  it("pages every list of the contract to the end: the records of the RPC's own pages, in their order", async () => {
    const [lists] = (await program("lists", server.baseUrl, f.key, ingestKey, COLLECTION, adminKey)) as [ListReads];
    expectEveryListPaged(lists);
  }, 60_000);

  it("watches every feed: an offer on offers, a sale and an offer on activity, each record as committed", async () => {
    const offer = (n: number) => offerNow(7_100_000 + n, COLLECTION);
    const watch = (feed: string) => {
      const child = spawn(process.execPath, [join(dir, "out/program.js"), "feed", server.baseUrl, f.key, ingestKey, COLLECTION, adminKey, feed], { cwd: dir });
      return { child, lines: jsonLines<{ watching?: string; record?: Record<string, unknown>; resumeToken?: string }>(child.stdout) };
    };
    const offers = watch("offers");
    const activity = watch("activity");
    try {
      await expect.poll(() => offers.lines.length + activity.lines.length, { timeout: 15_000 }).toBe(2);
      await new Promise((r) => setTimeout(r, 500));
      const sale = numberedSale(0x7f000, COLLECTION);
      await ingestOk(server, ingestKey, "offers", [offer(1)]);
      await ingestOk(server, ingestKey, "sales", [sale]);
      await expect.poll(() => offers.lines.filter((l) => l.record).length, { timeout: 10_000 }).toBe(1);
      expect(offers.lines[1]!.record!.marketplaceId).toBe("7100001");
      await expect.poll(() => activity.lines.filter((l) => l.record).length, { timeout: 10_000 }).toBe(2);
      const events = activity.lines.filter((l) => l.record).map((l) => l.record!);
      expect(events.map((e) => e.type)).toEqual(["offer", "sale"]);
      expect([...offers.lines, ...activity.lines].filter((l) => l.record).every((l) => (l.resumeToken ?? "") !== "")).toBe(true);
    } finally {
      offers.child.kill();
      activity.child.kill();
    }
  }, 60_000);

  it("a watch survives a server restart: every sale once, in order, those committed while it was down included", async () => {
    const port = Number(new URL(server.baseUrl).port);
    const child = spawn(process.execPath, [join(dir, "out/program.js"), "watch", server.baseUrl, f.key, ingestKey, COLLECTION], { cwd: dir });
    const lines = jsonLines<{ hash?: string; watching?: boolean }>(child.stdout);
    try {
      const sale = (n: number) => numberedSale(0x7e000 + n, COLLECTION);
      await expect.poll(() => lines.length, { timeout: 15_000 }).toBeGreaterThan(0);
      // Give the stream a moment to open before the first commit.
      await new Promise((r) => setTimeout(r, 500));
      await ingestOk(server, ingestKey, "sales", [sale(1), sale(2)]);
      await expect.poll(() => lines.filter((l) => l.hash).length, { timeout: 10_000 }).toBe(2);
      await server.close();
      const writer = await startTestServer(f.dbPath, SERVER);
      await ingestOk(writer, ingestKey, "sales", [sale(3)]);
      await writer.close();
      server = await startTestServer(f.dbPath, { ...SERVER, port });
      await ingestOk(server, ingestKey, "sales", [sale(4), sale(5)]);
      await expect.poll(() => lines.filter((l) => l.hash).length, { timeout: 20_000 }).toBe(5);
      expect(lines.filter((l) => l.hash).map((l) => l.hash)).toEqual([1, 2, 3, 4, 5].map((n) => sale(n).hash));
    } finally {
      child.kill();
    }
  }, 60_000);

  it("backs off on 429 and gets every answer", async () => {
    const limited = await withKeys(f.dbPath, async (admin) => (await admin.create("limited", { rateLimit: 2 })).key);
    const [result] = (await program("retry", server.baseUrl, limited, ingestKey, COLLECTION)) as [{ answered: number; retries: number }];
    expect(result.answered).toBe(6);
    expect(result.retries).toBeGreaterThan(0);
  }, 60_000);
});
