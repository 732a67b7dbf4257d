import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it, vi } from "vitest";
import { consumeConfig } from "../../src/config/consume.js";
import { StoreUnavailableError } from "../../src/store/ports/errors.js";
import { storeErrorLine } from "../../src/store/error-line.js";
import { openReadRepositories } from "../../src/store/open.js";
import { openPool, redactUrl } from "../../src/store/postgres/database.js";
import { NO_HOST, parsePgUrl } from "../../src/store/postgres/hosts.js";
import { unavailable } from "../../src/store/postgres/statements.js";
import { errorHeaders, publicError, RETRY_AFTER_SECONDS } from "../../src/transport/policy/guards.js";
import { CONSUME_DEFAULTS } from "../../src/config/settings.js";
import { PG_ADMIN_URL, skipPg } from "../support/pg.js";

// Multi-host PostgreSQL URLs (store/postgres/hosts.ts), the unavailable
// answer's Retry-After, and `marketdata consume`'s settings.

describe("multi-host PostgreSQL URLs", () => {
  it("reads hosts, ports and target_session_attrs as libpq does, and leaves the target out of each host's URL", () => {
    const p = parsePgUrl("postgres://u:secret@a:5433,b,[::1]:6000/db?target_session_attrs=read-write&sslmode=disable")!;
    expect(p.hosts).toEqual([
      { host: "a", port: 5433 },
      { host: "b", port: 5432 },
      { host: "::1", port: 6000 },
    ]);
    expect(p.target).toBe("read-write");
    expect(p.urlFor(1)).toBe("postgres://u:secret@b:5432/db?sslmode=disable");
    expect(p.urlFor(2)).toBe("postgres://u:secret@[::1]:6000/db?sslmode=disable");
    expect(parsePgUrl("postgres://h1,h2/db?port=7000")!.hosts).toEqual([
      { host: "h1", port: 7000 },
      { host: "h2", port: 7000 },
    ]);
    expect(parsePgUrl("postgres://h/db")!.target).toBe("any");
    expect(parsePgUrl("data/marketdata.sqlite")).toBeUndefined();
    expect(() => parsePgUrl("postgres://a,b/db?target_session_attrs=primary-ish")).toThrow(/target_session_attrs must be one of/);
    expect(() => parsePgUrl("postgres://a:99999,b/db")).toThrow(/invalid port/);
  });

  it("redacts the password of a multi-host URL and keeps every host", () => {
    expect(redactUrl("postgres://u:secret@a:5433,b:5434/db?target_session_attrs=read-write")).toBe(
      "postgres://u:***@a:5433,b:5434/db?target_session_attrs=read-write",
    );
  });

  it("counts no host in the wanted role as unavailable (a failover under way)", () => {
    expect(unavailable(Object.assign(new Error("no PostgreSQL host is read-write"), { code: NO_HOST }))).toBe(true);
  });

  it("counts a schema check that cannot connect as unavailable (a writer opened mid-failover retries), said in one line by the CLI", async () => {
    const err = await openReadRepositories("postgres://postgres@127.0.0.1:1,127.0.0.1:2/none?target_session_attrs=read-write").then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect(storeErrorLine(err)).toMatch(/^cannot read the PostgreSQL store at postgres:\/\/postgres@127\.0\.0\.1:1,127\.0\.0\.1:2\/none/);
  });

  describe.skipIf(skipPg)("on the test server", () => {
    const server = new URL(PG_ADMIN_URL);
    const hosts = (target: string) => `postgres://${server.username || "postgres"}@127.0.0.1:1,${server.hostname}:${server.port || 5432}${server.pathname}?target_session_attrs=${target}`;

    it("connects to the first host in the wanted role, past one that refuses", async () => {
      for (const target of ["read-write", "primary", "any", "prefer-standby"]) {
        const pool = openPool(hosts(target), { max: 1, readOnly: true });
        try {
          const { rows } = await pool.query<{ standby: boolean }>("SELECT pg_is_in_recovery() AS standby");
          expect(rows[0]!.standby).toBe(false);
        } finally {
          await pool.end();
        }
      }
    });

    it("refuses a connection when no host is in the wanted role, as unavailable", async () => {
      const pool = openPool(hosts("standby"), { max: 1, readOnly: true });
      try {
        const err = await pool.query("SELECT 1").then(
          () => undefined,
          (e: unknown) => e,
        );
        expect((err as { code?: string }).code).toBe(NO_HOST);
        expect(unavailable(err)).toBe(true);
      } finally {
        await pool.end();
      }
    });

    it("sends a writer on several hosts to the one that takes writes, whatever the URL's target", async () => {
      const pool = openPool(hosts("prefer-standby"), 1);
      try {
        const { rows } = await pool.query<{ ro: string }>("SELECT current_setting('transaction_read_only') AS ro");
        expect(rows[0]!.ro).toBe("off");
      } finally {
        await pool.end();
      }
    });
  });
});

describe("Retry-After on unavailable answers", () => {
  it("is in the metadata of the store's unavailable error and in the headers of any unavailable answer", () => {
    const err = publicError(new StoreUnavailableError("down"), { error: vi.fn() }, "/p");
    expect(err.code).toBe(Code.Unavailable);
    expect(err.metadata.get("retry-after")).toBe(String(RETRY_AFTER_SECONDS));
    expect(errorHeaders(new ConnectError("x", Code.Unavailable))).toEqual({ "retry-after": String(RETRY_AFTER_SECONDS) });
    expect(errorHeaders(new ConnectError("x", Code.InvalidArgument))).toEqual({});
    const passed = publicError(new ConnectError("shutting down", Code.Unavailable), { error: vi.fn() }, "/p");
    expect(passed.metadata.get("retry-after")).toBe(String(RETRY_AFTER_SECONDS));
  });
});

describe("marketdata consume's settings", () => {
  const flags = {
    from: "nats://127.0.0.1:4222",
    stream: CONSUME_DEFAULTS.stream,
    subjectPrefix: CONSUME_DEFAULTS.subjectPrefix,
    durable: CONSUME_DEFAULTS.durable,
    deadLetter: CONSUME_DEFAULTS.deadLetter,
    batch: "5000",
    pending: "20000",
    inflight: "4",
    ackWait: "30",
    progress: "10",
  };

  it("takes the defaults and several servers", () => {
    expect(consumeConfig({ ...flags, from: "nats://a:4222,nats://b:4222" })).toMatchObject({ servers: "nats://a:4222,nats://b:4222", batch: 5000, ackWaitSeconds: 30, progressMs: 10_000 });
  });

  it("names the flag of each bad value", () => {
    expect(() => consumeConfig({ ...flags, from: "http://x" })).toThrow(/--from/);
    expect(() => consumeConfig({ ...flags, subjectPrefix: "a.>" })).toThrow(/--subject-prefix/);
    expect(() => consumeConfig({ ...flags, deadLetter: "marketdata.ingest.dead" })).toThrow(/outside --subject-prefix/);
    expect(() => consumeConfig({ ...flags, batch: "0" })).toThrow(/--batch/);
    expect(() => consumeConfig({ ...flags, batch: "10001" })).toThrow(/--batch/);
    expect(() => consumeConfig({ ...flags, stream: "a b" })).toThrow(/--stream/);
    expect(() => consumeConfig({ ...flags, ackWait: "0" })).toThrow(/--ack-wait/);
  });
});
