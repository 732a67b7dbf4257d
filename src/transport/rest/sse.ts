import type { Message } from "@bufbuild/protobuf";
import { ConnectError, createContextValues, createHandlerContext } from "@connectrpc/connect";
import { codeToHttpStatus, codeToString } from "@connectrpc/connect/protocol-connect";
import type { FastifyInstance, FastifyReply } from "fastify";
import { RETRY_MS } from "../../service/feed-limits.js";
import type { ServiceSet } from "../../service/services.js";
import { RESUME_TOKEN_HEADER, streamCaller } from "../../service/watch.js";
import { type Admission, type Admitted, rateLimitHeaders } from "../policy/admission.js";
import type { ClientAddresses } from "../policy/client-address.js";
import { apiKeyFrom, type ErrorLogger, publicError } from "../policy/guards.js";
import { sseRoutes } from "./http-rules.js";
import { compileJsonWriter } from "./json-writer.js";
import { compileQueryParser, type QueryObject } from "./query.js";

// The server-streaming methods with a GET rule (the live feeds) as
// Server-Sent Events: the query parsed as the list endpoints' are, the
// service's stream called in-process, each message written as an event
// whose data is its record in the /v1 JSON dialect and whose id is its
// resume token. The first message (a position only) and each heartbeat are
// an id with no data, which moves an EventSource's Last-Event-ID without
// firing an event, behind a comment. Before the stream starts, errors are
// the family's JSON error with the code's status; after, an event "end"
// carries {code, message, cursor} and the response ends.

export interface SseDeps {
  services: ServiceSet;
  admission: Admission;
  addresses: ClientAddresses;
  log: ErrorLogger;
  /** How long a write may wait for the client to read before the peer is taken as dead (the idle timeout). */
  stallMs: number;
}

/**
 * The API key of an SSE request: the x-api-key header, or an `apiKey`
 * query parameter, since a browser's EventSource cannot send headers
 * (request logs redact it: transport/entry.ts).
 */
export const SSE_KEY_PARAM = "apiKey";

/** The error body of the feeds' family (sales and listings answer `success`). */
const FLAG = "success";

const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-store",
  // Proxies that buffer responses (nginx) would hold events back.
  "x-accel-buffering": "no",
};

export function registerSseRoutes(app: FastifyInstance, deps: SseDeps): void {
  for (const { method, path } of sseRoutes(deps.services.services)) {
    const parse = compileQueryParser(method.input);
    const recordField = method.output.fields.find((f) => f.fieldKind === "message");
    const tokenField = method.output.fields.find((f) => f.fieldKind === "scalar");
    if (recordField?.message === undefined || tokenField === undefined) throw new Error(`${method.name}: a feed message holds a record and a resume token`);
    const writeRecord = compileJsonWriter(recordField.message);
    const impl = deps.services.serverStream(method);
    const procedure = `/${method.parent.typeName}/${method.name}`;

    app.get(path, async (request, reply) => {
      const { [SSE_KEY_PARAM]: keyParam, ...query } = request.query as QueryObject;
      const apiKey = apiKeyFrom(request.headers) ?? (typeof keyParam === "string" ? keyParam : undefined);
      let admitted: Admitted;
      try {
        admitted = await deps.admission.admit(apiKey, deps.addresses.bucketOf(request.raw));
      } catch (err) {
        return fail(reply, publicError(err, request.log, procedure));
      }
      if (admitted.rate !== undefined) reply.headers(rateLimitHeaders(admitted.rate));
      if (admitted.error !== undefined) return fail(reply, admitted.error);

      const abort = new AbortController();
      const stop = () => abort.abort();
      request.raw.once("close", stop);
      let stream: AsyncIterator<Message>;
      let first: IteratorResult<Message>;
      try {
        const lastEventId = request.headers["last-event-id"];
        const input = parse(typeof lastEventId === "string" && lastEventId !== "" ? { ...query, cursor: lastEventId } : query);
        const context = createHandlerContext({
          service: method.parent,
          method,
          protocolName: "sse",
          requestMethod: "GET",
          url: request.url,
          requestSignal: abort.signal,
          contextValues: createContextValues().set(streamCaller, admitted.grant?.id),
        });
        stream = impl(input, context)[Symbol.asyncIterator]();
        first = await stream.next();
      } catch (err) {
        request.raw.off("close", stop);
        return fail(reply, publicError(err, request.log, procedure));
      }

      // From here the response is this route's own: Fastify does not send it.
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, { ...SSE_HEADERS, ...(reply.getHeaders() as Record<string, string>) });
      const out = new EventWriter(res, deps.stallMs, stop);
      const event = (m: Message): string => {
        const record = (m as unknown as Record<string, unknown>)[recordField.localName] as Message | undefined;
        const token = (m as unknown as Record<string, unknown>)[tokenField.localName] as string;
        return record === undefined ? `: position\nid: ${token}\n\n` : `id: ${token}\ndata: ${writeRecord(record)}\n\n`;
      };
      try {
        if (!first.done) await out.write(`retry: ${RETRY_MS}\n${event(first.value)}`);
        for (;;) {
          const next = await stream.next();
          if (next.done === true) break;
          await out.write(event(next.value));
        }
      } catch (err) {
        if (!abort.signal.aborted) {
          const error = publicError(err, request.log, procedure);
          const cursor = err instanceof ConnectError ? (err.metadata.get(RESUME_TOKEN_HEADER) ?? "") : "";
          await out.write(`event: end\ndata: ${JSON.stringify({ code: codeToString(error.code), message: error.rawMessage, cursor })}\n\n`).catch(() => {});
        }
      } finally {
        request.raw.off("close", stop);
        abort.abort();
        await stream.return?.().catch(() => {});
        res.end();
      }
    });
  }
}

/** The family's JSON error, before any event was sent. */
function fail(reply: FastifyReply, error: ConnectError): FastifyReply {
  return reply
    .status(codeToHttpStatus(error.code))
    .type("application/json; charset=utf-8")
    .header("cache-control", "no-store")
    .send({ [FLAG]: 0, code: codeToString(error.code), message: error.rawMessage });
}

/**
 * Writes events with backpressure: a write the client has not taken within
 * `stallMs` (a dead peer, or one that stopped reading) ends the connection.
 */
class EventWriter {
  constructor(
    private readonly res: FastifyReply["raw"],
    private readonly stallMs: number,
    private readonly onStall: () => void,
  ) {}

  async write(text: string): Promise<void> {
    if (this.res.destroyed) throw new Error("closed");
    if (this.res.write(text)) return;
    await new Promise<void>((resolve, reject) => {
      const done = (err?: Error) => {
        clearTimeout(timer);
        this.res.off("drain", onDrain);
        this.res.off("close", onClose);
        if (err === undefined) resolve();
        else reject(err);
      };
      const onDrain = () => done();
      const onClose = () => done(new Error("closed"));
      const timer = setTimeout(() => {
        this.onStall();
        this.res.destroy();
        done(new Error("stalled"));
      }, this.stallMs);
      this.res.on("drain", onDrain);
      this.res.on("close", onClose);
    });
  }
}
