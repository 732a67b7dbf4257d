import { createWriteStream, type WriteStream } from "node:fs";
import { ConnectError } from "@connectrpc/connect";
import { once } from "node:events";
import { EXPORT_KINDS, type ExportKind, isExportKind } from "../domain/export-kinds.js";
import { type ExportChunk, Exporter } from "../service/export.js";
import { openReadRepositories } from "../store/open.js";
import { EXPORT_DONE_HEADER, EXPORT_POSITION_HEADER, EXPORT_PATH } from "../transport/rest/export.js";
import { API_KEY_HEADER } from "../transport/policy/guards.js";
import { CliError } from "./errors.js";
import { progressBar } from "./progress.js";

// `marketdata export KIND`: a collection's records of one kind as the
// import's NDJSON (service/export.ts), read from a store (--db) or from a
// running server (--url, through GET /v1/export/KIND), chunk after chunk
// until the end. Each chunk's end position is reported; an export stopped
// half way goes on from the last one reported (--position), appended to
// what was written: a record written twice imports once.

export interface ExportCommand {
  kind: string;
  contract: string;
  chain: string;
  /** "" from the first record. */
  position: string;
  /** A file, or "-" for stdout. */
  out: string;
  /** A store to read (when no url). */
  db: string;
  /** A server to read from instead, with `key`. */
  url?: string | undefined;
  key?: string | undefined;
}

export interface ExportResult {
  records: number;
  /** Where a later export of what was written since starts. */
  position: string;
}

type NextChunk = (position: string) => Promise<ExportChunk>;

/** Chunks through the server's export endpoint: a refusal is its {code, message}, said as a command error. */
function fromServer(url: string, key: string, cmd: ExportCommand): NextChunk {
  const base = new URL(EXPORT_PATH.replace(":kind", cmd.kind), url.endsWith("/") ? url : `${url}/`);
  return async (position) => {
    const u = new URL(base);
    u.searchParams.set("contractAddress", cmd.contract);
    if (cmd.chain !== "") u.searchParams.set("chain", cmd.chain);
    if (position !== "") u.searchParams.set("position", position);
    let res: Response;
    try {
      res = await fetch(u, { headers: { [API_KEY_HEADER]: key } });
    } catch (err) {
      throw new CliError(`cannot reach ${u.origin}: ${(err as Error).message}`);
    }
    const text = await res.text();
    if (!res.ok) {
      let message = text;
      try {
        message = (JSON.parse(text) as { message?: string }).message ?? text;
      } catch {
        // Not the service's error form: said as it came.
      }
      throw new CliError(`${u.origin} refused the export (${res.status}): ${message}`);
    }
    return {
      lines: text === "" ? [] : text.slice(0, -1).split("\n"),
      position: res.headers.get(EXPORT_POSITION_HEADER) ?? "",
      done: res.headers.get(EXPORT_DONE_HEADER) === "true",
    };
  };
}

async function write(out: WriteStream | NodeJS.WriteStream, text: string): Promise<void> {
  if (!out.write(text)) await once(out, "drain");
}

export async function exportRecords(cmd: ExportCommand, onChunk?: (records: number, position: string) => void): Promise<ExportResult> {
  if (!isExportKind(cmd.kind)) throw new CliError(`KIND must be one of ${EXPORT_KINDS.join(", ")}, got ${JSON.stringify(cmd.kind)}`);
  if (cmd.url !== undefined && (cmd.key === undefined || cmd.key === "")) throw new CliError("--url needs --key (or MARKETDATA_API_KEY): the server's API key to read with");
  const store = cmd.url === undefined ? await openReadRepositories(cmd.db) : undefined;
  const out = cmd.out === "-" ? process.stdout : createWriteStream(cmd.out, { flags: cmd.position === "" ? "w" : "a" });
  try {
    const exporter = store === undefined ? undefined : new Exporter(store);
    const next: NextChunk =
      exporter === undefined
        ? fromServer(cmd.url!, cmd.key!, cmd)
        : (position) => exporter.chunk({ kind: cmd.kind as ExportKind, contractAddress: cmd.contract, chain: cmd.chain, position, limit: 0 });
    let position = cmd.position;
    let records = 0;
    for (;;) {
      const chunk = await next(position);
      if (chunk.lines.length > 0) await write(out, `${chunk.lines.join("\n")}\n`);
      records += chunk.lines.length;
      position = chunk.position;
      onChunk?.(records, position);
      if (chunk.done) return { records, position };
    }
  } catch (err) {
    // A refusal of the request (an unknown collection, a bad position) is the caller's: said as such.
    if (err instanceof ConnectError) throw new CliError(err.rawMessage);
    throw err;
  } finally {
    if (out !== process.stdout) {
      (out as WriteStream).end();
      await once(out, "close");
    }
    await store?.close();
  }
}

export async function runExport(cmd: ExportCommand): Promise<void> {
  const bar = progressBar(`export ${cmd.kind}`, 0);
  const started = performance.now();
  let last = cmd.position;
  try {
    const r = await exportRecords(cmd, (records, position) => {
      last = position;
      bar.update(records, records);
    });
    bar.stop();
    const seconds = (performance.now() - started) / 1000;
    process.stderr.write(
      `exported ${r.records} ${cmd.kind} record(s) of ${cmd.contract.toLowerCase()} in ${seconds.toFixed(1)} s; what is written after this goes on from --position ${r.position || '""'}\n`,
    );
  } catch (err) {
    bar.stop();
    if (last !== cmd.position) process.stderr.write(`stopped: go on with --position ${last} (the records read so far were written)\n`);
    throw err;
  }
}
