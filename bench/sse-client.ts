// A Server-Sent Events client over fetch streaming, for the live feeds
// bench and tests: the events as the text/event-stream format defines them
// (fields id, event, data, retry; comments skipped; an event with no data
// only moves the last event id, as an EventSource does, unless `positions`
// asks for such blocks too, as events "position" with no data).

export interface SseEvent {
  /** The last event id after this event (the resume token). */
  id: string;
  event: string;
  data: string;
}

export interface SseStream {
  status: number;
  /** The body of a response that is not a stream (an error before the stream starts). */
  errorBody?: Record<string, unknown>;
  /** The last event id seen, moved by id-only blocks too. */
  readonly lastEventId: string;
  /** The next event with data, or undefined when the stream ended; rejects after `timeoutMs`. */
  next(timeoutMs?: number): Promise<SseEvent | undefined>;
  close(): void;
}

export interface SseOptions {
  /** Also hand out the id-only blocks (the opening position, heartbeats) as events "position". */
  positions?: boolean;
}

export async function openSse(url: string, headers: Record<string, string> = {}, options: SseOptions = {}): Promise<SseStream> {
  const abort = new AbortController();
  const response = await fetch(url, { headers: { accept: "text/event-stream", ...headers }, signal: abort.signal });
  if (!(response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    const errorBody = (await response.json()) as Record<string, unknown>;
    return { status: response.status, errorBody, lastEventId: "", next: async () => undefined, close: () => abort.abort() };
  }
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let lastEventId = "";
  const ready: SseEvent[] = [];
  let ended = false;
  // A read still under way when a wait timed out: the next wait takes it over (its chunk is not lost).
  let pending: ReturnType<typeof reader.read> | undefined;

  const parse = () => {
    for (;;) {
      const end = buffer.indexOf("\n\n");
      if (end < 0) return;
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = "message";
      let hasId = false;
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "id") {
          lastEventId = value;
          hasId = true;
        }
        else if (field === "event") event = value;
        else if (field === "data") data.push(value);
      }
      if (data.length > 0) ready.push({ id: lastEventId, event, data: data.join("\n") });
      else if (hasId && options.positions === true) ready.push({ id: lastEventId, event: "position", data: "" });
    }
  };

  const stream: SseStream = {
    status: response.status,
    get lastEventId() {
      return lastEventId;
    },
    async next(timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (ready.length === 0 && !ended) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`no event within ${timeoutMs} ms`);
        let timer: NodeJS.Timeout | undefined;
        pending ??= reader.read();
        const chunk = await Promise.race([
          pending,
          new Promise<"timeout">((resolve) => {
            timer = setTimeout(() => resolve("timeout"), left);
          }),
        ]);
        clearTimeout(timer);
        if (chunk === "timeout") throw new Error(`no event within ${timeoutMs} ms`);
        pending = undefined;
        if (chunk.done) ended = true;
        else {
          buffer += chunk.value;
          parse();
        }
      }
      return ready.shift();
    },
    close() {
      abort.abort();
      reader.cancel().catch(() => {});
    },
  };
  return stream;
}
