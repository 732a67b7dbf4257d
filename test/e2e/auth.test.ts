import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { ENDPOINTS } from "../support/endpoints.js";
import { buildFixture, COLLECTION, type Fixture } from "../support/fixture.js";
import { clientsFor, PROTOCOLS, restGet, transportFor, useFixtureServer } from "../support/server.js";
import { withKeys } from "../support/engine.js";

const t = useFixtureServer(buildFixture);


const REFUSED: [string, (fx: Fixture) => string | undefined, string][] = [
  ["missing", () => undefined, "missing API key: send it in the x-api-key header"],
  ["empty", () => "", "missing API key: send it in the x-api-key header"],
  ["unknown", () => "mdk_not-a-key-we-issued", "invalid or revoked API key"],
  ["revoked", (fx) => fx.revokedKey, "invalid or revoked API key"],
];

describe("x-api-key", () => {
  describe.each(REFUSED)("%s key", (_, keyOf, message) => {
    it("REST: 401 unauthenticated, for every endpoint, before validation", async () => {
      for (const [path, flag] of ENDPOINTS) {
        // An invalid collection too: the key is checked first.
        for (const contractAddress of [COLLECTION, "nope"]) {
          const { status, body } = await restGet(t.server.baseUrl, path, { contractAddress }, keyOf(t.f));
          expect(status).toBe(401);
          expect(body).toEqual({ [flag]: 0, code: "unauthenticated", message });
        }
      }
    });

    it.each(PROTOCOLS)("%s: unauthenticated", async (protocol) => {
      const c = clientsFor(transportFor(protocol, t.server.baseUrl));
      const key = keyOf(t.f);
      const headers = key === undefined ? {} : { "x-api-key": key };
      for (const call of [
        () => c.asset.listSales({ contractAddress: COLLECTION }, { headers }),
        () => c.collection.getCollectionStats({ contractAddress: COLLECTION }, { headers }),
        () => c.collection.listScores({ contractAddress: [COLLECTION] }, { headers }),
      ]) {
        const err = await call().then(() => undefined, (e: unknown) => e);
        expect(err).toBeInstanceOf(ConnectError);
        expect((err as ConnectError).code).toBe(Code.Unauthenticated);
        expect((err as ConnectError).rawMessage).toBe(message);
      }
    });
  });

  it.each(PROTOCOLS)("%s: a valid key is accepted", async (protocol) => {
    const c = clientsFor(transportFor(protocol, t.server.baseUrl));
    const res = await c.collection.getCollectionStats({ contractAddress: COLLECTION }, { headers: { "x-api-key": t.f.key } });
    expect(res.successful).toBe(1);
  });

  it("a key revoked while the server runs is refused from the next request on", async () => {
    const { id, key } = await withKeys(t.f.dbPath, (admin) => admin.create("short-lived"));
    const query = { contractAddress: COLLECTION };
    expect((await restGet(t.server.baseUrl, "/v1/collection/scores", query, key)).status).toBe(200);
    const grpc = clientsFor(transportFor("grpc", t.server.baseUrl));
    await grpc.collection.listScores({ contractAddress: [COLLECTION] }, { headers: { "x-api-key": key } });
    await withKeys(t.f.dbPath, (admin) => admin.revoke(id));
    expect((await restGet(t.server.baseUrl, "/v1/collection/scores", query, key)).status).toBe(401);
    await expect(
      grpc.collection.listScores({ contractAddress: [COLLECTION] }, { headers: { "x-api-key": key } }),
    ).rejects.toMatchObject({ code: Code.Unauthenticated });
  });
});
