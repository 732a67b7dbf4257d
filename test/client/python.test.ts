import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withKeys } from "../support/engine.js";
import { buildFixture, COLLECTION, type Fixture } from "../support/fixture.js";
import { jsonLines, runJsonLines } from "../support/json-lines.js";
import { PYTHON, skipPython } from "../support/python.js";
import { numberedSale } from "../support/sales.js";
import { ingestOk, restListAll, startTestServer, type TestServer } from "../support/server.js";
import { EVERY_RPC } from "../support/rpc-names.js";
import { expectEveryListPaged, type ListReads, offerNow } from "../support/client-lists.js";
import { resolveWebhooks } from "../../src/config/serve.js";

// A client in another language from the same contract: Python stubs made by
// `buf generate` with the repository's Python template
// (clients/python/buf.gen.yaml: Debian's protoc and its gRPC plugin), used by
// a program run by Debian's own /usr/bin/python3 with python3-grpcio and
// python3-protobuf: every RPC over gRPC with a key (the webhooks' with an
// admin key), a list paged to the end, a watch stream; and the helpers next
// to the stubs (clients/python/marketdata_client.py): every list paged,
// feeds watched across a server restart. Without those Debian packages the test skips with a
// visible message, unless MARKETDATA_TEST_PYTHON makes it required (CI
// installs them: .ci/run).

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const PROGRAM = fileURLToPath(new URL("./fixtures/client.py", import.meta.url));
/** The stubs, and the helpers next to them (clients/python/marketdata_client.py), as a user puts them on the path. */
const pythonPath = () => `${stubs}:${join(ROOT, "clients/python")}`;
const skip = skipPython("the Python client test");

let f: Fixture;
let server: TestServer;
let stubs: string;
let ingestKey: string;
let adminKey: string;

beforeAll(async () => {
  if (skip) return;
  stubs = mkdtempSync(join(tmpdir(), "marketdata-python-"));
  execFileSync("npx", ["buf", "generate", "--template", "clients/python/buf.gen.yaml", "-o", stubs], { cwd: ROOT, stdio: "pipe" });
  f = buildFixture();
  [ingestKey, adminKey] = await withKeys(f.dbPath, async (admin) => [
    (await admin.create("python", { scope: "ingest" })).key,
    (await admin.create("python-admin", { scope: "admin" })).key,
  ]);
  // Webhooks to loopback allowed: the program's goes to a local port nothing listens on.
  server = await startTestServer(f.dbPath, { rateLimit: 0, ingestRateLimit: 0, webhooks: resolveWebhooks({ allowPrivateWebhooks: true }) });
}, 60_000);

afterAll(async () => {
  await server?.close();
  f?.cleanup();
  if (stubs !== undefined) rmSync(stubs, { recursive: true, force: true });
});

const target = () => new URL(server.baseUrl).host;

/** Runs the program (not synchronously: the server answering it runs in this process) and parses its last line. */
async function python(...args: string[]): Promise<unknown> {
  return (await runJsonLines(PYTHON, [PROGRAM, ...args], { env: { ...process.env, PYTHONPATH: pythonPath() } })).at(-1);
}

describe.skipIf(skip)("a Python client from the contract (Debian's protoc, grpcio and protobuf)", () => {
  it("calls every RPC over gRPC with a key (webhook administration with an admin key); without one it is refused", async () => {
    const results = (await python("every", target(), f.key, ingestKey, COLLECTION, adminKey)) as Record<string, string>;
    const { "no key": noKey, ...calls } = results;
    expect(Object.keys(calls).sort()).toEqual(EVERY_RPC);
    for (const [method, result] of Object.entries(calls)) expect(result, method).toBe("ok");
    expect(noKey).toBe("UNAUTHENTICATED");
  });

  it("exports a collection's sales with marketdata_client.export in chunks to the end: every sale once; a kind it does not export refused", async () => {
    const got = (await python("export", target(), f.key, ingestKey, COLLECTION)) as { keys: string[]; chunks: number; position: string; refused: string };
    const listed = (await restListAll(server.baseUrl, "/v1/asset/sales", { contractAddress: COLLECTION }, f.key)).map((s) => `${s.hash}/${s.assetId}`);
    expect([...got.keys].sort()).toEqual([...listed].sort());
    expect(got.chunks).toBe(Math.floor(listed.length / 100) + 1);
    expect(got.position).not.toBe("");
    expect(got.refused).toBe("invalid_argument");
  });

  it("pages through a collection's sales: the server's list, in its order", async () => {
    const keys = (await python("pages", target(), f.key, ingestKey, COLLECTION)) as string[];
    const listed = (await restListAll(server.baseUrl, "/v1/asset/sales", { contractAddress: COLLECTION }, f.key)).map((s) => `${s.hash}/${s.assetId}`);
    expect(keys).toEqual(listed);
  });

  it("marketdata_client.pages follows every list that pages to the end: the records of the RPC's own pages, in their order", async () => {
    const lists = (await python("lists", target(), f.key, ingestKey, COLLECTION, adminKey)) as ListReads;
    expectEveryListPaged(lists);
  }, 60_000);

  it("marketdata_client.watch follows offers and activity, and resumes a feed after the server restarts", async () => {
    const offer = (n: number) => offerNow(7_200_000 + n, COLLECTION);
    const watch = (feed: string) => {
      const child = spawn(PYTHON, [PROGRAM, "feed", target(), f.key, ingestKey, COLLECTION, feed], { env: { ...process.env, PYTHONPATH: pythonPath() } });
      return { child, lines: jsonLines<{ watching?: string; type?: string; id?: string; token?: string }>(child.stdout) };
    };
    const offers = watch("offers");
    const activity = watch("activity");
    const records = (w: ReturnType<typeof watch>) => w.lines.filter((l) => l.type !== undefined);
    try {
      await expect.poll(() => offers.lines.length + activity.lines.length, { timeout: 15_000 }).toBe(2);
      await new Promise((r) => setTimeout(r, 500));
      await ingestOk(server, ingestKey, "offers", [offer(1)]);
      const sale = numberedSale(0x9f000, COLLECTION);
      await ingestOk(server, ingestKey, "sales", [sale]);
      await expect.poll(() => records(activity).length, { timeout: 10_000 }).toBe(2);
      expect(records(activity).map((l) => [l.type, l.id])).toEqual([["offer", "7200001"], ["sale", sale.hash]]);
      // The server goes away and comes back on its port; an offer made meanwhile arrives once, after the first.
      const port = Number(new URL(server.baseUrl).port);
      await server.close();
      const writer = await startTestServer(f.dbPath, { rateLimit: 0, ingestRateLimit: 0 });
      await ingestOk(writer, ingestKey, "offers", [offer(2)]);
      await writer.close();
      server = await startTestServer(f.dbPath, { rateLimit: 0, ingestRateLimit: 0, webhooks: resolveWebhooks({ allowPrivateWebhooks: true }), port });
      await ingestOk(server, ingestKey, "offers", [offer(3)]);
      await expect.poll(() => records(offers).length, { timeout: 20_000 }).toBe(3);
      expect(records(offers).map((l) => l.id)).toEqual(["7200001", "7200002", "7200003"]);
      expect([...records(offers), ...records(activity)].every((l) => typeof l.token === "string" && l.token !== "")).toBe(true);
    } finally {
      offers.child.kill();
      activity.child.kill();
    }
  }, 60_000);

  it("reads a watch stream: the sales committed after it opened, with their resume tokens", async () => {
    const child = spawn(PYTHON, [PROGRAM, "watch", target(), f.key, ingestKey, COLLECTION, "3"], { env: { ...process.env, PYTHONPATH: pythonPath() } });
    const lines = jsonLines<{ watching?: string; hash?: string; token?: string }>(child.stdout);
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    try {
      await expect.poll(() => lines.length, { timeout: 15_000 }).toBe(1);
      expect(lines[0]!.watching).toBeTruthy();
      const sales = [1, 2, 3].map((n) => numberedSale(0x9e000 + n, COLLECTION));
      await ingestOk(server, ingestKey, "sales", sales);
      expect(await exited).toBe(0);
      expect(lines.slice(1).map((l) => l.hash)).toEqual(sales.map((s) => s.hash));
      expect(lines.slice(1).every((l) => typeof l.token === "string" && l.token !== "")).toBe(true);
    } finally {
      child.kill();
    }
  });
});
