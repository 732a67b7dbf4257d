import { readFileSync } from "node:fs";
import http2 from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PARSED_MEMO_BYTES, ParsedKeyMemo } from "../../src/transport/cache/cached-response.js";
import { MAX_URL_BYTES } from "../../src/transport/http/url-limit.js";
import { type ServeProcess, startServe } from "../../src/cli/run-sync.js";
import { buildFixture, COLLECTION, type Fixture } from "../support/fixture.js";

// What a key holder sends cannot make the server keep memory: unique long
// URLs that parse and then fail validation (the review's finding: 59.5 KiB
// kept per request over HTTP/1.1, 184 KiB over HTTP/2) leave the resident
// set where it was, over both protocols; URLs past the bound are refused
// with 414 before anything is parsed.

const REQUESTS_PER_PROTOCOL = 3000;
/**
 * Before the fix each of these requests kept about 40 KB (measured: +485 MB
 * after 12,000; at this test's 6,000, about 60 KiB and 184 KiB per HTTP/1.1
 * and HTTP/2 request: some 700 MB); now only garbage is made, which the RSS
 * shows as noise: 20-43 MB alone, once 114 MB in a full CI run, where the
 * collector ran late. The bound stays far below what the leak made.
 */
const RSS_GROWTH_LIMIT_MB = 150;

let f: Fixture;
let server: ServeProcess;
let url: string;

beforeAll(async () => {
  f = buildFixture();
  // One process (its RSS is the server's), no rate limit to wait on, a small response cache.
  server = await startServe(["--db", f.dbPath, "--port", "0", "--workers", "1", "--rate-limit", "0", "--cache-mb", "1"]);
  url = server.url;
});
afterAll(async () => {
  await server?.stop(1000);
  f?.cleanup();
});

function rssMb(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]);
  return kb / 1024;
}

/** A unique URL of about `bytes` that parses into a large request and then fails validation. */
function failingUrl(i: number, bytes: number): string {
  return i % 2 === 0
    ? `/v1/collection/scores?contractAddress=${",".repeat(bytes - 60)}${i}`
    : `/v1/asset/sales?contractAddress=${COLLECTION}&cursor=${"x".repeat(bytes - 120)}${i}`;
}

async function http1(paths: string[]): Promise<number[]> {
  const statuses: number[] = [];
  const lanes = Array.from({ length: 8 }, async (_, lane) => {
    for (let i = lane; i < paths.length; i += 8) {
      const r = await fetch(`${url}${paths[i]}`, { headers: { "x-api-key": f.key } });
      await r.arrayBuffer();
      statuses.push(r.status);
    }
  });
  await Promise.all(lanes);
  return statuses;
}

async function h2(paths: string[]): Promise<number[]> {
  const session = http2.connect(url);
  session.on("error", () => {});
  const one = (path: string) =>
    new Promise<number>((resolve, reject) => {
      const req = session.request({ ":method": "GET", ":path": path, "x-api-key": f.key });
      let status = 0;
      req.on("response", (h) => (status = Number(h[":status"])));
      req.on("data", () => {});
      req.on("end", () => resolve(status));
      req.on("error", reject);
      req.end();
    });
  const statuses: number[] = [];
  try {
    for (let i = 0; i < paths.length; i += 16) statuses.push(...(await Promise.all(paths.slice(i, i + 16).map(one))));
  } finally {
    session.close();
  }
  return statuses;
}

describe("memory a key holder can fill", () => {
  it(`${REQUESTS_PER_PROTOCOL} unique failing URLs per protocol (HTTP/1.1, HTTP/2) keep the RSS within ${RSS_GROWTH_LIMIT_MB} MB`, async () => {
    // Warm up (JIT, pools, and the heap grown to what this load's garbage needs), then measure.
    const size = MAX_URL_BYTES - 100;
    await http1(Array.from({ length: REQUESTS_PER_PROTOCOL / 2 }, (_, i) => failingUrl(-i - 1, size)));
    await h2(Array.from({ length: REQUESTS_PER_PROTOCOL / 2 }, (_, i) => failingUrl(-i - 1 - REQUESTS_PER_PROTOCOL, size)));
    const before = rssMb(server.child.pid!);
    const h1 = await http1(Array.from({ length: REQUESTS_PER_PROTOCOL }, (_, i) => failingUrl(i, size)));
    const h2s = await h2(Array.from({ length: REQUESTS_PER_PROTOCOL }, (_, i) => failingUrl(REQUESTS_PER_PROTOCOL + i, size)));
    expect(new Set([...h1, ...h2s])).toEqual(new Set([400]));
    const growth = rssMb(server.child.pid!) - before;
    console.log(`RSS growth after ${2 * REQUESTS_PER_PROTOCOL} unique ${size}-byte failing URLs: ${growth.toFixed(1)} MB`);
    expect(growth).toBeLessThan(RSS_GROWTH_LIMIT_MB);
    // 12,000 requests: about 10 s alone here, three times that beside the rest of the suite on two cores.
  }, 120_000);

  it("a URL past the bound is refused with 414 on HTTP/1.1 and HTTP/2, in the family's error form", async () => {
    const long = `/v1/collection/scores?contractAddress=${",".repeat(MAX_URL_BYTES)}`;
    const r = await fetch(`${url}${long}`, { headers: { "x-api-key": f.key } });
    expect(r.status).toBe(414);
    expect(await r.json()).toEqual({ successful: 0, code: "invalid_argument", message: `request URL longer than ${MAX_URL_BYTES} bytes` });
    // HTTP/2 allows paths of about 60 KB: still 414, for REST and Connect GET alike.
    const h2Long = `/v1/asset/sales?contractAddress=${COLLECTION}&cursor=${"x".repeat(60_000)}`;
    const connectGet = `/marketdata.v1.CollectionService/ListScores?encoding=json&message=${"x".repeat(60_000)}`;
    expect(await h2([h2Long, connectGet])).toEqual([414, 414]);
  });

  it("the parsed-URL memo stays within its byte budget and keeps only short URLs", () => {
    const memo = new ParsedKeyMemo();
    for (let i = 0; i < 20_000; i++) memo.set(`/v1/asset/sales?contractAddress=${COLLECTION}&limit=${i}&${"p".repeat(400)}`, `key ${i} ${"k".repeat(200)}`);
    expect(memo.bytes).toBeGreaterThan(0);
    expect(memo.bytes).toBeLessThanOrEqual(PARSED_MEMO_BYTES);
    memo.set(`/v1/x?${"y".repeat(2000)}`, "long");
    expect(memo.get(`/v1/x?${"y".repeat(2000)}`)).toBeUndefined();
  });
});
