import { createHash } from "node:crypto";
import { chmodSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { deserialize, serialize } from "node:v8";
import Database from "better-sqlite3";
import type { Kind } from "../../domain/kinds/index.js";
import { RecordConflictError, StoreError, StoreReadOnlyError, StoreUnavailableError } from "../ports/errors.js";
import type { ImportCounts, ImportRecord, IngestWriter } from "../ports/writes.js";
import type { Db } from "./db.js";
import { type SqliteWriterOptions, sqliteIngestWriter } from "./ingest-writer.js";

// One writer per SQLite file, however many processes serve or consume it
// (serve's workers, several serve or consume processes). SQLite lets one
// connection write at a time; writers in several processes would take turns
// at the file's lock, and a turn longer than a busy timeout ends in
// "database is locked" for whoever waited (a caller, the background derive).
//
// So the processes elect one. The first that has a batch to write takes an
// exclusive lock on a small file beside the store (<store>-writer, a SQLite
// file held in an open EXCLUSIVE transaction: the operating system frees it
// when the process ends, however it ends) and listens on a local socket
// beside it; it writes its own batches and those the others hand it over
// that socket. The others connect and hand over theirs. When the writer
// goes (stopped, killed), the batches it held are answered unavailable
// (retry; none is half-written: each commits whole or not at all) and the
// next write elects again.

/** Frames on the socket: a 4-byte length, then a v8-serialized message (the worker thread's structured clone: bigint and bytes kept). */
type Request = { id: number; kind: Kind; records: ImportRecord[] };
type Reply = { id: number; counts: ImportCounts } | { id: number; error: { name: string; message: string } };

const ERRORS: Record<string, new (message: string) => Error> = { StoreError, StoreReadOnlyError, StoreUnavailableError, RecordConflictError };

/** How long a process that lost the election waits for the winner's socket (it listens right after taking the lock). */
const CONNECT_WAIT_MS = 2_000;

export interface OneWriterOptions extends SqliteWriterOptions {
  /** Wraps this process's writer when it is the one elected (the server's background derive runs where the writes are committed). */
  local?: (writer: IngestWriter) => IngestWriter;
}

/** The file whose lock the writer holds. */
export function writerLockOf(storePath: string): string {
  return `${storePath}-writer`;
}

/**
 * The socket the writer listens on: beside the store, or, where that path is
 * past what a socket address holds (~104 bytes), in the temporary directory
 * under a name made from the store's path. A named pipe on Windows.
 */
export function writerSocketOf(storePath: string): string {
  const hash = createHash("sha256").update(resolve(storePath)).digest("hex").slice(0, 24);
  if (process.platform === "win32") return `\\\\.\\pipe\\marketdata-writer-${hash}`;
  const beside = `${resolve(storePath)}-writer.sock`;
  return Buffer.byteLength(beside) < 100 ? beside : join(tmpdir(), `marketdata-writer-${hash}.sock`);
}

type Role =
  | { kind: "writer"; writer: IngestWriter; lock: Db; server: net.Server; clients: Set<net.Socket> }
  | { kind: "client"; socket: net.Socket; pending: Map<number, { resolve(c: ImportCounts): void; reject(e: Error): void }> }
  | { kind: "alone"; writer: IngestWriter };

/** The ingest writer of a SQLite store: this process's own thread when elected, else the elected process over its socket. */
export function oneSqliteWriter(path: string, options: OneWriterOptions = {}): IngestWriter {
  let role: Promise<Role> | undefined;
  let nextId = 0;
  let closed = false;
  const localWriter = () => {
    const own = sqliteIngestWriter(path, options);
    return options.local === undefined ? own : options.local(own);
  };

  const elect = async (): Promise<Role> => {
    const lock = takeLock(writerLockOf(path));
    if (lock === "unavailable") return { kind: "alone", writer: localWriter() };
    if (lock !== undefined) return serveAsWriter(lock);
    const socket = await connectWithin(writerSocketOf(path), CONNECT_WAIT_MS);
    if (socket === undefined) {
      // The winner went between its lock and its socket: elect again.
      const again = takeLock(writerLockOf(path));
      if (again !== undefined && again !== "unavailable") return serveAsWriter(again);
      throw new StoreUnavailableError("the store's writer (another process) is not answering; retry");
    }
    return asClient(socket);
  };

  const serveAsWriter = async (lock: Db): Promise<Role> => {
    const writer = localWriter();
    const clients = new Set<net.Socket>();
    const server = net.createServer((socket) => {
      clients.add(socket);
      socket.on("close", () => clients.delete(socket));
      socket.on("error", () => {});
      readFrames(socket, (m) => {
        const { id, kind, records } = m as Request;
        writer.write(kind, records).then(
          (counts) => writeFrame(socket, { id, counts } satisfies Reply),
          (err: unknown) => {
            const e = err instanceof Error ? err : new Error(String(err));
            writeFrame(socket, { id, error: { name: e.constructor.name, message: e.message } } satisfies Reply);
          },
        );
      });
    });
    const address = writerSocketOf(path);
    // Only the lock's holder gets here: a socket file left there is a dead writer's.
    if (process.platform !== "win32") rmSync(address, { force: true });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      // exclusive: in a cluster worker, listened on by this process, not handed to the primary.
      server.listen({ path: address, exclusive: true }, () => {
        server.off("error", reject);
        resolve();
      });
    });
    // Whoever can connect can write: the store's owner only (as the store file itself).
    if (process.platform !== "win32") chmodSync(address, 0o600);
    server.unref();
    return { kind: "writer", writer, lock, server, clients };
  };

  const asClient = (socket: net.Socket): Role => {
    const pending = new Map<number, { resolve(c: ImportCounts): void; reject(e: Error): void }>();
    const me: Role = { kind: "client", socket, pending };
    socket.unref();
    readFrames(socket, (m) => {
      const reply = m as Reply;
      const p = pending.get(reply.id);
      if (p === undefined) return;
      pending.delete(reply.id);
      if (pending.size === 0) socket.unref();
      if ("counts" in reply) p.resolve(reply.counts);
      else p.reject(new (ERRORS[reply.error.name] ?? Error)(reply.error.message));
    });
    const lost = () => {
      // The next write elects again (this process, or another, takes the lock).
      if (current === me) role = undefined;
      for (const p of pending.values()) p.reject(new StoreUnavailableError("the store's writer (another process) stopped before answering; retry"));
      pending.clear();
    };
    socket.on("error", () => {});
    socket.on("close", lost);
    return me;
  };

  /** The role `role` resolved to, for the lost-connection check. */
  let current: Role | undefined;

  return {
    async write(kind: Kind, records: readonly ImportRecord[]): Promise<ImportCounts> {
      if (closed) throw new StoreUnavailableError("the store's writer is closed");
      role ??= elect().then(
        (r) => (current = r),
        (err: unknown) => {
          role = undefined;
          throw err;
        },
      );
      const r = await role;
      if (r.kind !== "client") return r.writer.write(kind, records);
      const id = ++nextId;
      return new Promise<ImportCounts>((resolve, reject) => {
        if (r.socket.destroyed) {
          reject(new StoreUnavailableError("the store's writer (another process) stopped; retry"));
          return;
        }
        if (r.pending.size === 0) r.socket.ref();
        r.pending.set(id, { resolve, reject });
        writeFrame(r.socket, { id, kind, records: records as ImportRecord[] } satisfies Request);
      });
    },
    async close() {
      closed = true;
      const r = await role?.catch(() => undefined);
      if (r === undefined) return;
      if (r.kind === "client") {
        r.socket.end();
        return;
      }
      if (r.kind === "writer") {
        // No new connections; batches handed over already are committed and answered first.
        r.server.close();
        await r.writer.close();
        for (const c of r.clients) c.end();
        r.lock.close();
        return;
      }
      await r.writer.close();
    },
  };
}

/**
 * The writer's lock: the open handle holding it, undefined when another
 * process holds it, "unavailable" when the file cannot be had at all (a
 * read-only directory: this process writes alone, and is told so by the
 * store itself).
 */
function takeLock(file: string): Db | undefined | "unavailable" {
  let db: Db;
  try {
    db = new Database(file);
  } catch {
    return "unavailable";
  }
  try {
    db.pragma("busy_timeout = 0");
    db.exec("BEGIN EXCLUSIVE");
    return db;
  } catch (err) {
    db.close();
    if (err instanceof Database.SqliteError && (err.code === "SQLITE_BUSY" || err.code === "SQLITE_LOCKED")) return undefined;
    return "unavailable";
  }
}

async function connectWithin(address: string, ms: number): Promise<net.Socket | undefined> {
  const deadline = Date.now() + ms;
  for (let delay = 5; ; delay = Math.min(delay * 2, 100)) {
    const socket = await new Promise<net.Socket | undefined>((resolve) => {
      const s = net.createConnection({ path: address });
      s.once("connect", () => resolve(s));
      s.once("error", () => resolve(undefined));
    });
    if (socket !== undefined || Date.now() + delay > deadline) return socket;
    await new Promise((r) => setTimeout(r, delay));
  }
}

function writeFrame(socket: net.Socket, message: unknown): void {
  const body = serialize(message);
  const head = Buffer.allocUnsafe(4);
  head.writeUInt32BE(body.length);
  socket.write(head);
  socket.write(body);
}

/** Calls `onMessage` with each whole frame read from `socket` (a 16 MB batch arrives in hundreds of chunks: joined once, when whole). */
function readFrames(socket: net.Socket, onMessage: (m: unknown) => void): void {
  let chunks: Buffer[] = [];
  let buffered = 0;
  /** The frame's length with its head, once its head has arrived. */
  let frame = -1;
  socket.on("data", (chunk: Buffer) => {
    chunks.push(chunk);
    buffered += chunk.length;
    for (;;) {
      if (frame < 0) {
        if (buffered < 4) return;
        if (chunks[0]!.length < 4) chunks = [Buffer.concat(chunks, buffered)];
        frame = 4 + chunks[0]!.readUInt32BE(0);
      }
      if (buffered < frame) return;
      const all = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, buffered);
      const body = all.subarray(4, frame);
      const rest = all.subarray(frame);
      chunks = rest.length > 0 ? [rest] : [];
      buffered = rest.length;
      frame = -1;
      onMessage(deserialize(body));
    }
  });
}
