import http2 from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromBinary } from "@bufbuild/protobuf";
import { HealthCheckResponse_ServingStatus as Status, HealthCheckResponseSchema } from "../../gen/health/v1/health_pb.js";
import { buildFixture, type Fixture } from "../support/fixture.js";
import { startTestServer, type TestServer } from "../support/server.js";

// A long-lived stream (grpc.health.v1.Health/Watch) outlives the HTTP/2
// session's idle timeout: the review saw a quiet Watch cut every 60 s (RST
// CANCEL, GOAWAY, no grpc-status) whatever the client sent. A session with an
// open stream is now kept while its client answers the server's PINGs, and
// the stream ends only with trailers (at shutdown: NOT_SERVING, then OK).

const IDLE_MS = 400;

let f: Fixture;
let server: TestServer;
beforeAll(async () => {
  f = buildFixture();
  server = await startTestServer(f.dbPath, { timeouts: { headersMs: 1000, requestMs: 1000, keepAliveMs: 1000, idleMs: IDLE_MS, shutdownMs: 3000 } });
});
afterAll(async () => {
  await server?.close();
  f?.cleanup();
});

function messages(data: Buffer): Status[] {
  const out: Status[] = [];
  for (let at = 0; at + 5 <= data.length; ) {
    const length = data.readUInt32BE(at + 1);
    out.push(fromBinary(HealthCheckResponseSchema, data.subarray(at + 5, at + 5 + length)).status);
    at += 5 + length;
  }
  return out;
}

describe("health Watch over gRPC", () => {
  it(`stays open past ${(IDLE_MS * 6) / 1000} s of silence (6 idle timeouts) and ends with trailers at shutdown`, async () => {
    const session = http2.connect(server.url);
    const sessionErrors: string[] = [];
    session.on("error", (e) => sessionErrors.push(e.message));
    let goaways = 0;
    session.on("goaway", () => goaways++);
    const stream = session.request({ ":method": "POST", ":path": "/grpc.health.v1.Health/Watch", "content-type": "application/grpc", te: "trailers" });
    const chunks: Buffer[] = [];
    let trailers: http2.IncomingHttpHeaders | undefined;
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("trailers", (t) => (trailers = t));
    const closed = new Promise<number>((resolve) => stream.on("close", () => resolve(stream.rstCode)));
    // The empty request (service "": the whole server), then the request side ends.
    stream.end(Buffer.from([0, 0, 0, 0, 0]));

    await new Promise((r) => setTimeout(r, IDLE_MS * 6));
    expect(stream.closed).toBe(false);
    expect(session.closed || session.destroyed).toBe(false);
    expect(goaways).toBe(0);
    expect(messages(Buffer.concat(chunks))).toEqual([Status.SERVING]);

    // Shutdown: NOT_SERVING, then the trailers of a stream that ended well.
    await server.close();
    const rst = await closed;
    expect(messages(Buffer.concat(chunks))).toEqual([Status.SERVING, Status.NOT_SERVING]);
    expect(trailers?.["grpc-status"]).toBe("0");
    expect(rst).toBe(http2.constants.NGHTTP2_NO_ERROR);
    expect(sessionErrors).toEqual([]);
    session.destroy();
  });

  it("a session with no stream open is still closed after the idle timeout", async () => {
    const s = await startTestServer(f.dbPath, { timeouts: { headersMs: 1000, requestMs: 1000, keepAliveMs: 1000, idleMs: IDLE_MS, shutdownMs: 1000 } });
    try {
      const session = http2.connect(s.url);
      session.on("error", () => {});
      const started = performance.now();
      await new Promise<void>((resolve) => session.on("close", () => resolve()));
      expect(performance.now() - started).toBeLessThan(IDLE_MS + 1500);
    } finally {
      await s.close();
    }
  });
});
