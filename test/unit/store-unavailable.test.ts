import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it, vi } from "vitest";
import { StoreUnavailableError } from "../../src/store/ports/errors.js";
import { openPool } from "../../src/store/postgres/database.js";
import { unavailable } from "../../src/store/postgres/statements.js";
import { pgRepositories } from "../../src/store/postgres/read-repositories.js";
import { publicError } from "../../src/transport/policy/guards.js";

// A PostgreSQL store that cannot be reached is the server's trouble, not the
// caller's and not a bug: every protocol answers `unavailable` (HTTP 503),
// logged once, never `internal`.

describe("an unreachable PostgreSQL store", () => {
  it("classifies connection failures, not query errors, as unavailable", () => {
    expect(unavailable(Object.assign(new Error("x"), { code: "ECONNREFUSED" }))).toBe(true);
    expect(unavailable(Object.assign(new Error("x"), { code: "57P01" }))).toBe(true); // admin shutdown
    expect(unavailable(Object.assign(new Error("x"), { code: "08006" }))).toBe(true);
    expect(unavailable(new Error("Connection terminated unexpectedly"))).toBe(true);
    expect(unavailable(Object.assign(new Error("x"), { code: "42P01" }))).toBe(false); // undefined table: a bug
    expect(unavailable(new Error("boom"))).toBe(false);
  });

  it("classifies a lock not had in time, a server out of resources and a client that lost its connection as unavailable (issue 49: 500s in a failover and under new collections)", () => {
    // canceling statement due to lock timeout: another writer holds the lock; retry.
    expect(unavailable(Object.assign(new Error("canceling statement due to lock timeout"), { code: "55P03" }))).toBe(true);
    expect(unavailable(Object.assign(new Error("out of shared memory"), { code: "53200" }))).toBe(true);
    expect(unavailable(Object.assign(new Error("sorry, too many clients already"), { code: "53300" }))).toBe(true);
    // node-postgres's own words for a client whose connection failed or was closed (openStage in a failover).
    expect(unavailable(new Error("Client has encountered a connection error and is not queryable"))).toBe(true);
    expect(unavailable(new Error("Client was closed and is not queryable"))).toBe(true);
    expect(unavailable(Object.assign(new Error("duplicate key"), { code: "23505" }))).toBe(false);
  });

  it("makes a repository call fail with StoreUnavailableError, which callers see as unavailable", async () => {
    // Port 1 on loopback: nothing listens, the connection is refused at once.
    const url = "postgres://postgres@127.0.0.1:1/none";
    const repos = pgRepositories(openPool(url, 1), url);
    try {
      const err = await Promise.resolve()
        .then(() => repos.collections.collectionId(`0x${"c1".repeat(20)}`))
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(err).toBeInstanceOf(StoreUnavailableError);
      const log = { error: vi.fn() };
      const answer = publicError(err, log, "/svc/Method");
      expect(answer).toBeInstanceOf(ConnectError);
      expect(answer.code).toBe(Code.Unavailable);
      expect(log.error).toHaveBeenCalledWith(expect.objectContaining({ procedure: "/svc/Method" }), "store unavailable");
    } finally {
      await repos.close();
    }
  });

  it("leaves other errors internal", () => {
    const log = { error: vi.fn() };
    expect(publicError(new Error("bug"), log, "/p")?.code).toBe(Code.Internal);
  });
});
