import type { Message } from "@bufbuild/protobuf";
import { codeToHttpStatus, codeToString } from "@connectrpc/connect/protocol-connect";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { RETRY_MS, SSE_KEY_PARAM } from "../../service/feed-limits.js";
import { RESUME_TOKEN_HEADER } from "../../service/watch.js";
import type { ClientAddresses } from "../policy/client-address.js";
import { apiKeyFrom, errorHeaders } from "../policy/guards.js";
import { compileStream, type StreamCodec, type StreamDeps } from "../stream/pipeline.js";
import { type SseRoute, sseRoutes } from "./http-rules.js";
import { compileJsonWriter } from "../../domain/wire/json-writer.js";
import { compileQueryParser, type QueryObject } from "./query.js";

// The server-streaming methods with a GET rule (the live feeds) as
// Server-Sent Events, through the stream pipeline (stream/pipeline.ts) with
// this codec: the query parsed as the list endpoints' are (Last-Event-ID,
// when sent, as the cursor), each message an event whose data is its record
// in the /v1 JSON dialect and whose id is its resume token (a record a
// reorganisation took back: an event named "removed", whose data is the
// Removal, which an EventSource's onmessage does not fire for). The opening
// message and each heartbeat carry no record: an id with no data, which
// moves an EventSource's Last-Event-ID without firing an event, behind a
// comment. Before the stream starts, errors are the family's JSON error with
// the code's status; after, an event "end" carries {code, message, cursor}
// and the response ends.

/** Observes what a route serves outside Fastify's reply (a hijacked one: the live feeds' SSE), from when it starts (entry.ts observeRoutes). */
export type HijackedObserver = (request: FastifyRequest, reply: FastifyReply) => void;

export interface SseDeps extends StreamDeps {
  addresses: ClientAddresses;
  /** The request's log line and metrics, when the stream closes (entry.ts observeRoutes: Fastify no longer sees the response). */
  observe: HijackedObserver;
}

/** The error body of the feeds' family (sales and listings answer `success`). */
const FLAG = "success";

interface SseInput {
  query: QueryObject;
  lastEventId: string | undefined;
}

function sseCodec({ method }: SseRoute): StreamCodec<SseInput> {
  const parse = compileQueryParser(method.input);
  // The first message field is the record (the default event); any other (a removal) is an event of its field's name.
  const [recordField, ...named] = method.output.fields.filter((f) => f.fieldKind === "message");
  const tokenField = method.output.fields.find((f) => f.fieldKind === "scalar");
  if (recordField?.message === undefined || tokenField === undefined) throw new Error(`${method.name}: a feed message holds a record and a resume token`);
  const writers = [recordField, ...named].map((f) => ({ name: f.localName, event: f === recordField ? "" : `event: ${f.jsonName}\n`, write: compileJsonWriter(f.message!) }));
  return {
    decode: ({ query, lastEventId }) => parse(lastEventId === undefined ? query : { ...query, cursor: lastEventId }),
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      // Proxies that buffer responses (nginx) would hold events back.
      "x-accel-buffering": "no",
    },
    message(m, first) {
      const fields = m as unknown as Record<string, unknown>;
      const token = fields[tokenField.localName] as string;
      const set = writers.find((w) => fields[w.name] !== undefined);
      const event = set === undefined ? `: position\nid: ${token}\n\n` : `${set.event}id: ${token}\ndata: ${set.write(fields[set.name] as Message)}\n\n`;
      return first ? `retry: ${RETRY_MS}\n${event}` : event;
    },
    finish(res, error) {
      if (error === undefined) {
        res.end();
        return;
      }
      const cursor = error.metadata.get(RESUME_TOKEN_HEADER) ?? "";
      res.end(`event: end\ndata: ${JSON.stringify({ code: codeToString(error.code), message: error.rawMessage, cursor })}\n\n`);
    },
    fail(res, error, headers) {
      const body = JSON.stringify({ [FLAG]: 0, code: codeToString(error.code), message: error.rawMessage });
      res.writeHead(codeToHttpStatus(error.code), { ...headers, ...errorHeaders(error), "content-type": "application/json; charset=utf-8", "cache-control": "no-store" });
      res.end(body);
    },
  };
}

export function registerSseRoutes(app: FastifyInstance, deps: SseDeps): void {
  for (const route of sseRoutes(deps.services.services)) {
    const run = compileStream(deps, route.method, sseCodec(route));
    app.get(route.path, async (request, reply) => {
      // From here the response is the pipeline's own: Fastify does not send it.
      reply.hijack();
      deps.observe(request, reply);
      const { [SSE_KEY_PARAM]: keyParam, ...query } = request.query as QueryObject;
      const lastEventId = request.headers["last-event-id"];
      await run({
        req: request.raw,
        res: reply.raw,
        apiKey: apiKeyFrom(request.headers) ?? (typeof keyParam === "string" ? keyParam : undefined),
        bucket: deps.addresses.bucketOf(request.raw),
        log: request.log,
        input: () => ({ query, lastEventId: typeof lastEventId === "string" && lastEventId !== "" ? lastEventId : undefined }),
      });
    });
  }
}
